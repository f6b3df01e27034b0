"""``create_agent`` and ``Agent``: the public entry point of the library."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from ._event_bus import EventBus, Listener
from ._hooks import AsyncRegistration, HookRunner
from ._images import TaskPart, task_content
from ._output import OutputSpec
from ._pauses import PauseBroker
from .compaction import Compactor
from .errors import AgentError
from .events import Event
from .messages import Message
from .options import AgentOptions, Guards
from .permissions import ANSWERS, PermissionGate, PermissionRule
from .plugins import SmokePluginManager, collect_providers, create_plugin_manager
from .prompts import DEFAULT_SYSTEM_PROMPT
from .providers import ApiKey, Provider, ProviderRegistry, RetryPolicy
from .run import RunDeps, RunHandle, RunResult
from .sandbox import SandboxSettings
from .secrets import Redactor
from .store import MemoryStore, Store
from .tools import TOOL_GROUPS, ToolDefinition, ToolRegistry
from .workspace import Workspace

log = logging.getLogger("smoke")


class Agent:
    """An agent bound to a workspace, a provider and a tool set. Create it with
    :func:`create_agent`. One run at a time per agent."""

    def __init__(
        self,
        *,
        options: AgentOptions,
        pm: SmokePluginManager,
        registry: ToolRegistry,
        providers: ProviderRegistry,
        provider: Provider,
        groups: set[str] | None,
        extra_tools: list[str],
        system_prompt: str | None,
        store: Store,
        retry: RetryPolicy,
        guards: Guards,
        compactor: Compactor,
        model_settings: dict[str, Any],
        max_tool_output_chars: int,
        gate: PermissionGate | None = None,
        settings: Any = None,
    ) -> None:
        self.options = options
        self.workspace = options.workspace
        self._pm = pm
        self._registry = registry
        self.providers = providers
        self.provider = provider
        self._groups = groups
        self._extra_tools = extra_tools
        self.system_prompt = system_prompt
        self.store = store
        self.retry = retry
        self.guards = guards
        self._compactor = compactor
        self.model_settings = model_settings
        self.max_tool_output_chars = max_tool_output_chars
        self.session_id = options.session_id
        self._gate = gate if gate is not None else PermissionGate(
            options.permission, auto_approve=options.auto_approve, workspace=options.workspace.root,
            tools=registry.get,
        )
        #: the effective settings, where each came from, the rules and warnings
        #: (a :class:`~smoke_core.settings.ResolvedSettings`; None when built by hand)
        self.settings = settings
        self._bus = EventBus()
        self._pauses = PauseBroker()
        self._current: RunHandle | None = None

    # ------------------------------------------------------------ tools

    @property
    def plugin_manager(self) -> SmokePluginManager:
        return self._pm

    @property
    def registry(self) -> ToolRegistry:
        """Every tool registered for this agent (exposed or not), with its source."""
        return self._registry

    @property
    def tools(self) -> dict[str, ToolDefinition]:
        """The tools the next run will expose, by name."""
        return self._exposed_tools()

    def _exposed_tools(self) -> dict[str, ToolDefinition]:
        out: dict[str, ToolDefinition] = {}
        for t in self._registry:
            if self._groups is None or t.name in self._extra_tools or (t.group in self._groups):
                out[t.name] = t
        return out

    def register_tool(self, tool: ToolDefinition, *, group: str | None = None, replace: bool = False) -> None:
        """Add a tool. A run already in progress does not see it (tools are fixed when a run starts)."""
        tool = self._registry.register(tool, group=group, source="agent.register_tool", replace=replace)
        if self._groups is not None:
            self._extra_tools.append(tool.name)

    def get_tool_presentations(self) -> dict[str, dict[str, Any]]:
        """``{tool_name: {label, icon, tone, group}}`` for UIs (never sent to providers)."""
        return {t.name: t.presentation_dict() for t in self._exposed_tools().values()}

    def tool_source(self, name: str) -> str | None:
        return self._registry.source(name)

    # ------------------------------------------------------------ events

    def on(self, type: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event of ``type``; returns an unsubscribe function."""
        return self._bus.on(type, fn)

    def on_any(self, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event; returns an unsubscribe function."""
        return self._bus.on_any(fn)

    # ------------------------------------------------------------ runs

    async def run(
        self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2
    ) -> RunResult:
        """Run ``task`` to the end and return the :class:`RunResult`.

        ``task`` is text, or a list of text and :class:`~smoke_core.Image`
        parts (``["What is wrong here?", Image.from_path("shot.png")]``); a
        provider that cannot take images refuses them before any call.

        ``output_type`` (a pydantic model, dataclass, TypedDict or simple
        type) asks for a typed result: the run ends when the model calls the
        ``final_result`` tool with arguments that validate, and
        ``RunResult.output`` holds the validated value; after
        ``output_retries`` invalid attempts the run fails with ``output_invalid``.
        """
        if self._current is not None:
            raise RuntimeError("this agent is already running; wait for the run to end or create another agent")
        content, text = task_content(task)
        if any(b["type"] == "image" for b in content) and getattr(self.provider, "supports_images", True) is False:
            name = getattr(self.provider, "name", type(self.provider).__name__)
            raise ValueError(
                f"provider {name} (model {getattr(self.provider, 'model', '?')}) does not take images; "
                f"use a model that does, or leave the images out"
            )
        output = OutputSpec(output_type, retries=output_retries) if output_type is not None else None
        handle = RunHandle(self, text, self._run_deps(), output=output, content=content)
        self._current = handle
        try:
            return await handle.start()
        finally:
            if self._current is handle:
                self._current = None
            self._pauses.forget_early()
            self._gate.allowed_for_run.clear()

    def _run_deps(self) -> RunDeps:
        return RunDeps(
            options=self.options,
            provider=self.provider,
            hooks=HookRunner(self._pm),
            gate=self._gate,
            bus=self._bus,
            pauses=self._pauses,
            registry=self._registry,
            exposed_tools=self._exposed_tools,
            load_history=self._load_history,
            store_append=self._store_append,
            compactor=self._compactor,
            retry=self.retry,
            guards=self.guards,
            system_prompt=self.system_prompt,
            model_settings=self.model_settings,
            max_tool_output_chars=self.max_tool_output_chars,
            redactor=Redactor.from_environment(),
        )

    def run_sync(self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2) -> RunResult:
        """``asyncio.run(agent.run(task))`` for scripts."""
        return asyncio.run(self.run(task, output_type=output_type, output_retries=output_retries))

    async def stream(self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2) -> AsyncIterator[Event]:
        """Run ``task`` and yield its events as they happen. Leaving the loop early aborts the run."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        off = self.on_any(queue.put_nowait)
        runner = asyncio.ensure_future(self.run(task, output_type=output_type, output_retries=output_retries))
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, runner}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    event = getter.result()
                    yield event
                    if event.type in ("run.completed", "run.failed", "run.interrupted"):
                        break
                else:
                    getter.cancel()
                    while not queue.empty():
                        yield queue.get_nowait()
                    break
            await runner
        finally:
            off()
            if not runner.done():
                self.abort()
                try:
                    await runner
                except asyncio.CancelledError:
                    pass

    def abort(self) -> None:
        """Stop the current run now (safe from any thread): the model stream is
        closed, running tools are cancelled (commands killed), pauses end; the
        run ends ``interrupted``."""
        handle = self._current
        if handle is not None:
            handle.abort()

    def resolve_permission(self, tool_call_id: str, decision: str, *, remember: str | None = None) -> PermissionRule | None:
        """Answer a ``permission.required``: ``"allow"``, ``"allow_run"`` (this tool or
        MCP server for the rest of the run), ``"allow_always"`` or ``"deny"``.

        ``"allow_always"`` allows the call and writes an allow rule for exactly
        this tool and argument (:func:`~smoke_core.permissions.rule_for`) to
        ``.smoke/config.local.yaml`` (``remember="local"``, the default) or the
        user settings (``remember="user"``; paths are then absolute), and adds
        it to this agent's gate, so this and later runs do not ask again. An
        answer given before the pause is registered is kept and used when it
        comes (``allow_always`` needs the pause: answer it after
        ``permission.required``). Returns the rule written for
        ``allow_always``, else None."""
        if decision not in ANSWERS:
            raise ValueError(f"decision must be one of {', '.join(ANSWERS)}, got {decision!r}")
        if remember is not None and (decision != "allow_always" or remember not in ("local", "user")):
            raise ValueError(
                f"remember= goes with decision='allow_always' and is 'local' or 'user', got remember={remember!r} "
                f"with decision={decision!r}"
            )
        gate = self._gate
        if decision == "allow_always":
            from .permissions import remember_rule

            request = gate.pending.get(tool_call_id)
            if request is None:
                raise ValueError(
                    f"no pending permission request {tool_call_id!r}: allow_always needs the request "
                    f"(answer after permission.required)"
                )
            if request.kind != "tool":
                raise ValueError(
                    f"allow_always applies to tool calls; {request.kind} {request.tool_name!r} can be allowed "
                    f"with 'allow' or 'allow_run'"
                )
            scope = remember or "local"
            rule = gate.rule_for(request, absolute=scope == "user")
            path = remember_rule(self.workspace.root, rule, scope=scope)  # type: ignore[arg-type]
            added = gate.add_rule(rule, "allow", origin=str(path))
            gate.take_pending(tool_call_id)
            self._pauses.answer(tool_call_id, "allow_always")  # the rule is in place: this call goes ahead
            return added
        gate.take_pending(tool_call_id)
        self._pauses.answer(tool_call_id, decision)
        return None

    def respond(self, tool_call_id: str, text: str) -> None:
        """Answer an ``ask_user.required`` with ``text``."""
        self._pauses.answer(tool_call_id, str(text))

    # ------------------------------------------------------------ sessions

    def _load_history(self) -> list[Message]:
        if self.session_id is None:
            return []
        return repair_history(list(self.store.load(self.session_id)))

    def _store_append(self, message: Message) -> None:
        if self.session_id is not None:
            self.store.append(self.session_id, message)

    async def aclose(self) -> None:
        """Release what plugins hold (``close_agent`` hook). Safe to call twice."""

        def failed(plugin: str, message: str, exc: BaseException) -> None:
            log.warning("smoke: %s (ignored)", message)

        await HookRunner(self._pm).observe("close_agent", {"agent": self}, failed)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


# ---------------------------------------------------------------- factory

#: ``create_agent``'s own keyword arguments (plugin keys come on top, from ``register_settings``).
_CREATE_AGENT_ARGS = (
    "provider", "model", "api_key", "base_url", "tools", "hooks", "plugins", "permission", "auto_approve",
    "permissions", "system_prompt", "instructions", "session_id", "store", "user_id", "max_steps", "retry",
    "guards", "context_window", "model_settings", "max_tool_output_chars", "autoload_plugins",
    "provider_options", "sandbox", "trust_workspace", "setting_sources", "plugin_options",
)
_settings_log_seen: set[str] = set()


def _warn_once(message: str) -> None:
    # an application creating many agents in one folder hears each warning once
    if message not in _settings_log_seen:
        _settings_log_seen.add(message)
        log.warning("smoke: %s", message)


def create_agent(
    workspace_path: str | os.PathLike[str] = ".",
    *,
    provider: str | Provider | None = None,
    model: str | None = None,
    api_key: ApiKey = None,
    base_url: str | None = None,
    tools: Iterable[str | ToolDefinition] | None = None,
    hooks: dict[str, Callable[..., Any]] | None = None,
    plugins: Iterable[object] | None = None,
    permission: str | Callable[..., Any] | None = None,
    auto_approve: bool | list[str] | None = None,
    permissions: dict[str, list[str]] | None = None,
    system_prompt: str | None = None,
    instructions: str | bool | None = None,
    session_id: str | None = None,
    store: Store | None = None,
    user_id: str | None = None,
    max_steps: int | None = None,
    retry: RetryPolicy | None = None,
    guards: Guards | None = None,
    context_window: int = 128_000,
    model_settings: dict[str, Any] | None = None,
    max_tool_output_chars: int = 30_000,
    autoload_plugins: bool = True,
    provider_options: dict[str, Any] | None = None,
    sandbox: SandboxSettings | dict[str, Any] | None = None,
    trust_workspace: bool | None = True,
    setting_sources: Iterable[str] | None = None,
    plugin_options: dict[str, dict[str, Any]] | None = None,
    **plugin_settings: Any,
) -> Agent:
    """Create an :class:`Agent`.

    ``provider`` is a registered provider name (``"openai"``, ``"nvidia"``,
    ``"anthropic"``...) or a provider instance; ``model="nvidia:meta/llama-3.3-70b-instruct"``
    names both. ``tools`` restricts the exposed groups when it holds group
    names (``["search", "git"]``) and adds tools when it holds
    ``ToolDefinition``s. ``hooks`` maps hook names to callables; ``plugins``
    are plugin objects for this agent only. ``provider_options`` go to the
    provider factory (``{"idle_timeout": 30}``).

    Settings (docs/security.md): the keyword arguments ``provider``,
    ``model``, ``base_url``, ``permission``, ``auto_approve``,
    ``permissions``, ``max_steps``, ``sandbox``, ``instructions``,
    ``plugin_options`` and the keys plugins declare (``mcp_servers=``,
    ``skills_dir=``...) are the *code* layer, above the user, project, local
    and environment layers (``setting_sources`` limits which are read;
    ``setting_sources=()`` reads none) and below managed settings, which are
    always read and final. ``trust_workspace=False`` applies the untrusted
    rules to the workspace's own files; ``None`` looks the folder up in the
    trust store (``smoke trust``). ``auto_approve`` is True, False or a list
    of allow rules (``["run_command(pytest *)"]``). Unknown keyword
    arguments are a ``TypeError``; a value of the wrong type is a
    :class:`~smoke_core.settings.SettingsError` naming the argument.
    """
    from .settings import (
        SettingsError,
        UnknownSettingError,
        choose_provider,
        collect_setting_specs,
        resolve_settings,
    )

    workspace = Workspace(workspace_path)
    if trust_workspace is not None and not isinstance(trust_workspace, bool):
        raise SettingsError(f"create_agent(trust_workspace=...): expected True, False or None, got {trust_workspace!r}")
    pm = create_plugin_manager(list(plugins or []), hooks, autoload=autoload_plugins)
    specs = collect_setting_specs(pm)
    for key in plugin_settings:
        if key not in specs:
            import difflib

            candidates = [*_CREATE_AGENT_ARGS, *specs]
            close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else (
                "; if a plugin declares it, that plugin is not installed or not loaded (SMOKE_LOAD_PLUGINS)"
            )
            raise UnknownSettingError(f"create_agent() got an unexpected keyword argument {key!r}{hint}")

    project_instructions = instructions is not False
    code: dict[str, Any] = {
        "provider": provider if isinstance(provider, str) else None,
        "model": model, "base_url": base_url, "permission": permission, "auto_approve": auto_approve,
        "permissions": permissions, "max_steps": max_steps,
        "instructions": instructions if not isinstance(instructions, bool) else None,
        "plugin_options": plugin_options,
        "sandbox": sandbox.model_dump(exclude_unset=True) if isinstance(sandbox, SandboxSettings) else sandbox,
        **plugin_settings,
    }
    code = {k: v for k, v in code.items() if v is not None}
    resolved = resolve_settings(workspace.root, code=code, code_origin="create_agent", sources=setting_sources,
                                trust=trust_workspace, specs=specs)

    providers = collect_providers(pm)
    if provider is not None and not isinstance(provider, str):
        chosen: str | Provider | None = provider
        chosen_model, chosen_url = resolved.values["model"], resolved.values["base_url"]
    else:
        chosen, chosen_model, chosen_url = choose_provider(resolved, providers.names())
    for warning in resolved.warnings:
        _warn_once(warning)

    values = resolved.values
    if system_prompt is None:
        system_prompt = DEFAULT_SYSTEM_PROMPT
    if project_instructions:
        from ._instructions import load_instructions
        from .config import user_config_path

        chosen_sources = set(setting_sources) if setting_sources is not None else {"user", "project"}
        loaded = load_instructions(
            workspace.root, user_dir=user_config_path().parent if "user" in chosen_sources else None,
            trusted=resolved.trusted, workspace_files="project" in chosen_sources,
        )
        for warning in loaded.warnings:
            resolved.warnings.append(warning)
            _warn_once(warning)
        if loaded.text:
            system_prompt = f"{system_prompt}\n\n{loaded.text}".strip()
    if values["instructions"]:
        system_prompt = f"{system_prompt}\n\n{values['instructions']}".strip()
    extra = dict(resolved.plugin_values)
    extra["plugin_options"] = dict(values["plugin_options"])
    extra["settings_origin"] = dict(resolved.origins)
    options = AgentOptions(
        workspace=workspace,
        provider_name=chosen if isinstance(chosen, str) else getattr(chosen, "name", None),
        model=chosen_model,
        permission=values["permission"],
        auto_approve=values["auto_approve"] is True,
        user_id=user_id,
        session_id=session_id,
        max_steps=values["max_steps"],
        workspace_trusted=resolved.trusted,
        sandbox=values["sandbox"],
        extra=extra,
    )

    provider_obj = _resolve_provider(chosen, chosen_model, api_key, chosen_url, user_id, providers, provider_options)

    # tools
    registry = ToolRegistry()
    groups: set[str] | None = None
    extra_tools: list[str] = []
    given: list[ToolDefinition] = []
    if tools is not None:
        if isinstance(tools, (str, ToolDefinition)):
            tools = [tools]
        for item in tools:
            if isinstance(item, str):
                groups = groups or set()
                if item == "core":
                    groups.update(g for g in ("filesystem", "search", "terminal", "agent"))
                else:
                    groups.add(item)
            elif isinstance(item, ToolDefinition):
                given.append(item)
            else:
                raise TypeError(
                    f"tools= takes group names and ToolDefinitions (use @tool), got {type(item).__name__}"
                )
    def tool_kwargs(label: str) -> dict[str, Any]:
        def register(tool: ToolDefinition, *, group: str | None = None) -> ToolDefinition:
            return registry.register(tool, group=group, source=label)

        return {"register": register, "options": options}

    def tools_failed(label: str, exc: BaseException) -> None:
        if isinstance(exc, (ValueError, AsyncRegistration)):  # already worded for people
            raise exc
        raise RuntimeError(f"register_tools in plugin {label} failed: {type(exc).__name__}: {exc}") from exc

    HookRunner(pm).collect("register_tools", tool_kwargs, tools_failed)
    for t in given:
        t = registry.register(t, source="create_agent(tools=...)")
        extra_tools.append(t.name)
    if groups is not None:
        known = set(TOOL_GROUPS) | {t.group for t in registry if t.group}
        unknown = sorted(g for g in groups if g not in known)
        if unknown:
            raise ValueError(
                f"tools=: unknown tool group(s) {', '.join(map(repr, unknown))}; known groups: {', '.join(sorted(known))}"
            )
    names = registry.names()
    for rule in resolved.rules:
        # MCP tools (server__tool) appear when their server starts, after this
        if "__" not in rule.tool and not any(rule.matches_tool(n) for n in names):
            message = (f"{rule.describe()} names no installed tool; it may come from a plugin that is not "
                       f"installed or not loaded")
            resolved.warnings.append(message)
            _warn_once(message)

    agent = Agent(
        options=options,
        pm=pm,
        registry=registry,
        providers=providers,
        provider=provider_obj,
        groups=groups,
        extra_tools=extra_tools,
        system_prompt=system_prompt,
        store=store if store is not None else MemoryStore(),
        retry=retry or RetryPolicy(),
        guards=guards or Guards(),
        compactor=Compactor(context_window=context_window),
        model_settings=dict(model_settings or {}),
        max_tool_output_chars=max_tool_output_chars,
        gate=PermissionGate(
            options.permission, auto_approve=options.auto_approve, rules=resolved.rules,
            workspace=workspace.root, tools=registry.get,
        ),
        settings=resolved,
    )
    return agent


def _resolve_provider(
    provider: str | Provider | None,
    model: str | None,
    api_key: ApiKey,
    base_url: str | None,
    user_id: str | None,
    providers: ProviderRegistry,
    provider_options: dict[str, Any] | None,
) -> Provider:
    if provider is not None and not isinstance(provider, str):
        if not hasattr(provider, "stream"):
            raise TypeError(f"provider must be a name or an object with stream(request), got {type(provider).__name__}")
        return provider
    name = provider
    if name is None and model and ":" in model:
        prefix, rest = model.split(":", 1)
        if prefix in providers:
            name, model = prefix, rest
    if name is None:
        raise ValueError(
            "no provider given: pass provider='openai' (or another installed provider), "
            "model='provider:model', or a provider object. Installed providers: "
            + (", ".join(providers.names()) or "none (pip install smoke-provider-openai)")
        )
    spec = providers.get(name)
    if spec is None:
        installed = ", ".join(providers.names()) or "none"
        raise ValueError(
            f"unknown provider {name!r}. Installed providers: {installed}. "
            f"Install one (pip install smoke-provider-openai / smoke-provider-anthropic) or pass a provider object."
        )
    kwargs: dict[str, Any] = {"model": model or spec.default_model, "api_key": api_key, "user_id": user_id}
    if base_url is not None:
        kwargs["base_url"] = base_url
    kwargs.update(provider_options or {})
    try:
        return spec.factory(**kwargs)
    except AgentError:
        raise
    except TypeError as exc:
        raise ValueError(f"provider {name!r} could not be created: {exc}") from exc


def repair_history(messages: list[Message]) -> list[Message]:
    """Close tool calls left without results (a run killed mid-step) so the
    history is valid for every provider; the store itself is not changed."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        out.append(message)
        if message["role"] != "assistant":
            continue
        calls = [b for b in message["content"] if b.get("type") == "tool_call"]
        if not calls:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.get("tool_call_id") for b in nxt["content"]} if nxt and nxt["role"] == "tool" else set()
        missing = [c for c in calls if c["id"] not in answered]
        if not missing:
            continue
        filler = [
            {"type": "tool_result", "tool_call_id": c["id"], "is_error": True,
             "content": [{"type": "text", "text": "not run: the previous run ended before this call completed"}]}
            for c in missing
        ]
        if nxt is not None and nxt["role"] == "tool":
            messages[i + 1] = {"role": "tool", "content": [*nxt["content"], *filler]}
        else:
            out.append({"role": "tool", "content": filler})
    return out


def new_session_id() -> str:
    return "ses_" + uuid.uuid4().hex[:12]
