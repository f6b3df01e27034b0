"""MCP server configuration: ``create_agent(mcp_servers=...)``,
``.smoke/config.yaml`` and ``.smoke/config.local.yaml`` (key
``mcp_servers``), ``.mcp.json`` in the workspace (Claude Code / Claude
Desktop format) and the user config ``~/.config/smoke/config.yaml``.

Each server remembers where it came from (:attr:`MCPServerConfig.origin`):
``code``, ``user`` or ``repository`` (a file inside the workspace). A
repository is text from a stranger until the person trusts its folder: its
``trusted`` is never honoured, and while the folder is untrusted its entries
may not expand variables that hold secrets.

Parsing never raises: a bad file or entry becomes a problem message (naming
the file and what is wrong) and the other servers still load.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

#: Transport names accepted in ``type`` (``http`` is an alias of ``streamable-http``).
TRANSPORTS = ("stdio", "http", "streamable-http", "sse")
DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 30.0

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: Variable names an untrusted repository's MCP config may not expand (besides
#: provider keys, see smoke_core.secrets.is_secret_name).
_SECRET_VAR = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)

Origin = Literal["code", "user", "repository"]
#: ``protocol``: ``auto`` negotiates (``server/discover`` of 2026-07-28, else the
#: 2025 ``initialize`` handshake); ``legacy`` only handshakes; a version pins it
PROTOCOLS = ("auto", "legacy", "2026-07-28")
_OAUTH_KEYS = {
    "client_id": "client_id", "clientId": "client_id", "client_secret": "client_secret",
    "scope": "scope", "client_metadata_url": "client_metadata_url", "callback_port": "callback_port",
    "callbackPort": "callback_port", "grant": "grant", "token_endpoint_auth_method": "token_endpoint_auth_method",
    "issuer": "issuer", "private_key": "private_key", "private_key_file": "private_key_file",
    "signing_algorithm": "signing_algorithm",
}
#: what a workspace file may never hand a server: it is the person's to give
_OAUTH_SECRETS = ("client_secret", "private_key", "private_key_file")


@dataclass(slots=True)
class OAuthConfig:
    """How Smoke logs in to an HTTP server (key ``oauth`` of an entry).

    By default every HTTP server may ask for an OAuth login (a 401 answer
    starts the SDK's discovery); ``oauth: false`` turns it off, and an entry
    with its own ``Authorization`` header and no ``oauth`` key keeps to that
    header. ``client_id`` / ``client_secret``: a pre-registered client;
    ``grant: client_credentials`` for machines (no browser; with
    ``client_secret`` or ``private_key`` / ``private_key_file`` for
    ``private_key_jwt``); ``scope``; ``client_metadata_url`` (a client-ID
    metadata document, https); ``callback_port`` for the browser's answer."""

    enabled: bool = True
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    client_metadata_url: str | None = None
    callback_port: int | None = None
    grant: str = "authorization_code"
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None
    private_key: str | None = None
    signing_algorithm: str | None = None

    def public(self) -> dict[str, Any]:
        """What a person sees and approves (never a secret)."""
        out: dict[str, Any] = {"grant": self.grant}
        for key in ("client_id", "scope", "client_metadata_url", "callback_port", "issuer"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.client_secret is not None:
            out["client_secret"] = "(set)"
        if self.private_key is not None:
            out["private_key"] = "(set)"
        return out


def _parse_oauth(raw: Any, where: str, *, from_workspace: bool) -> tuple[OAuthConfig | None, str | None, list[str]]:
    """(config, problem that skips the entry, notes that do not)."""
    if raw is None:
        return OAuthConfig(), None, []
    if raw is False:
        return OAuthConfig(enabled=False), None, []
    if raw is True:
        return OAuthConfig(), None, []
    if not isinstance(raw, dict):
        return None, f"{where}: 'oauth' must be false or an object (client_id, scope, ...), got {raw!r}", []
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in raw.items():
        name = _OAUTH_KEYS.get(key)
        if name is None:
            return None, (f"{where}: 'oauth' has no key {key!r} (known: "
                          f"{', '.join(sorted(k for k in _OAUTH_KEYS if '_' in k or k.islower()))})"), []
        if name in _OAUTH_SECRETS and from_workspace:
            notes.append(f"{where}: 'oauth.{key}' is ignored: a file in the workspace may name a server, never "
                         f"its secrets; define the server (same name and url) with its 'oauth' settings in your "
                         f"user config ({user_config_path()})")
            continue
        values[name] = value
    port = values.get("callback_port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        return None, f"{where}: 'oauth.callback_port' must be a port number, got {port!r}", []
    grant = values.get("grant", "authorization_code")
    if grant not in ("authorization_code", "client_credentials"):
        return None, f"{where}: 'oauth.grant' must be authorization_code or client_credentials, got {grant!r}", []
    for key in ("client_id", "client_secret", "scope", "client_metadata_url", "token_endpoint_auth_method",
                "issuer", "private_key", "private_key_file", "signing_algorithm"):
        if key in values and not isinstance(values[key], str):
            return None, f"{where}: 'oauth.{key}' must be a string, got {values[key]!r}", []
    for key in ("client_id", "client_secret", "issuer", "client_metadata_url"):
        if isinstance(values.get(key), str):
            values[key] = _expand(values[key])
    key_file = values.pop("private_key_file", None)
    if key_file is not None:
        try:
            values["private_key"] = Path(_expand(key_file)).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            return None, f"{where}: 'oauth.private_key_file' cannot be read ({exc.strerror or exc})", notes
    url = values.get("client_metadata_url")
    if url is not None and not (url.startswith("https://") and urlsplit(url).path not in ("", "/")):
        return None, (f"{where}: 'oauth.client_metadata_url' must be an https URL with a path (a client-ID "
                      f"metadata document), got {url!r}"), notes
    if grant == "client_credentials":
        if not values.get("client_id"):
            return None, f"{where}: 'oauth.grant: client_credentials' needs 'oauth.client_id'", notes
        if not values.get("client_secret") and not values.get("private_key"):
            return None, (f"{where}: 'oauth.grant: client_credentials' needs 'oauth.client_secret' or "
                          f"'oauth.private_key_file' (in your user config, never in a workspace file)"), notes
    return OAuthConfig(**values), None, notes


@dataclass(slots=True)
class MCPServerConfig:
    """One configured MCP server.

    ``transport`` is ``"stdio"`` (``command``/``args``/``env``/``cwd``),
    ``"streamable-http"`` or ``"sse"`` (``url``/``headers``). ``timeout`` is
    the per-call timeout and ``connect_timeout`` bounds start + initialize +
    tools/list, both in seconds. ``trusted`` servers start without asking; it
    is honoured only for servers passed in code (``create_agent(mcp_servers=)``)
    and in the user config, never from files inside the workspace (unless the
    user config marks the same server, same command or URL, as trusted).
    ``origin`` says where the entry came from: ``code``, ``user`` or
    ``repository``.
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
    #: run a stdio server in the OS sandbox: True, False, or None for the
    #: settings default (``sandbox.mcp``); ``sandbox_network`` lets it reach the network
    sandbox: bool | None = None
    sandbox_network: bool = False
    source: str = "create_agent(mcp_servers=...)"
    origin: Origin = "code"
    #: HTTP servers: how to log in (None for stdio)
    oauth: OAuthConfig | None = None
    protocol: str = "auto"
    #: sha256 of what the entry says runs (see :func:`entry_digest`): what a
    #: person approves for a workspace's own server
    digest: str = ""

    def target(self) -> dict[str, Any]:
        """What a person approves: the command line or the URL, and the names
        (never the values) of the environment variables and headers it sets."""
        if self.transport == "stdio":
            out: dict[str, Any] = {"command": self.command, "args": list(self.args)}
            if self.env:
                out["env"] = sorted(self.env)
            return out
        out = {"url": self.url, "transport": self.transport}
        if self.headers:
            out["headers"] = sorted(self.headers)
        if self.oauth is not None and self.oauth.enabled and (self.oauth.client_id or self.oauth.grant != "authorization_code"):
            out["oauth"] = self.oauth.public()
        return out

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


def is_secret_variable(name: str) -> bool:
    """A provider key (:func:`smoke_core.secrets.is_secret_name`) or a name that
    says it holds a secret (``GITHUB_TOKEN``, ``DB_PASSWORD``, ``AWS_SECRET_ACCESS_KEY``...)."""
    from smoke_core.secrets import is_secret_name

    return is_secret_name(name) or bool(_SECRET_VAR.search(name))


def secret_references(raw: dict[str, Any]) -> list[str]:
    """Secret-holding variables that ``${...}`` in an entry would expand."""
    texts: list[str] = []
    for key in ("command", "cwd", "url"):
        if isinstance(raw.get(key), str):
            texts.append(raw[key])
    for key in ("args",):
        if isinstance(raw.get(key), list):
            texts.extend(str(a) for a in raw[key])
    for key in ("env", "headers"):
        if isinstance(raw.get(key), dict):
            texts.extend(str(v) for v in raw[key].values())
    found = {m.group(1) for text in texts for m in _ENV_REF.finditer(text)}
    return sorted(n for n in found if is_secret_variable(n))


def identity(raw: Any) -> tuple[Any, ...] | None:
    """What makes two entries the same server, before any expansion: the
    transport, the command line or URL, environment and headers (not the
    timeouts, not ``trusted``). None for an entry that is not an object."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type", raw.get("transport"))
    if kind is None:
        kind = "stdio" if raw.get("command") is not None else "streamable-http"
    if kind == "http":
        kind = "streamable-http"

    def mapping(value: Any) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((str(k), str(v)) for k, v in value.items())) if isinstance(value, dict) else ()

    args = raw.get("args") or []
    return (kind, str(raw.get("command")), tuple(str(a) for a in args) if isinstance(args, list) else str(args),
            mapping(raw.get("env")), str(raw.get("cwd")), str(raw.get("url")), mapping(raw.get("headers")))


def entry_digest(raw: dict[str, Any]) -> str:
    """sha256 of what an entry says runs, as written (before ``${VAR}``
    expansion): transport, command, args, env, cwd, URL, headers, sandbox,
    protocol and OAuth settings — not the timeouts, ``trusted`` or ``disabled``."""
    import hashlib

    kind = raw.get("type", raw.get("transport"))
    if kind is None:
        kind = "stdio" if raw.get("command") is not None else "streamable-http"
    if kind == "http":
        kind = "streamable-http"
    what = {"type": kind, **{k: raw.get(k) for k in ("command", "args", "env", "cwd", "url", "headers", "sandbox",
                                                      "protocol", "oauth")}}
    text = json.dumps(what, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def parse_server(name: Any, raw: Any, *, source: str, allow_trusted: bool, origin: Origin = "code",
                 refuse_secrets: bool = False, notes: list[str] | None = None) -> tuple[MCPServerConfig | None, str | None]:
    """Turn one entry into a config. Returns (config, None), (None, problem),
    or (None, None) for an entry that is switched off (``disabled: true``).
    ``notes`` collects problems that do not skip the entry (a secret a
    workspace file may not set, ignored).

    ``refuse_secrets``: the entry comes from a workspace the person has not
    trusted, so ``${VAR}`` naming a secret (:func:`is_secret_variable`) is a
    problem instead of being expanded."""
    where = f"{source}: server {name!r}"
    if not isinstance(name, str) or not name.strip():
        return None, f"{source}: server names must be non-empty strings, got {name!r}"
    if not isinstance(raw, dict):
        return None, f"{where} must be an object with 'command' or 'url', got {type(raw).__name__}"
    for flag in ("disabled", "trusted"):
        if flag in raw and not isinstance(raw[flag], bool):
            return None, f"{where}: '{flag}' must be true or false, got {raw[flag]!r}"
    sandbox = raw.get("sandbox")
    if sandbox is not None and not isinstance(sandbox, bool) and not (
        isinstance(sandbox, dict) and set(sandbox) <= {"network"} and isinstance(sandbox.get("network", False), bool)
    ):
        return None, f"{where}: 'sandbox' must be true, false or {{\"network\": true}}, got {sandbox!r}"
    if raw.get("disabled") is True:
        return None, None
    if refuse_secrets:
        secrets = secret_references(raw)
        if secrets:
            return None, (
                f"{where} reads the secret variable{'s' if len(secrets) > 1 else ''} {', '.join(secrets)} "
                f"from your environment; a workspace you have not trusted may not pass secrets to an MCP "
                f"server, so the server is skipped. Trust the folder (smoke trust) or define the server in "
                f"{user_config_path()}"
            )
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
    protocol = raw.get("protocol", "auto")
    if protocol not in PROTOCOLS:
        return None, f"{where}: 'protocol' must be one of {', '.join(PROTOCOLS)}, got {protocol!r}"
    cfg = MCPServerConfig(
        name=name, transport=kind, timeout=timeout, connect_timeout=connect_timeout, source=source,
        trusted=raw.get("trusted") is True and allow_trusted, origin=origin,
        sandbox=None if sandbox is None else bool(sandbox),
        sandbox_network=isinstance(sandbox, dict) and sandbox.get("network") is True,
        protocol=protocol, digest=entry_digest(raw),
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
        if "oauth" in raw:
            return None, f"{where}: 'oauth' is for HTTP servers (url); a stdio server gets its credentials in 'env'"
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
        raw_oauth = raw.get("oauth")
        if raw_oauth is None and any(k.lower() == "authorization" for k in cfg.headers):
            raw_oauth = False  # the entry brings its own credentials
        oauth, problem, oauth_notes = _parse_oauth(raw_oauth, where, from_workspace=origin == "repository")
        if problem:
            return None, problem
        if notes is not None:
            notes.extend(oauth_notes)
        cfg.oauth = oauth
    return cfg, None


@dataclass(slots=True)
class _Reading:
    """What the files said so far: parsed servers, problems, and the raw
    entries of each origin (to recognise them when they come back through
    ``create_agent(mcp_servers=...)``)."""

    servers: dict[str, MCPServerConfig] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    raw: dict[str, dict[str, tuple[Any, str]]] = field(default_factory=lambda: {"user": {}, "repository": {}})


def _parse_block(block: Any, *, source: str, origin: Origin, reading: _Reading, refuse_secrets: bool = False,
                 skip: dict[str, tuple[Any, str]] | None = None) -> None:
    if block is None:
        return
    if isinstance(block, dict) and origin == "code" and isinstance(block.get("mcpServers"), dict):
        block = block["mcpServers"]
    if not isinstance(block, dict):
        reading.problems.append(f"{source}: the MCP server list must be an object mapping names to servers, "
                                f"got {type(block).__name__}")
        return
    for name, raw in block.items():
        if skip is not None and name in skip and identity(skip[name][0]) == identity(raw):
            # the workspace's own entry, passed back through the settings: it stays the workspace's
            continue
        if origin in reading.raw:
            reading.raw[origin][name] = (raw, source)
        cfg, problem = parse_server(name, raw, source=source, allow_trusted=origin != "repository",
                                    origin=origin, refuse_secrets=refuse_secrets, notes=reading.problems)
        if problem:
            reading.problems.append(problem)
        if cfg is not None:
            reading.servers[name] = cfg


def _read_mcp_json(path: Path, reading: _Reading, *, refuse_secrets: bool) -> None:
    problems = reading.problems
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
    _parse_block(data.get("mcpServers"), source=str(path), origin="repository", reading=reading,
                 refuse_secrets=refuse_secrets)


def _read_yaml(path: Path, reading: _Reading, *, origin: Origin, refuse_secrets: bool = False) -> None:
    import yaml

    problems = reading.problems
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
    _parse_block(data.get("mcp_servers"), source=f"{path} (mcp_servers)", origin=origin, reading=reading,
                 refuse_secrets=refuse_secrets)


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "smoke" / "config.yaml"


def load_server_configs(workspace_root: Path, from_code: Any = None, *,
                        workspace_trusted: bool = True) -> LoadedConfig:
    """All configured servers by name. Precedence, lowest first: user config,
    ``.mcp.json``, ``.smoke/config.yaml``, ``.smoke/config.local.yaml``,
    ``create_agent(mcp_servers=)``; a name defined twice takes the higher one whole.

    An entry in ``from_code`` identical (:func:`identity`) to one in a
    workspace file is that file's entry — ``smoke run`` and the settings
    layers pass the files' servers back through ``create_agent`` — so it
    keeps the repository's origin and its ``trusted`` is ignored. A
    repository server is trusted only when the user config marks a server of
    the same name and identity as trusted. With ``workspace_trusted=False``
    the workspace files may not expand secret variables.
    """
    reading = _Reading()
    refuse = not workspace_trusted
    user = user_config_path()
    if user.is_file():
        _read_yaml(user, reading, origin="user")
    mcp_json = workspace_root / ".mcp.json"
    if mcp_json.is_file():
        _read_mcp_json(mcp_json, reading, refuse_secrets=refuse)
    for name in ("config.yaml", "config.local.yaml"):
        path = workspace_root / ".smoke" / name
        if path.is_file():
            _read_yaml(path, reading, origin="repository", refuse_secrets=refuse)
    if from_code is not None:
        _parse_block(from_code, source="create_agent(mcp_servers=...)", origin="code", reading=reading,
                     skip=reading.raw["repository"])
    for name, cfg in reading.servers.items():
        if cfg.origin != "repository" or name not in reading.raw["user"]:
            continue
        user_raw, _ = reading.raw["user"][name]
        repo_raw, _ = reading.raw["repository"][name]
        if cfg.transport != "stdio" and isinstance(user_raw, dict) and isinstance(user_raw.get("oauth"), dict):
            # the person's own login settings (their client secret) for the server the workspace names
            mine, _, _ = _parse_oauth(user_raw["oauth"], f"{user}: server {name!r}", from_workspace=False)
            if mine is not None and _expand(str(user_raw.get("url"))) == cfg.url:
                cfg.oauth = mine
        if isinstance(user_raw, dict) and user_raw.get("trusted") is True and identity(user_raw) == identity(repo_raw):
            cfg.trusted = True
            cfg.source += f" (trusted in {user})"
    return LoadedConfig(reading.servers, reading.problems)
