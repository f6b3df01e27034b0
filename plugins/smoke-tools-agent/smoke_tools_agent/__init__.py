"""smoke-tools-agent: todo_write, ask_user, finish_task and task (group ``agent``).

None needs approval: they talk to the run, not to the workspace (``task``'s
subagent asks for its own calls exactly as the parent would). Importing this
module is cheap: the tools are built on ``register_tools``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from smoke_core.plugin import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["before_run", "register_settings", "register_tools"]

log = logging.getLogger("smoke")
#: subagent-file warnings by workspace, repeated at the start of each run there
_warnings: dict[str, list[str]] = {}


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from ._subagents import SubagentSpec

    register("subagents", dict[str, SubagentSpec], trusted_only=True,
             description="agent types for the task tool: {name: {description, prompt, tools, model, max_steps}}")


@hookimpl
def register_tools(register: Callable[..., Any], options: Any) -> None:
    from ._subagents import build_task_tool, discover, home_dir
    from ._tools import build_tools

    for tool in build_tools():
        register(tool, group="agent")
    root = options.workspace.root
    catalogue = discover(root, home=home_dir(), code=options.get("subagents"), trusted=options.workspace_trusted)
    for warning in catalogue.warnings:
        log.warning("smoke: %s", warning)
    _warnings[str(root)] = catalogue.warnings
    register(build_task_tool(catalogue), group="agent")


@hookimpl
def before_run(run: Any) -> None:
    if run.parent is None:
        for warning in _warnings.get(str(run.workspace.root), ()):
            run.warn(warning)
