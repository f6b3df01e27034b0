"""OAuth 2.1 for HTTP MCP servers, on the SDK's own client auth
(``mcp.client.auth``): discovery, registration (dynamic, client-ID metadata
document or pre-registered), PKCE, scopes and step-up, refresh — all the SDK's.

What Smoke adds:

- **where tokens live** (:class:`TokenStore`): the system keyring (the
  ``keyring`` library) where one exists, else a ``0600`` file
  ``$XDG_STATE_HOME/smoke/mcp-tokens.json`` (``~/.local/state``); never the
  workspace, never an event, a session or a log. One record per server URL:
  the tokens with their expiry time, the client registration, and the
  metadata discovered at login (so a refresh after a restart goes to the
  right token endpoint);
- **the browser step** (:class:`LoopbackLogin`): the authorization URL is
  opened in the person's browser (``webbrowser``, which honours ``BROWSER``)
  and the answer comes back to a listener on ``127.0.0.1``;
- **who may start a login**: ``smoke mcp login NAME``, or a person asked
  during a run (``host.login``); with nobody to ask, :class:`LoginRequired`
  says which command fixes it.

The SDK is imported inside functions: importing this module is cheap.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._config import MCPServerConfig

log = logging.getLogger("smoke.mcp")

KEYRING_SERVICE = "smoke-mcp"
#: how long a login waits for the browser to come back
LOGIN_TIMEOUT = 300.0


class LoginRequired(Exception):
    """The server needs a login and nobody could (or would) log in now."""


class LoginFailed(Exception):
    """A login was attempted and did not work (the message says why)."""


# ---------------------------------------------------------------- where tokens live


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "smoke"


def token_file() -> Path:
    return _state_dir() / "mcp-tokens.json"


def _keyring() -> Any:
    """The keyring backend to use, or None (no keyring on this machine, or
    ``SMOKE_MCP_TOKENS=file``)."""
    if os.environ.get("SMOKE_MCP_TOKENS", "").lower() == "file":
        return None
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration: use the file
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    name = type(backend).__module__
    if name.startswith("keyring.backends.null"):
        return None
    return backend


class TokenStore:
    """Records by server URL, in the keyring or the ``0600`` file."""

    def __init__(self) -> None:
        self._backend = _keyring()

    @property
    def kind(self) -> str:
        return "keyring" if self._backend is not None else "file"

    def location(self) -> str:
        if self._backend is not None:
            return f"the system keyring ({type(self._backend).__name__}, service {KEYRING_SERVICE!r})"
        return str(token_file())

    def get(self, url: str) -> dict[str, Any] | None:
        if self._backend is not None:
            try:
                raw = self._backend.get_password(KEYRING_SERVICE, url)
            except Exception as exc:
                log.warning("smoke-mcp: the keyring could not be read (%s)", type(exc).__name__)
                return None
            try:
                value = json.loads(raw) if raw else None
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
        return self._read_file().get(url)

    def put(self, url: str, record: dict[str, Any]) -> None:
        if self._backend is not None:
            self._backend.set_password(KEYRING_SERVICE, url, json.dumps(record))
            return
        data = self._read_file()
        data[url] = record
        self._write_file(data)

    def delete(self, url: str) -> bool:
        if self._backend is not None:
            try:
                self._backend.delete_password(KEYRING_SERVICE, url)
            except Exception:  # keyring.errors.PasswordDeleteError: nothing stored
                return False
            return True
        data = self._read_file()
        if url not in data:
            return False
        del data[url]
        self._write_file(data)
        return True

    def _read_file(self) -> dict[str, dict[str, Any]]:
        path = token_file()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("smoke-mcp: %s cannot be read (%s); logins stored there are ignored", path, exc)
            return {}
        return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}

    def _write_file(self, data: dict[str, Any]) -> None:
        path = token_file()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def record_key(cfg: MCPServerConfig) -> str:
    """The key of a server's login: its URL without a fragment."""
    return (cfg.url or "").split("#", 1)[0]


def auth_state(cfg: MCPServerConfig, store: TokenStore | None = None) -> str:
    """What ``smoke mcp list`` says about a server's login."""
    if cfg.transport == "stdio":
        return "—"
    oauth = cfg.oauth
    if oauth is None or not oauth.enabled:
        return "headers" if cfg.headers else "none"
    record = (store or TokenStore()).get(record_key(cfg))
    tokens = (record or {}).get("tokens")
    if oauth.grant == "client_credentials":
        return "client credentials" + (" (token held)" if tokens else "")
    if not tokens:
        return f"not logged in (smoke mcp login {cfg.name})" if "Authorization" not in cfg.headers else "headers"
    expires_at = (record or {}).get("expires_at")
    refresh = " (refreshes itself)" if tokens.get("refresh_token") else ""
    if expires_at is None:
        return "logged in"
    left = float(expires_at) - time.time()
    if left > 0:
        return f"logged in, {_duration(left)} left{refresh}"
    return "login expired" + (refresh if refresh else f": smoke mcp login {cfg.name}")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 5400:
        return f"{int(seconds // 60)} min"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


class ServerTokens:
    """The SDK's ``TokenStorage`` for one server, on a :class:`TokenStore`
    record. Pre-registered credentials (``client_id`` / ``client_secret`` in
    the entry) are the client registration and are never stored."""

    def __init__(self, store: TokenStore, cfg: MCPServerConfig, *, redirect_uri: str | None) -> None:
        self.store = store
        self.key = record_key(cfg)
        self.name = cfg.name
        self.preregistered: Any = None
        self.context: Any = None  # the provider's OAuthContext, to keep what discovery found
        oauth = cfg.oauth
        if oauth is not None and oauth.client_id and oauth.grant == "authorization_code":
            from mcp.shared.auth import OAuthClientInformationFull

            self.preregistered = OAuthClientInformationFull(
                client_id=oauth.client_id, client_secret=oauth.client_secret,
                redirect_uris=[redirect_uri] if redirect_uri else None,  # type: ignore[list-item]
                token_endpoint_auth_method=oauth.token_endpoint_auth_method
                or ("client_secret_basic" if oauth.client_secret else "none"),
            )

    def record(self) -> dict[str, Any]:
        return self.store.get(self.key) or {}

    def _save(self, record: dict[str, Any]) -> None:
        record["server"] = self.name
        ctx = self.context
        if ctx is not None:
            for key, value in (("oauth_metadata", ctx.oauth_metadata),
                               ("protected_resource_metadata", ctx.protected_resource_metadata),
                               ("auth_server_url", ctx.auth_server_url)):
                if value is not None:
                    record[key] = value if isinstance(value, str) else value.model_dump(mode="json", exclude_none=True)
        self.store.put(self.key, record)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.record().get("tokens")
        try:
            return OAuthToken.model_validate(tokens) if tokens else None
        except Exception:
            return None

    async def set_tokens(self, tokens: Any) -> None:
        record = self.record()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._save(record)

    async def get_client_info(self) -> Any:
        if self.preregistered is not None:
            return self.preregistered
        from mcp.shared.auth import OAuthClientInformationFull

        info = self.record().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(info) if info else None
        except Exception:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        if self.preregistered is not None and client_info.client_id == self.preregistered.client_id:
            return  # configured, not learned: the secret stays in the person's config only
        record = self.record()
        record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._save(record)

    def restore(self, context: Any) -> None:
        """Put what the last login discovered back into a fresh provider's
        context (the SDK keeps it in memory only), and the token's real
        expiry, so an expired token is refreshed at the right endpoint."""
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        record = self.record()
        try:
            if record.get("oauth_metadata") and context.oauth_metadata is None:
                context.oauth_metadata = OAuthMetadata.model_validate(record["oauth_metadata"])
            if record.get("protected_resource_metadata") and context.protected_resource_metadata is None:
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    record["protected_resource_metadata"])
        except Exception:  # a record from another SDK version: discovery runs again
            context.oauth_metadata = None
            context.protected_resource_metadata = None
        if record.get("auth_server_url") and context.auth_server_url is None:
            context.auth_server_url = record["auth_server_url"]
        if context.current_tokens is not None and record.get("expires_at") is not None:
            # the SDK reads 0 as "no expiry": an expired token keeps a time in the past
            context.token_expiry_time = max(float(record["expires_at"]), 1.0)


def _restoring(base: type) -> type:
    """``base`` (an SDK provider class) whose ``_initialize`` also restores
    what :class:`ServerTokens` kept."""

    class Restoring(base):  # type: ignore[misc]
        _smoke_tokens: ServerTokens

        async def _initialize(self) -> None:
            await super()._initialize()
            self._smoke_tokens.restore(self.context)

    Restoring.__name__ = f"Smoke{base.__name__}"
    return Restoring


# ---------------------------------------------------------------- the browser step


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_PAGE = ("<!doctype html><meta charset=utf-8><title>Smoke</title>"
         "<body style='font-family:sans-serif;margin:3em'><h1>{title}</h1><p>{text}</p>")


class LoopbackLogin:
    """The ``redirect_uri`` of a login (``http://127.0.0.1:PORT/callback``) and
    the listener that takes the browser's answer: started (:meth:`start`)
    before the browser is opened, stopped once the answer came (:meth:`wait`)."""

    def __init__(self, server: str, port: int | None) -> None:
        self.server = server
        self.port = port or free_port()
        self.redirect_uri = f"http://127.0.0.1:{self.port}/callback"
        self._httpd: Any = None
        self._answer: Any = None

    def start(self) -> None:
        """Listen on 127.0.0.1 for the browser's answer. Raises :class:`LoginFailed`."""
        import asyncio
        import http.server
        from html import escape

        self.stop()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[dict[str, list[str]]] = loop.create_future()
        self._answer = answer
        name = self.server

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/callback":
                    self.send_error(404)
                    return
                query = parse_qs(parts.query)
                if "error" in query:
                    title, text = "Login not completed", (
                        f"The authorization server answered: {query['error'][0]}"
                        + (f" ({query['error_description'][0]})" if query.get("error_description") else "")
                        + ". Go back to Smoke.")
                else:
                    title, text = "Logged in", f"Smoke has your login to the MCP server {name}. You can close this tab."
                body = _PAGE.format(title=escape(title), text=escape(text)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                def settle() -> None:
                    if not answer.done():
                        answer.set_result(query)

                loop.call_soon_threadsafe(settle)

            def log_message(self, *args: Any) -> None:  # the query holds the code: never logged
                pass

        try:
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        except OSError as exc:
            raise LoginFailed(f"the login needs 127.0.0.1:{self.port} for the browser's answer, but it is "
                              f"taken ({exc.strerror or exc}); set oauth.callback_port to a free port") from None
        self._httpd = httpd
        threading.Thread(target=httpd.serve_forever, name=f"smoke-mcp-login:{name}", daemon=True).start()

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    async def wait(self, timeout: float = LOGIN_TIMEOUT) -> Any:
        """The authorization answer (code, state, iss). Raises :class:`LoginFailed`."""
        import asyncio

        from mcp.shared.auth import AuthorizationCodeResult

        if self._answer is None:
            self.start()
        try:
            query = await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        except TimeoutError:
            raise LoginFailed(f"the browser did not come back within {timeout:g} s") from None
        finally:
            self.stop()
            self._answer = None
        if "error" in query:
            error = query["error"][0]
            why = f": {query['error_description'][0]}" if query.get("error_description") else ""
            if error == "access_denied":
                raise LoginFailed(f"the login was cancelled at the authorization server{why}")
            raise LoginFailed(f"the authorization server refused the login ({error}{why})")
        code = (query.get("code") or [""])[0]
        if not code:
            raise LoginFailed("the browser came back without an authorization code")
        return AuthorizationCodeResult(code=code, state=(query.get("state") or [None])[0],
                                       iss=(query.get("iss") or [None])[0])


async def open_browser(url: str) -> bool:
    """Open ``url`` in the person's browser (``$BROWSER`` honoured; in a
    thread: a command browser is waited for); False if none could be opened."""
    import asyncio
    import webbrowser

    def go() -> bool:
        # $BROWSER read now (webbrowser reads it once per process, at its first use)
        for command in filter(None, os.environ.get("BROWSER", "").split(os.pathsep)):
            try:
                if webbrowser.get(command).open(url):
                    return True
            except Exception:
                continue
        try:
            return bool(webbrowser.open(url))
        except Exception:
            return False

    return await asyncio.to_thread(go)


# ---------------------------------------------------------------- the provider


def build_auth(cfg: MCPServerConfig, *, login: Callable[[str], Awaitable[None]],
               waiting: Callable[[], Any], store: TokenStore | None = None) -> Any:
    """The ``httpx2.Auth`` for an HTTP server, or None when it needs none
    (``oauth: false``; static ``Authorization`` header without an ``oauth``
    entry). ``login(url)`` is awaited with the authorization URL (it asks or
    raises :class:`LoginRequired`); ``waiting()`` is a context manager held
    while a person is waited on (the connection's start deadline stops)."""
    import warnings

    oauth = cfg.oauth
    if oauth is None or not oauth.enabled:
        return None
    store = store or TokenStore()
    if oauth.grant == "client_credentials":
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
            PrivateKeyJWTOAuthProvider,
            SignedJWTParameters,
        )

        tokens = ServerTokens(store, cfg, redirect_uri=None)
        with warnings.catch_warnings():
            # issuer omitted: the SDK then takes whatever discovery finds (documented; set oauth.issuer)
            warnings.simplefilter("ignore")
            if oauth.private_key is not None:
                params = SignedJWTParameters(issuer=oauth.client_id or "", subject=oauth.client_id or "",
                                             signing_key=oauth.private_key,
                                             signing_algorithm=oauth.signing_algorithm or "RS256")
                provider: Any = _restoring(PrivateKeyJWTOAuthProvider)(
                    cfg.url or "", tokens, oauth.client_id or "", params.create_assertion_provider(),
                    scope=oauth.scope, issuer=oauth.issuer)
            else:
                provider = _restoring(ClientCredentialsOAuthProvider)(
                    cfg.url or "", tokens, oauth.client_id or "", oauth.client_secret or "",
                    oauth.token_endpoint_auth_method or "client_secret_basic", scope=oauth.scope, issuer=oauth.issuer)
        provider._smoke_tokens = tokens
        tokens.context = provider.context
        return provider

    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    port = oauth.callback_port
    if port is None:  # reuse the port a dynamic registration was made with
        stored = (store.get(record_key(cfg)) or {}).get("client_info") or {}
        uris = stored.get("redirect_uris") or []
        if uris:
            parts = urlsplit(str(uris[0]))
            if parts.hostname == "127.0.0.1" and parts.port:
                port = parts.port
    browser = LoopbackLogin(cfg.name, port)
    tokens = ServerTokens(store, cfg, redirect_uri=browser.redirect_uri)

    async def redirect(url: str) -> None:
        with waiting():
            browser.start()  # before the browser is opened: it may come back at once
            try:
                await login(url)
            except BaseException:
                browser.stop()
                raise

    async def callback() -> Any:
        with waiting():
            return await browser.wait()

    provider = _restoring(OAuthClientProvider)(
        server_url=cfg.url or "",
        client_metadata=OAuthClientMetadata(
            client_name="Smoke", redirect_uris=[browser.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=oauth.scope,
        ),
        storage=tokens, redirect_handler=redirect, callback_handler=callback,
        client_metadata_url=oauth.client_metadata_url,
    )
    provider._smoke_tokens = tokens
    tokens.context = provider.context
    return provider


def login_problem(exc: BaseException, cfg: MCPServerConfig) -> str | None:
    """One sentence for a failed or impossible login (None: not a login problem)."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    name = cfg.name
    again = f"run `smoke mcp login {name}` to try again"
    if isinstance(exc, LoginRequired):
        return f"MCP server {name!r} needs you to log in: {exc} Run `smoke mcp login {name}`"
    if isinstance(exc, LoginFailed):
        return f"the login to MCP server {name!r} failed: {exc}; {again}"
    if isinstance(exc, OAuthTokenError):
        return f"the login to MCP server {name!r} failed at the token endpoint: {_short(exc)}; {again}"
    if isinstance(exc, OAuthRegistrationError):
        return (f"MCP server {name!r}: registering Smoke with its authorization server failed: {_short(exc)}; "
                f"set oauth.client_id (and client_secret in your user config) if the server needs a "
                f"pre-registered client")
    if isinstance(exc, OAuthFlowError):
        text = str(exc)
        if "State parameter mismatch" in text:
            return (f"the login to MCP server {name!r} was refused: the browser's answer does not belong to this "
                    f"login (wrong state); {again}")
        return f"the login to MCP server {name!r} failed: {_short(exc)}; {again}"
    if isinstance(exc, ValueError) and "client_metadata_url" in str(exc):
        return f"MCP server {name!r}: {exc}; fix oauth.client_metadata_url in {cfg.source}"
    return None


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _QuietOAuthErrors(logging.Filter):
    """The SDK logs a login it could not finish with a traceback ("OAuth flow
    error"); Smoke says what happened in one message instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "OAuth flow error"


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietOAuthErrors())
