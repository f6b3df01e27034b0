"""smoke-tools-git: git_status, git_diff, git_log, git_show (read-only) and
git_add, git_commit (need approval), in the group ``git``.

git runs as ``git -C <workspace> ...`` from an argument list, never through a
shell. Importing this module is cheap: the tools are built on ``register_tools``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["register_tools"]


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    from ._git import build_tools

    for tool in build_tools():
        register(tool, group="git")
