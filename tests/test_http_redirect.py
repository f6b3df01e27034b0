"""A 3xx answer to a model call is reported as a redirect, not as "not JSON"
(issue 21, row 9). A real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smoke_core.plugin import AgentError, user_message
from smoke_core.providers import HTTPProvider, ModelRequest
from smoke_core.testing import FakeProviderServer, Reply

# httpx comes with the provider plugins, not with smoke-core: the `tests` session runs this
pytestmark = pytest.mark.integration
pytest.importorskip("httpx")


class TinyProvider(HTTPProvider):
    def __init__(self, base_url: str) -> None:
        super().__init__(model="m", base_url=base_url, name="tiny", api_key="k-123", env_var="TINY_KEY")

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/chat"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def build_body(self, request: Any, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
        return {"model": model, "stream": stream}

    def parse_body(self, raw: bytes, ctype: str) -> list[Any]:
        json.loads(raw)  # what an adapter does with a 2xx body: an HTML page would fail here ("not JSON")
        return []



@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_reported_as_a_redirect(status: int) -> None:
    with FakeProviderServer([
        Reply(status, {"location": "https://api.example.test/v2/chat", "content-type": "text/html"},
              b"<html>moved</html>"),
    ]) as server:
        url = server.url
        provider = TinyProvider(url)
        request = ModelRequest(model="m", messages=[user_message("hi")], tools=[], settings={"stream": False})
        with pytest.raises(AgentError) as info:
            async for _ in provider.stream(request):
                pass
        await provider.aclose()
        requests = len(server.requests)
    error = info.value.info
    assert error.code == "provider_error" and not error.retryable
    assert error.message == (
        f"tiny answered {url}/v1/chat with a redirect (HTTP {status}) to https://api.example.test/v2/chat; "
        f"Smoke does not follow redirects for model calls"
    )
    assert "not JSON" not in error.message and error.hint and "base URL" in error.hint
    assert requests == 1  # not followed
