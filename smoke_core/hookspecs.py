"""Every hook a Smoke plugin can implement — the reference for plugin authors.

Implement a hook with ``@smoke_core.hookimpl`` on a function of the same name
in a module or class that is registered as a plugin (an entry point in the
group ``smoke``, or ``create_agent(plugins=[...])``). An implementation may
accept any subset of the hook's parameters, by name, and may be ``async def``.

Lifecycle hooks run in pluggy order (last registered first; ``tryfirst`` /
``trylast`` adjust it). The *before* hooks chain: what one returns is what the
next one sees, and the first block ends the chain. *Before* hooks fail
closed, *after* hooks fail open. docs/hooks.md is checked against this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base.markers import hookspec
from .hooks.session_hookspecs import (
    before_compaction,
    before_permission_prompt,
    before_prompt,
    before_run_end,
    session_end,
    session_start,
)
from .hooks.views import AgentView, CommandGroup, RunView

if TYPE_CHECKING:
    from collections.abc import Callable

    from .base.errors import AgentErrorInfo
    from .base.messages import Message
    from .policy.options import AgentOptions
    from .tools.definitions import ToolDefinition, ToolResult

#: the hooks in reading order (docs/hooks.md follows it), then the protocols hooks receive
__all__ = [  # noqa: RUF022
    "register_tools", "register_providers", "register_commands", "register_settings", "register_slash_commands",
    "session_start", "before_prompt", "before_run", "before_run_end", "after_run", "session_end", "close_agent",
    "before_compaction", "before_model_call", "after_model_call",
    "before_tool_call", "before_permission_prompt", "after_tool_call",
    "AgentView", "CommandGroup", "RunView",
]


# ---------------------------------------------------------------- registration


@hookspec
def register_tools(register: Callable[..., ToolDefinition], options: AgentOptions) -> None:
    """Contribute tools. Called once per agent, inside ``create_agent``.

    :param register: ``register(tool, *, group=None)`` adds a
        :class:`~smoke_core.plugin.ToolDefinition` (``group`` overrides the
        tool's own group). Registering a name twice raises an error naming
        both plugins.
    :param options: the agent's :class:`~smoke_core.plugin.AgentOptions`
        (workspace, permission mode, and ``options.extra`` holding keyword
        arguments of ``create_agent`` that core does not use itself, such as
        ``mcp_servers`` or ``skills_dir``).
    :return: ignored.
    :raises: a raise here aborts ``create_agent`` with the plugin named —
        a broken tool set must not start silently.

    Example::

        @hookimpl
        def register_tools(register, options):
            from smoke_core import tool

            @tool(read_only=True, presentation={"label": "Word count", "icon": "🔢"})
            def word_count(text: str) -> str:
                "Count the words in text."
                return str(len(text.split()))

            register(word_count, group="text")
    """


@hookspec
def register_providers(register: Callable[..., None]) -> None:
    """Contribute model providers. Called once per plugin manager.

    :param register: ``register(name, factory, *, env_var=None,
        description="", default_model=None)``. ``factory(**kwargs)`` gets
        ``model``, ``api_key``, ``base_url``, ``user_id`` and any extra
        provider settings, and returns an object with ``name``, ``model`` and
        ``stream(request)`` (see :class:`~smoke_core.providers.Provider`).
    :return: ignored.
    :raises: the plugin is reported as broken in ``smoke plugins`` and its
        providers are absent; other plugins are unaffected.

    Example::

        @hookimpl
        def register_providers(register):
            def factory(model=None, api_key=None, **kw):
                from my_package.client import MyProvider  # heavy imports here
                return MyProvider(model=model, api_key=api_key)

            register("mine", factory, env_var="MINE_API_KEY", default_model="mine-1")
    """


@hookspec
def register_commands(cli: CommandGroup) -> None:
    """Add sub-commands to the ``smoke`` CLI (``cli.command()`` / ``cli.add_command``).

    Called when the CLI starts. Keep it cheap: import heavy libraries inside
    the command function, not here.

    :param cli: the root :class:`click.Group`.
    :return: ignored.
    :raises: the plugin's commands are skipped and it is reported as broken
        in ``smoke plugins``.

    Example::

        @hookimpl
        def register_commands(cli):
            import click

            @cli.command("hello")
            def hello():
                "Say hello."
                click.echo("hello")
    """


@hookspec
def register_settings(register: Callable[..., None]) -> None:
    """Declare settings keys this plugin reads. Called once per plugin
    manager, when an agent is created or settings are resolved.

    A declared key may appear in every settings file and as a
    ``create_agent`` keyword argument; its value is validated with pydantic
    (``TypeAdapter(type)``) before any plugin sees it, and reaches plugins as
    ``options.get(key)`` (``options.get("settings_origin")[key]`` says where it
    came from: a file path, ``"create_agent"``, ``"flag"`` or ``"default"``).
    An undeclared key is an error with a "did you mean" suggestion.

    :param register: ``register(key, type, *, default=None, trusted_only=True,
        description="", code_only=False)``. ``type`` is anything pydantic's
        ``TypeAdapter`` validates (``str``, ``list[str]``, a ``BaseModel``...).
        ``trusted_only=True`` (the default) means the project and local files
        of a folder the person has not trusted may not set the key (anything
        that starts a process, names an endpoint or loosens policy must keep
        it); ``False`` is for keys that cannot hurt. ``code_only=True``: only
        ``create_agent``'s value is passed on (the plugin reads the settings
        files itself, e.g. to keep where each entry came from). Keys must be
        snake_case and must not shadow core settings or ``create_agent``
        arguments.
    :return: ignored.
    :raises: a raise here (or a key declared twice, or a reserved key) stops
        ``create_agent`` with a :class:`~smoke_core.settings.SettingsError`
        naming the plugin.

    Example::

        @hookimpl
        def register_settings(register):
            register("reviewers", list[str], default=[], trusted_only=False,
                     description="people to mention in review comments")

        @hookimpl
        def register_tools(register, options):
            reviewers = options.get("reviewers")   # already a list of strings
    """


@hookspec
def register_slash_commands(register: Callable[..., None], agent: AgentView) -> None:
    """Add slash commands to interactive chats (``smoke chat``): ``/name args``
    typed by the person runs the command instead of going to the model.

    Called when a chat starts, again after each turn and after ``/clear`` or
    ``/model`` (the chat then has a new agent), so a plugin may offer
    commands that follow what the agent has *now* — e.g. one per prompt of
    the MCP servers started during the last run, or one per skill. Keep it
    cheap; do slow work in the handler.

    :param register: ``register(name, handler, *, description="",
        usage="")``. ``name`` is the command without its slash (letters,
        digits, ``_ - . :``; ``"mcp__github__review"`` is typed
        ``/mcp__github__review``). The names of core's own commands
        (``help``, ``clear``, ``compact``, ``model``, ``tools``, ``cost``,
        ``exit``, ``quit``) are kept by core; a name another plugin already
        registered is not replaced. Both are reported to the person when the
        chat starts, never silently dropped. ``handler(args, chat)`` gets the
        text after the name and the chat (:class:`~smoke_core.plugin.ChatHost`:
        ``chat.agent``, ``chat.session_id``, ``chat.say(text)`` to show text
        to the person, ``chat.usage``, ``chat.commands``); it may be
        ``async``. It returns ``None`` (done), or text — or a list of text
        and :class:`~smoke_core.Image` parts — sent to the model as the
        person's next message.
    :param agent: the chat's current :class:`~smoke_core.Agent`.
    :return: ignored.
    :raises: the plugin's commands are skipped and the chat says so; the
        other plugins' commands and the chat are unaffected. A command whose
        handler raises prints the error; the chat goes on.

    Example::

        @hookimpl
        def register_slash_commands(register, agent):
            def review(args, chat):
                target = args.strip() or "the uncommitted changes"
                return f"Review {target} for bugs; list each with file and line."

            register("review", review, description="ask for a code review", usage="/review [what]")
    """


# ---------------------------------------------------------------- run lifecycle


@hookspec
def before_run(run: RunView) -> None:
    """Called when a run starts, after ``run.started`` and before the tool
    list of the run is fixed and the model is first called.

    A plugin may ask for approval (``await run.request_permission(...)``;
    with ``person=True`` only a person's answer allows, never ``--yes`` or
    ``allow-all``), warn (``run.warn(...)``) and register tools
    (``run.register_tool(...)``) here; tools registered now are part of this
    run (the MCP plugin starts its servers this way). During the run a
    plugin may also ask the person (``await run.ask_user(question,
    options=..., form=...)``: the ``ask_user.required`` pause) and call the
    run's model outside its conversation (``await run.sample(messages)``:
    through ``before_model_call``, counted in the run's usage). Implementations
    run concurrently-safe but in order.

    :param run: the :class:`~smoke_core.plugin.RunHandle` of this run.
    :return: ignored.
    :raises: fail-open — reported as a ``run.warning`` (``hook_failed``),
        the run goes on.

    Example::

        @hookimpl
        async def before_run(run):
            if await run.request_permission(kind="service", name="db", reason="open the database"):
                run.register_tool(make_query_tool())
            else:
                run.warn("database tools are off for this run")
    """


@hookspec
def after_run(run: RunView, status: str, error: AgentErrorInfo | None) -> None:
    """Called once when a run ends, on every path (completed, failed, interrupted).

    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :param status: ``"completed"``, ``"failed"`` or ``"interrupted"``.
    :param error: the run's error, or None.
    :return: ignored.
    :raises: fail-open — logged and ignored.

    Example::

        @hookimpl
        def after_run(run, status, error):
            metrics.record(run.run_id, status, run.usage.total_tokens)
    """


@hookspec
def close_agent(agent: AgentView) -> None:
    """Called by ``await agent.aclose()`` so plugins release what they hold
    (MCP sessions, background processes).

    :param agent: the :class:`~smoke_core.Agent` being closed.
    :return: ignored.
    :raises: fail-open — logged and ignored.

    Example::

        @hookimpl
        async def close_agent(agent):
            await my_connections.pop(agent).aclose()
    """


# ---------------------------------------------------------------- model calls


@hookspec
def before_model_call(
    messages: list[Message],
    tools: list[dict[str, Any]],
    system: str | None,
    model: str,
    step: int,
    run: RunView,
) -> dict[str, Any] | None:
    """Called before every model call, after compaction and tool resolution.

    :param messages: the neutral history about to be sent (a copy; rewriting
        it does not change the stored session).
    :param tools: tool schemas as the provider will get them
        (``name``, ``description``, ``input_schema``; no presentation).
    :param system: the system prompt for this call.
    :param model: the model name.
    :param step: the 1-based step number.
    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :return: None to pass; ``{"messages": [...]}``, ``{"tools": [...]}``
        and/or ``{"system": "..."}`` to rewrite the request (the next
        implementation sees the rewrite); ``{"block": True, "reason": "..."}``
        to abort the run with ``hook_blocked``.
    :raises: fail-closed — the run fails with ``hook_blocked`` naming the plugin.

    Example::

        @hookimpl
        def before_model_call(messages):
            return {"messages": [m for m in messages if not is_noise(m)]}
    """


@hookspec
def after_model_call(
    response: dict[str, Any] | None,
    usage: dict[str, int | float | None],
    duration_ms: float,
    error: AgentErrorInfo | None,
    step: int,
    run: RunView,
    finish_reason: str | None,
    response_model: str | None,
    response_id: str | None,
) -> None:
    """Called after every model call attempt (also a failed one).

    :param response: the assistant message (neutral form) or None on error.
    :param usage: token usage of this call (``cost_usd`` when the price is known).
    :param duration_ms: wall time of the call.
    :param error: the classified error, or None.
    :param finish_reason: why the model stopped (``stop``, ``tool_calls``,
        ``length``, ...), or None on error.
    :param response_model: the model that answered, as the provider names it
        (it may differ from the one asked), when the provider says.
    :param response_id: the provider's id of the response, when it gives one.
    :return: ignored (observe only).
    :raises: fail-open — logged and ignored.

    Example::

        @hookimpl
        def after_model_call(usage, duration_ms, error):
            log.info("model call: %s tokens in %.0f ms (%s)", usage["total_tokens"], duration_ms,
                     error.code if error else "ok")
    """


# ---------------------------------------------------------------- tool calls


@hookspec
def before_tool_call(
    tool_name: str,
    input: dict[str, Any],
    tool_call_id: str,
    run: RunView,
) -> dict[str, Any] | None:
    """Called before every tool call, after input validation and **before the
    permission gate** (a refused call never prompts a person).

    :param tool_name: the tool called.
    :param input: the validated arguments (as rewritten by earlier hooks).
    :param tool_call_id: the model's id for this call.
    :return: None to pass; ``{"input": {...}}`` to rewrite the arguments
        (re-validated against the schema; a person asked next sees the
        rewritten input and who rewrote it); ``{"block": True, "reason":
        "..."}`` to refuse the call: the model gets a tool error with the
        reason and ``after_tool_call`` sees ``blocked=True``.
        ``{"permission": "allow" | "ask" | "deny", "reason": "..."}`` answers
        the permission question for the gate: ``"deny"`` is a block;
        ``"ask"`` makes the call ask a person even where a rule or the mode
        would allow it (``--yes`` does not answer it; a deny still denies);
        ``"allow"`` answers only an *ask of the mode* — it never passes a
        deny or ask rule, a managed rule, a secret-looking path or a guarded
        control file, which still deny or ask. Of several hooks' answers
        the strictest holds (deny > ask > allow); ``input`` and
        ``permission`` may come together.
    :raises: fail-closed — the call is blocked and the error text goes to the model.

    Example::

        @hookimpl
        def before_tool_call(tool_name, input):
            if tool_name == "write_file" and input["path"].endswith(".env"):
                return {"block": True, "reason": "writing .env files is not allowed"}
            if tool_name == "run_command" and input["command"].startswith("pytest"):
                return {"permission": "allow", "reason": "tests may always run"}
    """


@hookspec
def after_tool_call(
    tool_name: str,
    input: dict[str, Any],
    tool_call_id: str,
    result: ToolResult,
    duration_ms: float,
    blocked: bool,
    error: AgentErrorInfo | None,
    run: RunView,
) -> None:
    """Called exactly once per tool call, on every path: success, tool error,
    invalid input, unknown tool, hook block, permission denial, abort.

    :param result: the :class:`~smoke_core.plugin.ToolResult` the model gets.
    :param duration_ms: time from the start of the call to its end.
    :param blocked: True when a ``before_tool_call`` hook refused the call.
    :param error: the classified error (``tool_blocked``, ``permission_denied``,
        ``tool_failed``, ...), or None on success.
    :return: None, or ``{"context": "text"}``: the text is added to what the
        model gets from this call (a text block after the result; the
        ``tool.completed`` event shows it too). Every implementation runs;
        their texts are added in order.
    :raises: fail-open — logged and ignored (a return of another shape too).

    Example::

        @hookimpl
        def after_tool_call(tool_name, blocked, error, duration_ms):
            audit.write(tool_name, blocked=blocked, error=error and error.code, ms=duration_ms)
            if tool_name == "write_file" and not error:
                return {"context": "Remember to run the formatter before you finish."}
    """
