"""Smoke plugin ``smoke-ui``: ``smoke serve``, a local web chat for agent runs.

Importing this module is cheap: Starlette and uvicorn are imported only when
the server is built (:func:`smoke_ui.server.create_app`) or the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smoke_core import hookimpl

if TYPE_CHECKING:
    import click

__all__ = ["register_commands"]


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import serve_command

    cli.add_command(serve_command)
