"""smoke-acp: ``smoke acp``, Smoke as an Agent Client Protocol agent on
stdio, so editors (Zed, JetBrains, Neovim) drive it.

Built on the maintained ``agent-client-protocol`` SDK (its pydantic schema
models and JSON-RPC connection). Importing this module is cheap: the SDK is
imported when the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    import click

__all__ = ["register_commands", "register_settings"]


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import acp_command

    cli.add_command(acp_command)


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    # model names only (the session's provider): a repository listing them cannot hurt
    register("acp_models", list[str], default=None, trusted_only=False,
             description="models an editor may switch an ACP session to (smoke acp), on the session's provider")
