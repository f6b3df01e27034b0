"""smoke-tools-agent: todo_write, ask_user and finish_task (group ``agent``).

All three are read-only (no approval): they talk to the run, not to the
workspace. Importing this module is cheap: the tools are built on
``register_tools``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["register_tools"]


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    from ._tools import build_tools

    for tool in build_tools():
        register(tool, group="agent")
