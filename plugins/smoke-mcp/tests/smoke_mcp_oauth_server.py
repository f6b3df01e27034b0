"""An OAuth-protected MCP server for smoke-mcp's login tests (run as a
subprocess, never imported): the SDK's own MCPServer with its auth settings
— authorization server and resource server in one, on 127.0.0.1 — and an
in-memory authorization-server provider that approves at once (the "person"
in the browser always says yes), with dynamic client registration, PKCE,
refresh-token rotation and revocation.

Prints ``PORT <n>`` when listening. Each grant it serves is appended as a
JSON line to ``$GRANTS_LOG``. Environment switches:

- ``TOKEN_LIFETIME`` seconds an access token lives (default 3600);
- ``LOGIN=deny`` the authorization endpoint answers ``error=access_denied``;
- ``LOGIN=wrong-state`` it sends the browser back with another ``state``;
- ``TOKEN_ENDPOINT=error`` the token endpoint refuses every code (invalid_grant).
"""



import json
import os
import secrets
import socket
import time
from typing import Any


def main() -> None:
    import anyio
    import uvicorn
    from mcp.server.auth.provider import (
        AccessToken,
        AuthorizationCode,
        AuthorizationParams,
        RefreshToken,
        TokenError,
        construct_redirect_uri,
    )
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    lifetime = int(os.environ.get("TOKEN_LIFETIME", "3600"))
    log_path = os.environ.get("GRANTS_LOG")

    def note(kind: str, **data: Any) -> None:
        if log_path:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"grant": kind, **data}) + "\n")

    class Provider:
        def __init__(self) -> None:
            self.clients: dict[str, OAuthClientInformationFull] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.access: dict[str, AccessToken] = {}
            self.refresh: dict[str, RefreshToken] = {}

        async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
            return self.clients.get(client_id)

        async def register_client(self, client_info: OAuthClientInformationFull) -> None:
            self.clients[client_info.client_id] = client_info
            note("register", client_id=client_info.client_id)

        async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
            mode = os.environ.get("LOGIN", "")
            if mode == "deny":
                return construct_redirect_uri(str(params.redirect_uri), error="access_denied",
                                              error_description="the person said no", state=params.state)
            code = secrets.token_urlsafe(32)
            self.codes[code] = AuthorizationCode(
                code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
                code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            )
            state = "not-the-state-smoke-sent" if mode == "wrong-state" else params.state
            return construct_redirect_uri(str(params.redirect_uri), code=code, state=state)

        async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
            return self.codes.get(authorization_code)

        def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
            access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
            self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                              expires_at=int(time.time()) + lifetime, resource=resource)
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
            return OAuthToken(access_token=access, token_type="Bearer", expires_in=lifetime, refresh_token=refresh,
                              scope=" ".join(scopes) or None)

        async def exchange_authorization_code(self, client: Any, authorization_code: AuthorizationCode) -> OAuthToken:
            if os.environ.get("TOKEN_ENDPOINT") == "error":
                raise TokenError("invalid_grant", "this authorization server is having a bad day")
            self.codes.pop(authorization_code.code, None)
            token = self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)
            note("authorization_code", access_token=token.access_token, refresh_token=token.refresh_token)
            return token

        async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
            return self.refresh.get(refresh_token)

        async def exchange_refresh_token(self, client: Any, refresh_token: RefreshToken,
                                         scopes: list[str]) -> OAuthToken:
            self.refresh.pop(refresh_token.token, None)  # rotated
            for token, info in list(self.access.items()):
                if info.client_id == client.client_id:
                    del self.access[token]  # the old access token stops working
            token = self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)
            note("refresh_token", access_token=token.access_token, refresh_token=token.refresh_token)
            return token

        async def load_access_token(self, token: str) -> AccessToken | None:
            info = self.access.get(token)
            if info is None or (info.expires_at is not None and info.expires_at < time.time()):
                return None
            return info

        async def revoke_token(self, token: Any) -> None:
            self.access.pop(token.token, None)
            self.refresh.pop(token.token, None)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = Provider()
    server = MCPServer(
        "smoke-oauth-test", auth_server_provider=provider,
        auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
                          client_registration_options=ClientRegistrationOptions(enabled=True),
                          revocation_options=RevocationOptions(enabled=True)),
    )

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Which client the bearer token belongs to."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return json.dumps({"client_id": token.client_id if token else None})

    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(host="127.0.0.1"), log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
