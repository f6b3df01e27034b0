"""smoke-mcp: Smoke's MCP client plugin, on the official ``mcp`` SDK.

MCP servers come from ``create_agent(mcp_servers=...)``, ``.smoke/config.yaml``
and ``.smoke/config.local.yaml`` (``mcp_servers``), ``.mcp.json`` in the
workspace and ``~/.config/smoke/config.yaml``. When a run starts, each server
not yet approved asks for permission (``permission.required`` with kind
``mcp_server``), approved servers start concurrently, and their tools are
registered as ``<server>__<tool>`` before the model is first called.
Connections live until ``await agent.aclose()``. A server defined by the
workspace's own files never starts without a person's answer while the
workspace is untrusted.

Importing this module is cheap: ``mcp`` is imported inside the hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

from ._config import TRANSPORTS, MCPServerConfig, load_server_configs

if TYPE_CHECKING:
    from collections.abc import Callable

    import click

    from smoke_core.plugin import Agent, RunHandle

    from ._state import MCPAgentState

__all__ = [
    "TRANSPORTS",
    "MCPServerConfig",
    "load_server_configs",
    "mcp_state",
]


def mcp_state(agent: Agent) -> MCPAgentState | None:
    """The per-agent :class:`~smoke_mcp._state.MCPAgentState` (live connections,
    approvals, registered tool names), or None before the first run."""
    from ._state import mcp_state as _get

    return _get(agent)


@hookimpl
async def before_run(run: RunHandle) -> None:
    from ._state import mcp_state as _get

    state = _get(run.agent, create=True)
    assert state is not None
    await state.prepare_run(run)


@hookimpl
async def close_agent(agent: Agent) -> None:
    from ._state import pop_state

    state = pop_state(agent)
    if state is not None:
        await state.aclose()


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from ._settings import DESCRIPTION, MCPServersSetting

    # trusted_only: a repository's own settings may not add servers (nor trust them);
    # code_only: smoke-mcp reads the settings files and .mcp.json itself, keeping
    # where each server came from (its trust depends on it)
    register("mcp_servers", MCPServersSetting, default=None, trusted_only=True, description=DESCRIPTION,
             code_only=True)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import mcp_group

    cli.add_command(mcp_group)


def __getattr__(name: str) -> Any:
    if name == "MCPAgentState":
        from ._state import MCPAgentState

        return MCPAgentState
    raise AttributeError(f"module 'smoke_mcp' has no attribute {name!r}")
