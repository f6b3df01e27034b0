"""``smoke serve``: the web chat, from the command line."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from smoke_core.plugin import Agent, Store


def auto_approve_option(yes: bool) -> bool | None:
    """``create_agent(auto_approve=...)`` for ``--yes``: True when the person
    typed it, else None, so the settings files decide (an ``auto_approve``
    list of rules in them is honoured; an explicit False here would override
    it from the code layer)."""
    return True if yes else None


def demo_factory(root: Path, *, auto_approve: bool) -> Any:
    """Agents for ``--demo``: each session works on a fresh copy of the sample
    project under ``root`` and is driven by the offline simulated model.
    ``auto_approve`` is ``--yes``; without it the settings decide."""
    from smoke_core.demo import create_demo_agent

    # Any: create_demo_agent declares bool, but passes the value on to create_agent, where None = "not set"
    auto: Any = auto_approve_option(auto_approve)

    def factory(*, session_id: str, store: Store) -> Agent:
        agent, _ = create_demo_agent(root / session_id, auto_approve=auto, store=store, session_id=session_id)
        return agent

    return factory


def provider_factory(workspace: Path, *, provider: str | None, model: str | None, base_url: str | None,
                     auto_approve: bool) -> tuple[Any, str | None]:
    """Agents on ``workspace`` with the provider from the options, then
    ``.smoke/config.yaml``, then the first provider whose API key is set (as
    ``smoke run`` does). Returns the factory and a note on the chosen provider."""
    from smoke_core.plugin import ConfigError, NoProviderError, create_agent, resolve_agent_settings

    try:
        settings = resolve_agent_settings(workspace, provider=provider, model=model, base_url=base_url)
    except NoProviderError as exc:
        raise click.UsageError(f"{exc}\n  To try the UI without a key, run: smoke serve --demo") from None
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    options = dict(settings.options)
    auto = auto_approve_option(auto_approve)
    if auto is not None:
        options["auto_approve"] = auto

    def factory(*, session_id: str, store: Store) -> Agent:
        return create_agent(
            workspace, provider=settings.provider, model=settings.model, base_url=settings.base_url,
            store=store, session_id=session_id, **options,
        )

    return factory, settings.note


@click.command("serve")
@click.option("--workspace", "-w", default=".", type=click.Path(file_okay=False, path_type=Path),
              help="Workspace folder the agent works in (default: the current folder).")
@click.option("--port", "-p", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free port).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind. Anything but loopback exposes the agent to your network.")
@click.option("--demo", is_flag=True,
              help="Use the offline simulated model on a copy of a sample project (no API key needed).")
@click.option("--provider", default=None, help="Provider name (openai, anthropic, nvidia, ...).")
@click.option("--model", "-m", default=None, help="Model name, or provider:model.")
@click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers.")
@click.option("--yes", "-y", is_flag=True, help="Approve every tool call without asking.")
@click.pass_context
def serve_command(
    ctx: click.Context, workspace: Path, port: int, host: str, demo: bool, provider: str | None,
    model: str | None, base_url: str | None, yes: bool,
) -> None:
    """Start a local web chat: streamed runs, tool cards, approvals and questions.

    Prints a URL carrying a random access token; open it in a browser.
    """
    import secrets

    from .server import create_app
    from .serving import bind_socket, is_loopback, make_server, url_for

    cleanup: list[Any] = []
    label = None
    if demo:
        try:
            from smoke_core.demo import SIMULATION_LABEL
        except ImportError as exc:
            raise click.ClickException(f"--demo needs smoke_core.demo, which this smoke-core lacks ({exc})") from exc
        label = SIMULATION_LABEL
        if provider or model:
            click.echo("smoke serve: --provider/--model are ignored with --demo (the model is simulated)", err=True)
        source = ctx.get_parameter_source("workspace")
        if source is not None and source.name != "DEFAULT":
            root = workspace.resolve()
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.mkdtemp(prefix="smoke-serve-demo-"))
            cleanup.append(lambda: shutil.rmtree(root, ignore_errors=True))
        factory = demo_factory(root, auto_approve=yes)
        ws_shown: Path = root
    else:
        if not workspace.is_dir():
            raise click.BadParameter(f"{workspace} is not a folder", param_hint="--workspace")
        ws_shown = workspace.resolve()
        factory, note = provider_factory(ws_shown, provider=provider, model=model, base_url=base_url,
                                         auto_approve=yes)
        if note:
            click.echo(f"smoke serve: {note}", err=True)

    token = secrets.token_urlsafe(32)
    app = create_app(
        factory, workspace=ws_shown, token=token, title="Smoke (demo)" if demo else "Smoke",
        demo_label=label, fresh_session_per_run=demo, on_close=cleanup,
    )
    try:
        app.state.ui.presentations()  # creates the first agent: bad provider settings fail here, not in the page
    except BaseException as exc:
        app.state.ui.close_store()
        for fn in cleanup:
            fn()
        if isinstance(exc, (ValueError, TypeError)):  # what create_agent says of the person's settings: exit 2
            raise click.UsageError(str(exc)) from None
        raise  # anything else is a bug: the crash report, not a one-line disguise

    try:
        sock = bind_socket(host, port)
    except OSError as exc:
        app.state.ui.close_store()
        for fn in cleanup:
            fn()
        raise _ListenError(listen_problem(host, port, exc)) from None
    if not is_loopback(host):
        click.secho(
            f"warning: --host {host} exposes this agent (it edits files and runs commands in {ws_shown}) "
            "to your network. Anyone who gets the URL with its token can drive it.",
            fg="yellow", err=True,
        )
    url = f"{url_for(sock, host)}/?token={token}"
    click.echo(f"Smoke UI: {url}", nl=True)
    click.echo(f"Workspace: {ws_shown}" + ("  (demo: simulated model)" if demo else ""))
    click.echo("Press Ctrl+C to stop.")
    server = make_server(app)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


class _ListenError(click.ClickException):
    """The port cannot be had: the person's choice, so exit status 2 (one line)."""

    exit_code = 2


def listen_problem(host: str, port: int, exc: OSError) -> str:
    """One line: why ``host:port`` cannot be listened on, and what to do."""
    import errno

    why = exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        return (f"cannot listen on {host}:{port}: the port is in use (another `smoke serve`?); "
                "use --port 0 for any free port, or --port N for another one")
    if exc.errno == errno.EACCES:
        return f"cannot listen on {host}:{port}: {why} (ports below 1024 need privileges); use --port 0 for any free port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}:{port}: {why}; --host must be an address of this machine (127.0.0.1 by default)"
    return f"cannot listen on {host}:{port}: {why}; use --port 0 for any free port"
