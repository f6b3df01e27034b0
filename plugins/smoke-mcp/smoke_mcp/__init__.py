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

from smoke_core.plugin import hookimpl

from ._config import TRANSPORTS, MCPServerConfig, load_server_configs

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import click

    from smoke_core.plugin import Agent, RunHandle

    from ._prompts import (
        MCPPrompt,
        MCPPromptArgument,
        MCPPromptError,
        MCPPromptInfo,
        MCPPromptList,
        slash_command,
    )
    from ._state import MCPAgentState

__all__ = [
    "TRANSPORTS",
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPPromptError",
    "MCPPromptInfo",
    "MCPPromptList",
    "MCPServerConfig",
    "get_mcp_prompt",
    "list_mcp_prompts",
    "load_server_configs",
    "mcp_state",
    "set_roots",
    "slash_command",
]

_LAZY = {
    "MCPAgentState": "_state",
    "MCPPrompt": "_prompts",
    "MCPPromptArgument": "_prompts",
    "MCPPromptError": "_prompts",
    "MCPPromptInfo": "_prompts",
    "MCPPromptList": "_prompts",
    "slash_command": "_prompts",
}


def mcp_state(agent: Agent) -> MCPAgentState | None:
    """The per-agent :class:`~smoke_mcp._state.MCPAgentState` (live connections,
    approvals, registered tool names), or None before the first run."""
    from ._state import mcp_state as _get

    return _get(agent)


@hookimpl
async def before_run(run: RunHandle) -> None:
    if run.parent is not None:
        # a subagent inherits its parent's tools, MCP ones included: its prompt is the
        # model's, so nothing is started, asked or registered again for it
        return
    from ._state import mcp_state as _get

    state = _get(run.agent, create=True)
    assert state is not None
    await state.prepare_run(run)
    # what a chat offers as /mcp__<server>__<prompt>: the prompts of the servers running now
    from ._prompts import running_prompts

    state.prompts = await running_prompts(state)


@hookimpl
def after_run(run: RunHandle) -> None:
    if run.parent is not None:
        return
    from ._state import mcp_state as _get

    state = _get(run.agent)
    if state is not None and state.current_run is run:
        state.current_run = None  # between runs a server's requests are declined


@hookimpl
def register_slash_commands(register: Callable[..., Any], agent: Agent) -> None:
    """Each prompt of a running MCP server is ``/mcp__<server>__<prompt> [args]``
    in a chat: ``key=value`` pairs, or the text itself for a prompt with one
    argument. The filled-in prompt is sent to the model as the person's next
    message (it is the server's text: shown as such)."""
    from ._prompts import slash_handler
    from ._state import mcp_state as _get

    state = _get(agent)
    for info in state.prompts if state is not None else ():
        register(info.command.lstrip("/"), slash_handler(info),
                 description=info.description or info.title or f"the prompt {info.name} of the MCP server {info.server}",
                 usage=f"{info.command} " + " ".join(f"{a.name}=…" for a in info.arguments))


@hookimpl
async def close_agent(agent: Agent) -> None:
    from ._state import pop_state

    state = pop_state(agent)
    if state is not None:
        await state.aclose()


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from ._settings import DESCRIPTION, MCP_DESCRIPTION, MCPServersSetting, MCPSettings

    # trusted_only: a repository's own settings may not add servers (nor trust them);
    # code_only: smoke-mcp reads the settings files and .mcp.json itself, keeping
    # where each server came from (its trust depends on it)
    register("mcp_servers", MCPServersSetting, default=None, trusted_only=True, description=DESCRIPTION,
             code_only=True)
    # trusted_only: a repository must not turn "deny" back into "ask", nor raise the limits
    register("mcp", MCPSettings, default=MCPSettings(), trusted_only=True, description=MCP_DESCRIPTION)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import mcp_group

    cli.add_command(mcp_group)


async def get_mcp_prompt(agent: Agent, server: str, prompt: str,
                         arguments: dict[str, str] | None = None) -> MCPPrompt:
    """Fill in the prompt ``prompt`` of the MCP server ``server`` with
    ``arguments`` (text values) and return it (:class:`MCPPrompt`: its
    messages; ``.to_task()`` turns them into a task for ``agent.run``).

    Uses the server the agent runs; starts it only if it would start without
    asking (trusted, or approved in an earlier run of this agent). Raises
    :class:`MCPPromptError`, whose message says what to do, for an unknown
    server or prompt, an unknown / missing / non-text argument, a server not
    approved yet, or the server's own error."""
    from ._prompts import get_mcp_prompt as _get

    return await _get(agent, server, prompt, arguments)


async def set_roots(agent: Agent, paths: list[str | Path] | None) -> int:
    """The folders the agent's MCP servers see as its roots (``roots/list``):
    ``paths``, or the workspace again with None. Servers that listed the
    roots before are told they changed (``notifications/roots/list_changed``;
    servers on the 2026-07-28 protocol ask again per request instead).
    Returns how many servers were told."""
    from pathlib import Path

    from ._state import mcp_state as _get

    state = _get(agent, create=True)
    assert state is not None
    state.roots = None if paths is None else [Path(p) for p in paths]
    told = 0
    for conn in list(state.connections.values()):
        try:
            told += bool(await conn.roots_changed())
        except Exception as exc:  # a dead server is told when it restarts (it lists the roots again)
            import logging

            logging.getLogger("smoke.mcp").info("smoke-mcp: could not tell %s its roots changed: %s",
                                                conn.config.name, exc)
    return told


async def list_mcp_prompts(agent: Agent, server: str | None = None) -> MCPPromptList:
    """The prompts of the agent's MCP servers (:class:`MCPPromptList`), each
    with its chat command ``/mcp__<server>__<prompt>``; servers that could not
    be asked (not approved yet, failed, no prompts) are in ``unavailable``
    with the reason. With ``server``, only that one, and a problem raises
    :class:`MCPPromptError`."""
    from ._prompts import list_mcp_prompts as _list

    return await _list(agent, server)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smoke_mcp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
