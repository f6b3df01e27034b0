"""smoke-tools-git: git_status, git_diff, git_log, git_show (read-only) and
git_add, git_commit (need approval), in the group ``git``.

git runs as ``git -C <workspace> ...`` from an argument list, never through a
shell, with the repository's program-running settings switched off (see
``_safe_git``). Importing this module is cheap: the tools are built on
``register_tools``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["register_settings", "register_tools"]


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    from ._git import build_tools

    for tool in build_tools():
        register(tool, group="git")


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from pydantic import PositiveFloat, PositiveInt

    from ._git import OUTPUT_LIMIT
    from ._session import GIT_TIMEOUT_S

    # trusted_only: a repository may not loosen these (more output costs tokens, a longer timeout holds the run)
    register("git_output_limit", PositiveInt, default=OUTPUT_LIMIT, trusted_only=True,
             description="Characters of git output shown to the model before it is cut.")
    register("git_timeout_s", PositiveFloat, default=GIT_TIMEOUT_S, trusted_only=True,
             description="Seconds a git command may run before it is stopped.")
