"""The type of the ``mcp_servers`` settings key, for the settings layers
(validated with a pydantic ``TypeAdapter``; values stay plain dicts, which
:func:`smoke_mcp._config.parse_server` reads).

Imported only by the ``register_settings`` hook.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt, StrictBool
from typing_extensions import TypedDict

Scalar = str | int | float | bool


class OAuthEntry(TypedDict, total=False):
    """``oauth`` of an HTTP server (see :class:`smoke_mcp._config.OAuthConfig`)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    client_id: str
    clientId: str
    client_secret: str
    scope: str
    client_metadata_url: str
    callback_port: int
    callbackPort: int
    grant: Literal["authorization_code", "client_credentials"]
    token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"]
    issuer: str
    private_key: str
    private_key_file: str
    signing_algorithm: str


class MCPSettings(BaseModel):
    """The ``mcp`` settings key: what servers may ask of the agent.

    ``sampling``: ``ask`` (default; a person approves each request, seeing its
    messages) or ``deny``. ``sampling_max_tokens``: the most tokens one
    sampling request may ask for; ``sampling_max_requests``: how many a run
    serves."""

    model_config = ConfigDict(extra="forbid")

    sampling: Literal["ask", "deny"] = "ask"
    sampling_max_tokens: PositiveInt = 4096
    sampling_max_requests: PositiveInt = 20


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
    oauth: StrictBool | OAuthEntry
    protocol: Literal["auto", "legacy", "2026-07-28"]


class MCPJsonDocument(TypedDict):
    """``{"mcpServers": {...}}``, the whole ``.mcp.json`` shape, as ``create_agent`` also accepts it."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    mcpServers: dict[str, MCPServerEntry]


#: ``mcp_servers``: server name → entry (or the ``.mcp.json`` document shape).
MCPServersSetting = dict[str, MCPServerEntry] | MCPJsonDocument

DESCRIPTION = (
    "MCP servers to start, by name: {command, args, env, cwd} for stdio or {url, headers, type, oauth} for "
    "HTTP/SSE, with timeout, connect_timeout, protocol, trusted (start without asking) and disabled. Only trusted "
    "layers may set it."
)
MCP_DESCRIPTION = (
    "What MCP servers may ask of the agent: sampling (ask | deny), sampling_max_tokens, sampling_max_requests. "
    "Only trusted layers may set it."
)
