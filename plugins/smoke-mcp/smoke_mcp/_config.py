"""MCP server configuration: ``create_agent(mcp_servers=...)``,
``.smoke/config.yaml`` (key ``mcp_servers``), ``.mcp.json`` in the
workspace (Claude Code / Claude Desktop format) and the user config
``~/.config/smoke/config.yaml``.

Parsing never raises: a bad file or entry becomes a problem message (naming
the file and what is wrong) and the other servers still load.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Transport names accepted in ``type`` (``http`` is an alias of ``streamable-http``).
TRANSPORTS = ("stdio", "http", "streamable-http", "sse")
DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 30.0

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(slots=True)
class MCPServerConfig:
    """One configured MCP server.

    ``transport`` is ``"stdio"`` (``command``/``args``/``env``/``cwd``),
    ``"streamable-http"`` or ``"sse"`` (``url``/``headers``). ``timeout`` is
    the per-call timeout and ``connect_timeout`` bounds start + initialize +
    tools/list, both in seconds. ``trusted`` servers start without asking; it
    is honoured only for servers passed in code (``create_agent(mcp_servers=)``)
    and in the user config, never from files inside the workspace.
    """

    name: str
    transport: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    trusted: bool = False
    source: str = "create_agent(mcp_servers=...)"

    def target(self) -> dict[str, Any]:
        """What a person approves: the command line or the URL (never header values)."""
        if self.transport == "stdio":
            return {"command": self.command, "args": list(self.args)}
        return {"url": self.url, "transport": self.transport}

    def describe(self) -> str:
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args]).strip()
        return f"{self.url} ({self.transport})"


@dataclass(slots=True)
class LoadedConfig:
    servers: dict[str, MCPServerConfig]
    problems: list[str]


def _expand(value: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them."""

    def sub(m: re.Match[str]) -> str:
        return os.environ.get(m.group(1), m.group(2) if m.group(2) is not None else "")

    return _ENV_REF.sub(sub, value)


def parse_server(name: Any, raw: Any, *, source: str, allow_trusted: bool) -> tuple[MCPServerConfig | None, str | None]:
    """Turn one entry into a config. Returns (config, None), (None, problem),
    or (None, None) for an entry that is switched off (``disabled: true``)."""
    where = f"{source}: server {name!r}"
    if not isinstance(name, str) or not name.strip():
        return None, f"{source}: server names must be non-empty strings, got {name!r}"
    if not isinstance(raw, dict):
        return None, f"{where} must be an object with 'command' or 'url', got {type(raw).__name__}"
    if raw.get("disabled") is True:
        return None, None
    kind = raw.get("type", raw.get("transport"))
    if kind is not None and kind not in TRANSPORTS:
        return None, f"{where}: unknown type {kind!r}; use one of {', '.join(TRANSPORTS)}"
    command, url = raw.get("command"), raw.get("url")
    if kind is None:
        kind = "stdio" if command is not None else "streamable-http" if url is not None else None
    if kind is None:
        return None, f"{where} has neither 'command' (stdio) nor 'url' (HTTP); add one of them"
    if kind == "http":
        kind = "streamable-http"

    def num(key: str, default: float) -> float | str:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            return f"{where}: '{key}' must be a positive number of seconds, got {value!r}"
        return float(value)

    timeout, connect_timeout = num("timeout", DEFAULT_CALL_TIMEOUT), num("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    for value in (timeout, connect_timeout):
        if isinstance(value, str):
            return None, value
    assert isinstance(timeout, float) and isinstance(connect_timeout, float)
    cfg = MCPServerConfig(
        name=name, transport=kind, timeout=timeout, connect_timeout=connect_timeout, source=source,
        trusted=bool(raw.get("trusted")) and allow_trusted,
    )
    if kind == "stdio":
        if not isinstance(command, str) or not command.strip():
            return None, f"{where}: 'command' must be a non-empty string (the program to run), got {command!r}"
        args = raw.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            return None, f"{where}: 'args' must be a list of strings, got {args!r}"
        env = raw.get("env", {}) or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
            return None, f"{where}: 'env' must be an object of NAME: value strings"
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            return None, f"{where}: 'cwd' must be a string path, got {cwd!r}"
        cfg.command = _expand(command)
        cfg.args = [_expand(str(a)) for a in args]
        cfg.env = {k: _expand(str(v)) for k, v in env.items()}
        cfg.cwd = _expand(cwd) if cwd else None
    else:
        if not isinstance(url, str) or not url.strip():
            return None, f"{where}: type {kind!r} needs a 'url' string"
        url = _expand(url)
        if not url.startswith(("http://", "https://")):
            return None, f"{where}: 'url' must start with http:// or https://, got {url!r}"
        headers = raw.get("headers", {}) or {}
        if not isinstance(headers, dict) or not all(isinstance(k, str) for k in headers):
            return None, f"{where}: 'headers' must be an object of Header: value strings"
        cfg.url = url
        cfg.headers = {k: _expand(str(v)) for k, v in headers.items()}
    return cfg, None


def _parse_block(block: Any, *, source: str, allow_trusted: bool, into: dict[str, MCPServerConfig],
                 problems: list[str]) -> None:
    if block is None:
        return
    if not isinstance(block, dict):
        problems.append(f"{source}: the MCP server list must be an object mapping names to servers, "
                        f"got {type(block).__name__}")
        return
    for name, raw in block.items():
        cfg, problem = parse_server(name, raw, source=source, allow_trusted=allow_trusted)
        if problem:
            problems.append(problem)
        if cfg is not None:
            into[name] = cfg


def _read_mcp_json(path: Path, into: dict[str, MCPServerConfig], problems: list[str]) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or exc}); its MCP servers are skipped")
        return
    except ValueError as exc:
        problems.append(f"{path} is not valid JSON ({exc}); its MCP servers are skipped — fix the file")
        return
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        problems.append(f'{path}: expected {{"mcpServers": {{name: {{command, args}} | {{url}}}}}}; '
                        f"its MCP servers are skipped")
        return
    _parse_block(data.get("mcpServers"), source=str(path), allow_trusted=False, into=into, problems=problems)


def _read_yaml(path: Path, into: dict[str, MCPServerConfig], problems: list[str], *, allow_trusted: bool) -> None:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or exc}); its MCP servers are skipped")
        return
    except yaml.YAMLError as exc:
        problems.append(f"{path} is not valid YAML ({exc}); its MCP servers are skipped — fix the file")
        return
    if data is None:
        return
    if not isinstance(data, dict):
        problems.append(f"{path}: expected a mapping at the top level; its MCP servers are skipped")
        return
    _parse_block(data.get("mcp_servers"), source=f"{path} (mcp_servers)", allow_trusted=allow_trusted,
                 into=into, problems=problems)


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "smoke" / "config.yaml"


def load_server_configs(workspace_root: Path, from_code: Any = None) -> LoadedConfig:
    """All configured servers by name. Precedence, lowest first: user config,
    ``.mcp.json``, ``.smoke/config.yaml``, ``create_agent(mcp_servers=)``;
    a name defined twice takes the higher one whole."""
    servers: dict[str, MCPServerConfig] = {}
    problems: list[str] = []
    user = user_config_path()
    if user.is_file():
        _read_yaml(user, servers, problems, allow_trusted=True)
    mcp_json = workspace_root / ".mcp.json"
    if mcp_json.is_file():
        _read_mcp_json(mcp_json, servers, problems)
    smoke_yaml = workspace_root / ".smoke" / "config.yaml"
    if smoke_yaml.is_file():
        _read_yaml(smoke_yaml, servers, problems, allow_trusted=False)
    if from_code is not None:
        if isinstance(from_code, dict) and isinstance(from_code.get("mcpServers"), dict):
            from_code = from_code["mcpServers"]
        _parse_block(from_code, source="create_agent(mcp_servers=...)", allow_trusted=True, into=servers,
                     problems=problems)
    return LoadedConfig(servers, problems)
