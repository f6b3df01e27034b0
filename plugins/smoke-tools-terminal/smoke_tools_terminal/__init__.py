"""smoke-tools-terminal: ``run_command`` and ``run_test`` (group ``terminal``).

Commands run in their own process group with stdin closed; on timeout or
abort the whole group is killed (TERM, then KILL). Background processes are
tracked per run and stopped by ``after_run`` / ``close_agent``.

Importing this module is cheap: the tools are built on ``register_tools``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from smoke_core.plugin import Agent, RunHandle

__all__ = ["after_run", "background_running", "close_agent", "register_tools"]


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    from ._tools import build_tools

    for tool in build_tools():
        register(tool, group="terminal")


@hookimpl
async def after_run(run: RunHandle) -> None:
    """Stop the background processes this run started (whole process groups)."""
    from ._tools import STATE_KEY, stop_tracked

    tracked = run.state.pop(STATE_KEY, None) or {}
    if tracked:
        await stop_tracked(list(tracked.values()))


@hookimpl
async def close_agent(agent: Agent) -> None:
    """Stop any background process of this agent that is still tracked."""
    from ._tools import LIVE, stop_tracked

    owner = id(agent.options)
    mine = [bg for bg in LIVE.values() if bg.owner == owner]
    if mine:
        await stop_tracked(mine)


def background_running(options: Any = None) -> bool:
    """True while a background command (``run_command`` with ``background: true``)
    started by the agent with these ``options`` (any agent: None) still runs.
    A front end that lets an editor touch files by path asks this first: such a
    command is the model's way to swap a folder for a symlink meanwhile."""
    from ._tools import LIVE

    owner = None if options is None else id(options)
    return any(bg.running and (owner is None or bg.owner == owner) for bg in list(LIVE.values()))

