"""``smoke acp``: the agent on stdin/stdout.

stdout carries the protocol and nothing else: the process's file descriptor
1 is pointed at stderr once the protocol has its own copy, so a stray
``print`` (a plugin's, a library's) or an inheriting child cannot corrupt
the stream. Logs go to stderr, or to ``--log-file``. The streams and the
serving loop are in ``_stdio`` (asyncio is imported when the command runs).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click


@click.command("acp")
@click.option("--provider", default=None, help="Provider name (openai, anthropic, nvidia, ...).")
@click.option("--model", "-m", default=None, help="Model name, or provider:model.")
@click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write logs to this file instead of stderr.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              show_default=True, help="How much to log.")
def acp_command(provider: str | None, model: str | None, base_url: str | None, log_file: Path | None,
                log_level: str) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed,
    JetBrains, Neovim). Each editor session works in the folder the editor
    names; see docs/editors.md for the editor settings."""
    try:
        import acp  # noqa: F401
    except ImportError:
        raise click.ClickException("smoke acp needs the ACP SDK: pip install agent-client-protocol") from None
    import asyncio

    from ._agent import ServeOptions
    from ._stdio import serve

    handler: logging.Handler
    if log_file is not None:
        try:
            handler = logging.FileHandler(log_file)
        except OSError as exc:
            raise click.BadParameter(f"cannot write {log_file}: {exc.strerror or exc}", param_hint="--log-file") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, log_level.upper()))

    sys.stdout.flush()
    out_fd = os.dup(1)  # the protocol's own copy of stdout
    os.dup2(2, 1)  # everything else that writes to fd 1 lands on stderr
    sys.stdout = sys.stderr
    refuse_unknown_provider(provider, model)  # after the redirect: plugins' registration cannot print on stdout
    asyncio.run(serve(ServeOptions(provider=provider, model=model, base_url=base_url), out_fd))


def refuse_unknown_provider(provider: str | None, model: str | None) -> None:
    """Raise :class:`click.UsageError` (exit status 2) when ``--provider``, or
    ``--model prefix:name`` without ``--provider``, names a provider that is
    not installed, with the message ``smoke run`` gives (core's
    ``resolve_agent_settings`` words it and knows the installed providers).

    Only the flags are checked: settings are per folder and read per session.
    Settings that cannot be read (:class:`SettingsError`), or that are wrong
    without the flags too, are left to the sessions, as before. The settings
    are resolved for the current folder, as ``smoke run`` there would, so that
    ``--model llama3:8b`` with a provider from the settings is not refused."""
    if provider is None and not (model and ":" in model):
        return  # nothing on the command line names a provider
    from smoke_core.plugin import (
        ConfigError,
        NoProviderError,
        SettingsError,
        resolve_agent_settings,
    )

    try:
        here = Path.cwd()
    except OSError:  # the folder it was started in is gone: sessions name their own
        return

    def problem(**flags: str | None) -> str | None:
        try:
            resolve_agent_settings(here, **flags)
        except (NoProviderError, SettingsError):
            return None  # no key in the environment, or unreadable settings: each session reports it
        except ConfigError as exc:  # what remains is core's unknown_provider
            return str(exc)
        return None

    found = problem(provider=provider, model=model)
    if found is None:
        return
    # --provider outranks every settings layer but the managed one, so the
    # problem is the flag's (or the managed settings', which bind every
    # session). A prefix in --model names the provider only when no setting
    # does: when the settings fail without the flag too, the problem is theirs.
    if provider is None and problem() is not None:
        return
    raise click.UsageError(found)
