"""The type of the ``mcp_servers`` settings key, for the settings layers
(validated with a pydantic ``TypeAdapter``; values stay plain dicts, which
:func:`smoke_mcp._config.parse_server` reads).

Imported only by the ``register_settings`` hook.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, PositiveFloat, StrictBool
from typing_extensions import TypedDict

Scalar = str | int | float | bool


class MCPServerEntry(TypedDict, total=False):
    """One server, as in ``.mcp.json`` (Claude Code format) plus Smoke's keys.
    Unknown keys are errors (a typo such as ``comand`` is caught)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    type: Literal["stdio", "http", "streamable-http", "sse"]
    transport: Literal["stdio", "http", "streamable-http", "sse"]
    command: str
    args: list[str | int | float]
    env: dict[str, Scalar]
    cwd: str
    url: str
    headers: dict[str, Scalar]
    timeout: PositiveFloat
    connect_timeout: PositiveFloat
    trusted: StrictBool
    disabled: StrictBool
    sandbox: StrictBool | dict[Literal["network"], StrictBool]


class MCPJsonDocument(TypedDict):
    """``{"mcpServers": {...}}``, the whole ``.mcp.json`` shape, as ``create_agent`` also accepts it."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    mcpServers: dict[str, MCPServerEntry]


#: ``mcp_servers``: server name → entry (or the ``.mcp.json`` document shape).
MCPServersSetting = dict[str, MCPServerEntry] | MCPJsonDocument

DESCRIPTION = (
    "MCP servers to start, by name: {command, args, env, cwd} for stdio or {url, headers, type} for HTTP/SSE, "
    "with timeout, connect_timeout, trusted (start without asking) and disabled. Only trusted layers may set it."
)
