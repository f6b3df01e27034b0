"""Core's click commands. Only click is imported here: ``smoke --help`` loads
this module, so the work (asyncio, rich, the agent) is imported when a
command runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click


def _agent_options(fn: Any) -> Any:
    """The options ``smoke run`` and ``smoke chat`` share."""
    for option in reversed((
        click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False),
                     help="Workspace folder (default: current directory)."),
        click.option("--provider", default=None, help="Provider name (openai, anthropic, nvidia, ollama, ...; "
                     "`smoke providers` lists them)."),
        click.option("--model", "-m", default=None, help="Model name, or provider:model."),
        click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers."),
        click.option("--session", "-s", "session", default=None, help="Continue (or start) the named session."),
        click.option("--continue", "-c", "continue_", is_flag=True, help="Continue the last session of this folder."),
        click.option("--resume", "-r", "resume", default=None, is_flag=False, flag_value="", metavar="[ID]",
                     help="Resume session ID; without an id, pick one of the recent sessions (at a terminal)."),
        click.option("--fork", "fork", default=None, metavar="ID",
                     help="Start a new session from a copy of session ID's history (ID is left as it was)."),
        click.option("--yes", "-y", is_flag=True, help="Approve every call without asking."),
        click.option("--plan", is_flag=True, help="Start in plan mode: only read-only tools run until you approve "
                     "the agent's plan (then edits ask, or run if you choose to accept edits)."),
        click.option("--max-steps", type=int, default=None, help="Stop after this many steps."),
        click.option("--no-stream", "no_stream", is_flag=True,
                     help="Ask the provider for whole replies instead of a stream (also `stream: false`)."),
    )):
        fn = option(fn)
    return fn


def _model_options(fn: Any) -> Any:
    """How ``smoke run`` calls the model (the settings keys of the same names)."""
    for option in reversed((
        click.option("--tool-calls", type=click.Choice(["native", "inline", "constrained", "auto"]), default=None,
                     help="How tool calls travel (OpenAI-compatible providers): native, inline (in the text), "
                          "constrained (in the text, held to the tools' schemas by the server), auto."),
        click.option("--context-window", type=click.IntRange(min=1000), default=None,
                     help="The model's context window in tokens (default: what the server says)."),
        click.option("--max-tokens", type=click.IntRange(min=1), default=None,
                     help="The most tokens one reply may have."),
        click.option("--temperature", type=click.FloatRange(0, 2), default=None, help="Sampling temperature."),
        click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=None, help="Nucleus sampling."),
        click.option("--seed", type=int, default=None, help="Sampling seed (where the server honours it)."),
    )):
        fn = option(fn)
    return fn


@click.command("run")
@click.argument("task", required=False)
@_agent_options
@_model_options
@click.option("--print", "-p", "print_answer", is_flag=True,
              help="Write only the final answer to stdout, the transcript to stderr (automatic when stdout is not a "
                   "terminal).")
@click.option("--transcript", is_flag=True, help="Write the transcript to stdout even when it is not a terminal.")
@click.option("--json", "as_json", is_flag=True, help="Write every event as one JSON line to stdout.")
@click.option("--image", "images", multiple=True, type=click.Path(dir_okay=False),
              help="Attach an image (PNG, JPEG, GIF, WebP) to the task; repeat for several.")
@click.option("--output-schema", type=click.Path(dir_okay=False), default=None,
              help="A JSON Schema file: the run must end with a result that validates, printed as JSON on stdout.")
def run_command(**kwargs: Any) -> None:
    """Run TASK with a model in the workspace (no TASK at a terminal: a chat).

    TASK `-` (or none, with stdin piped) reads the task from stdin; with a
    TASK, piped stdin is added to it as context."""
    from .run import run_impl, wants_chat

    if wants_chat(kwargs["task"], kwargs["as_json"], kwargs["images"], kwargs["output_schema"],
                  kwargs["print_answer"]):
        from .chat import chat_impl

        chat_impl(**{k: kwargs[k] for k in ("workspace", "provider", "model", "base_url", "session", "yes",
                                            "max_steps", "no_stream", "plan", "continue_", "resume", "fork")})
        return
    run_impl(**kwargs)


@click.command("chat")
@_agent_options
def chat_command(**kwargs: Any) -> None:
    """Chat with the agent in the workspace: one session, turn after turn.

    Type /help in the chat for its commands; Ctrl-C stops the current turn,
    /exit or Ctrl-D leaves.
    """
    from .chat import chat_impl

    chat_impl(**kwargs)


@click.command("providers")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def providers_command(as_json: bool) -> None:
    """List the installed providers: key variable, default model and base URL."""
    from .info import providers_impl

    providers_impl(as_json)


@click.command("demo")
@click.option("--yes", "-y", is_flag=True, help="Approve every call without asking.")
@click.option("--json", "as_json", is_flag=True, help="Write every event as one JSON line to stdout.")
@click.option("--workspace", "-w", default=None, type=click.Path(file_okay=False), help="Copy the sample project here instead of a temporary folder.")
@click.option("--real", is_flag=True, help="Drive it with a real small model on this machine (llama-server and a "
              "GGUF model from `nox -s realmodel`, or SMOKE_LLAMA_SERVER and SMOKE_LLAMA_MODEL).")
def demo_command(**kwargs: object) -> None:
    """Watch a simulated model fix a real bug with the real harness (offline, no key)."""
    from .run import demo_impl

    demo_impl(**kwargs)  # type: ignore[arg-type]


@click.group("sessions", invoke_without_command=True)
@click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False))
@click.pass_context
def sessions_group(ctx: click.Context, workspace: str) -> None:
    """List the sessions of the store this folder uses (.smoke/sessions.db,
    SMOKE_STORE_URL or the store setting), or show one."""
    ctx.obj = Path(workspace).resolve()
    if ctx.invoked_subcommand is None:
        from .sessions import sessions_list_impl

        sessions_list_impl(ctx.obj)


@sessions_group.command("show")
@click.argument("session_id")
@click.pass_obj
def sessions_show(workspace: Path, session_id: str) -> None:
    """Print the transcript of SESSION_ID."""
    from .sessions import sessions_show_impl

    sessions_show_impl(workspace, session_id)


@sessions_group.command("doctor")
@click.option("--from", "source", default=None, type=click.Path(dir_okay=False),
              help="A damaged database file to copy readable sessions from (default: check .smoke/sessions.db).")
@click.option("--workspace", "-w", "workspace_option", default=None, type=click.Path(exists=True, file_okay=False),
              help="Workspace folder (default: the current directory).")
@click.pass_obj
def sessions_doctor(workspace: Path, source: str | None, workspace_option: str | None) -> None:
    """Check .smoke/sessions.db; if it is damaged, keep it aside and copy the
    sessions that can still be read into a fresh one. Run it while no Smoke
    process uses the workspace."""
    from .sessions import doctor_impl

    doctor_impl(Path(workspace_option).resolve() if workspace_option else workspace, source)


@click.command("rewind")
@click.argument("checkpoint", required=False, type=int)
@click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False), help="Workspace folder.")
@click.option("--session", "-s", default=None, help="The session whose checkpoints to use (default: the last one here).")
@click.option("--diff", is_flag=True, help="Show what changed from CHECKPOINT to now; change nothing.")
@click.option("--conversation", is_flag=True,
              help="Also rewind the conversation: a new session holding it as it was then (the old one is kept).")
@click.option("--undo", is_flag=True, help="Undo the last rewind (the state it saved first).")
@click.option("--json", "as_json", is_flag=True, help="List the checkpoints as JSON.")
def rewind_command(workspace: str, session: str | None, checkpoint: int | None, diff: bool, conversation: bool,
                   undo: bool, as_json: bool) -> None:
    """List the checkpoints of a session (no CHECKPOINT), or put the
    workspace's files back as they were at CHECKPOINT — including what the
    agent's commands changed. The state before is recorded first, so a
    rewind can be undone (--undo)."""
    from .rewind import rewind_impl

    rewind_impl(workspace, session, checkpoint, diff, conversation, undo, as_json)


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List plugins: distribution, version, hooks implemented, load errors."""
    from .info import plugins_impl

    plugins_impl(as_json)


@click.command("tools")
@click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False), help="Workspace folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def tools_command(workspace: str, as_json: bool) -> None:
    """List the tools every installed plugin registers, by group."""
    from .info import tools_impl

    tools_impl(workspace, as_json)


@click.command("trust")
@click.argument("path", required=False, default=".", type=click.Path(file_okay=False))
@click.option("--revoke", is_flag=True, help="Stop trusting PATH.")
@click.option("--list", "list_", is_flag=True, help="List the trusted folders.")
def trust_command(path: str, revoke: bool, list_: bool) -> None:
    """Trust PATH (default: the current folder): honour its own settings.

    Until a folder is trusted, its .smoke/config.yaml and .smoke/config.local.yaml
    may only tighten policy (model, a lower max_steps, deny / ask rules,
    instructions); endpoints, allow rules, auto-approval, sandbox settings and
    MCP servers from it are ignored. Trust is stored in your user settings.
    """
    from .info import trust_impl

    trust_impl(path, revoke=revoke, list_=list_)


@click.command("permissions")
@click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False), help="Workspace folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def permissions_command(workspace: str, as_json: bool) -> None:
    """Show the effective permission mode, auto-approval and rules, each with where it came from."""
    from .info import permissions_impl

    permissions_impl(workspace, as_json)


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def doctor_command(as_json: bool) -> None:
    """Show what this machine offers (sandbox, ripgrep, git, node, chromium) and what a missing piece disables."""
    from .doctor import doctor_impl

    doctor_impl(as_json)


@click.command("install")
@click.argument("names", nargs=-1, metavar="NAME...")
@click.option("--upgrade", "-U", is_flag=True, help="Upgrade the named packages to their newest versions.")
@click.option("--editable", "-e", is_flag=True, help="Install the named folders in editable mode (a plugin you are writing).")
def install_command(names: tuple[str, ...], upgrade: bool, editable: bool) -> None:
    """Install plugins (package names, paths or URLs) into the environment
    Smoke runs in, with its own pip; `smoke plugins` shows them at once."""
    from .install import install_impl

    install_impl(names, upgrade=upgrade, editable=editable)


@click.command("uninstall")
@click.argument("names", nargs=-1, metavar="NAME...")
@click.option("--yes", "-y", is_flag=True, help="Do not ask pip for confirmation.")
def uninstall_command(names: tuple[str, ...], yes: bool) -> None:
    """Remove plugins from the environment Smoke runs in."""
    from .install import uninstall_impl

    uninstall_impl(names, yes=yes)


@click.group("plugin")
def plugin_group() -> None:
    """Write Smoke plugins (`smoke plugins` lists the installed ones)."""


@plugin_group.command("new")
@click.argument("name")
@click.option("--directory", "-d", default=".", type=click.Path(file_okay=False),
              help="Create the package folder in this folder (default: the current one).")
@click.option("--description", default=None, help="The one-line summary in pyproject.toml and the README.")
def new_command(name: str, directory: str, description: str | None) -> None:
    """Create the plugin package NAME (e.g. acme-tools): an example tool, a
    hook, a README and tests that pass. Then: `cd NAME && smoke install -e '.[test]' && pytest`."""
    from .scaffold import new_impl

    new_impl(name, directory, description)


# ---------------------------------------------------------------- smoke batch
# Engines add their own options (``--ray-address``...): :class:`BatchCommand`
# asks each installed engine for them when the command's parameters are read
# (``smoke batch --help`` or a run), not when ``smoke --help`` lists commands.


class BatchCommand(click.Command):
    """``smoke batch`` with the options of every installed engine."""

    _engine_params: dict[str, str] | None = None  # option name -> engine name

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        extra: list[click.Parameter] = []
        owners: dict[str, str] = {}
        from ..batch.engine import engine_classes

        known = {p.name for p in params}
        for name, cls in sorted(engine_classes().items()):
            for option in getattr(cls, "cli_options", list)():
                if not isinstance(option, click.Option) or option.name in known:
                    continue  # an engine may not shadow a batch option
                known.add(option.name)
                owners[str(option.name)] = name
                extra.append(option)
        self._engine_params = owners
        help_option = params[-1:] if params and params[-1].name == "help" else []
        return [*params[: len(params) - len(help_option)], *extra, *help_option]


@click.command("batch", cls=BatchCommand)
@click.argument("tasks_file", metavar="TASKS.jsonl", type=click.Path(dir_okay=False))
@click.option("--out", "-o", default=None, type=click.Path(dir_okay=False),
              help="Results file (JSON Lines; default: TASKS.results.jsonl). Re-running skips the ids it holds.")
@click.option("--engine", "-e", default="local", show_default=True,
              help="Where tasks run: local (this process) or an installed engine such as ray.")
@click.option("--concurrency", "-c", default=8, show_default=True, type=int, help="Tasks running at once.")
@click.option("--provider", "-p", default=None, help="Provider for every task (a task's model may name its own).")
@click.option("--model", "-m", default=None, help="Model for tasks that do not name one.")
@click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers.")
@click.option("--allow", multiple=True, metavar="RULE", help="Allow rule for every task, e.g. 'edit_file' or "
              "'run_command(pytest *)' (repeatable). What no rule allows is denied.")
@click.option("--deny", multiple=True, metavar="RULE", help="Deny rule for every task (repeatable).")
@click.option("--yes", "-y", "allow_all", is_flag=True,
              help="Allow every call a person would be asked about (deny rules still apply).")
@click.option("--max-steps", type=int, default=None, help="Step limit for tasks that do not set max_steps.")
@click.option("--max-cost-usd", type=float, default=None,
              help="Budget of the whole batch in US dollars: once spent, no more tasks run (resume with a higher one).")
@click.option("--max-input-tokens", type=int, default=None, help="Input-token budget of the whole batch.")
@click.option("--max-output-tokens", type=int, default=None, help="Output-token budget of the whole batch.")
@click.option("--in-place", is_flag=True, help="Run each task in its workspace itself, not in a copy.")
@click.option("--work-dir", default=None, type=click.Path(file_okay=False),
              help="Where task copies and the default session database go (default: OUT with .batch).")
@click.option("--batch-id", default=None, help="Name of the batch in session ids (default: made on the first run).")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Session store (default: $SMOKE_STORE_URL, else a SQLite file in the work folder).")
@click.option("--setup-timeout", default=600.0, show_default=True, type=float,
              help="Seconds a task's setup command may take.")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
              help="Import MODULE as a plugin for every task (tools, providers); it must be importable by workers.")
@click.option("--json", "as_json", is_flag=True, help="Print plain progress lines even on a terminal.")
@click.pass_context
def batch_command(ctx: click.Context, /, **kwargs: Any) -> None:
    """Run every task of TASKS.jsonl (one JSON object a line: id, task,
    workspace; optional setup, model, output_schema, max_steps, permissions)
    with one result line each in --out. Each task runs in its own copy of its
    workspace, without waiting for a person: calls no rule allows are denied
    and reported. Interrupted? Run the same command again to resume."""
    from .batch_run import EXIT_USAGE, batch_impl

    owners = getattr(ctx.command, "_engine_params", None) or {}
    engine_options = {name: kwargs.pop(name) for name in list(kwargs) if name in owners}
    chosen = kwargs["engine"]
    for name, owner in owners.items():
        if owner != chosen and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
            flag = "--" + name.replace("_", "-")
            click.echo(f"smoke batch: {flag} is an option of --engine {owner}, not of --engine {chosen}", err=True)
            sys.exit(EXIT_USAGE)
    mine = {k: v for k, v in engine_options.items() if owners.get(k) == chosen}
    batch_impl(engine_options=mine, **kwargs)
