"""Core's click commands. Only click is imported here: ``smoke --help`` loads
this module, so the work (asyncio, rich, the agent) is imported when a
command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


def _agent_options(fn: Any) -> Any:
    """The options ``smoke run`` and ``smoke chat`` share."""
    for option in reversed((
        click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False),
                     help="Workspace folder (default: current directory)."),
        click.option("--provider", "-p", default=None, help="Provider name (openai, anthropic, nvidia, ...; "
                     "`smoke providers` lists them)."),
        click.option("--model", "-m", default=None, help="Model name, or provider:model."),
        click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers."),
        click.option("--session", "-s", "session", default=None, help="Continue (or start) the named session."),
        click.option("--yes", "-y", is_flag=True, help="Approve every call without asking."),
        click.option("--max-steps", type=int, default=None, help="Stop after this many steps."),
        click.option("--no-stream", "no_stream", is_flag=True,
                     help="Ask the provider for whole replies instead of a stream (also `stream: false`)."),
    )):
        fn = option(fn)
    return fn


@click.command("run")
@click.argument("task", required=False)
@_agent_options
@click.option("--json", "as_json", is_flag=True, help="Write every event as one JSON line to stdout.")
@click.option("--image", "images", multiple=True, type=click.Path(dir_okay=False),
              help="Attach an image (PNG, JPEG, GIF, WebP) to the task; repeat for several.")
@click.option("--output-schema", type=click.Path(dir_okay=False), default=None,
              help="A JSON Schema file: the run must end with a result that validates, printed as JSON on stdout.")
def run_command(**kwargs: Any) -> None:
    """Run TASK with a model in the workspace (no TASK at a terminal: a chat)."""
    from .run import run_impl, wants_chat

    if wants_chat(kwargs["task"], kwargs["as_json"], kwargs["images"], kwargs["output_schema"]):
        from .chat import chat_impl

        chat_impl(**{k: kwargs[k] for k in ("workspace", "provider", "model", "base_url", "session", "yes",
                                            "max_steps", "no_stream")})
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
def demo_command(**kwargs: object) -> None:
    """Watch a simulated model fix a real bug with the real harness (offline, no key)."""
    from .run import demo_impl

    demo_impl(**kwargs)  # type: ignore[arg-type]


@click.group("sessions", invoke_without_command=True)
@click.option("--workspace", "-w", default=".", type=click.Path(exists=True, file_okay=False))
@click.pass_context
def sessions_group(ctx: click.Context, workspace: str) -> None:
    """List sessions kept in .smoke/sessions.db (or show one)."""
    ctx.obj = Path(workspace).resolve()
    if ctx.invoked_subcommand is None:
        from .run import sessions_list_impl

        sessions_list_impl(ctx.obj)


@sessions_group.command("show")
@click.argument("session_id")
@click.pass_obj
def sessions_show(workspace: Path, session_id: str) -> None:
    """Print the transcript of SESSION_ID."""
    from .run import sessions_show_impl

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
