"""The Chat Completions provider: HTTP with httpx, SSE with httpx-sse.

The provider only classifies failures; the agent loop owns retries
(:class:`smoke_core.providers.RetryPolicy`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from smoke_core.errors import AgentError
from smoke_core.http_errors import http_error, in_band_error, transport_error
from smoke_core.providers import ApiKey, ModelRequest, ProviderEvent, resolve_api_key

from ._wire import StreamAssembler, build_body, events_from_completion

if TYPE_CHECKING:
    import httpx

DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_REQUEST_TIMEOUT = 600.0

_ssl_context: Any = None


def _shared_ssl_context() -> Any:
    """One TLS context per process: building one costs ~100 ms (CA bundle)."""
    global _ssl_context
    if _ssl_context is None:
        import httpx

        _ssl_context = httpx.create_ssl_context()
    return _ssl_context


class OpenAIChatProvider:
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    ``idle_timeout``: seconds without a byte on an open stream before the
    call fails with ``provider_timeout`` (also settable per request through
    ``settings["idle_timeout"]``). ``request_timeout`` bounds a non-streamed
    call. One ``httpx.AsyncClient`` per instance, created on first use;
    release it with :meth:`aclose` (``agent.aclose()`` does it).
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        name: str = "openai",
        api_key: ApiKey = None,
        env_var: str | None = "OPENAI_API_KEY",
        key_required: bool = True,
        user_id: str | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.env_var = env_var
        self.key_required = key_required
        self.user_id = user_id
        self.idle_timeout = float(idle_timeout)
        self.connect_timeout = float(connect_timeout)
        self.request_timeout = float(request_timeout)
        self.headers = dict(headers or {})
        self._api_key = api_key
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatProvider(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _client_for_loop(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(follow_redirects=False, verify=_shared_ssl_context())
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client (open connections included). Safe to call twice."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def build_request(self, request: ModelRequest) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        """``(headers, body, adapter settings)`` for ``request``; raises ``provider_auth`` without a key."""
        settings = dict(request.settings or {})
        streaming = bool(settings.get("stream", True))
        key = resolve_api_key(self._api_key, self.name, request.user_id or self.user_id, self.env_var)
        if not key and self.key_required:
            raise AgentError.from_code(
                "provider_auth",
                f"no API key for {self.name}: none was passed and {self.env_var} is not set",
                hint=f"Set {self.env_var} or pass api_key=.",
                details={"provider": self.name, "env_var": self.env_var},
            )
        body = build_body(request, model=request.model or self.model, stream=streaming, settings=settings)
        headers = {
            "content-type": "application/json",
            "accept": "application/json",  # what the official SDKs send, streaming or not
            **self.headers,
        }
        if key:
            headers["authorization"] = f"Bearer {key}"
        extra_headers = settings.get("extra_headers")
        if isinstance(extra_headers, dict):
            headers.update({str(k): str(v) for k, v in extra_headers.items()})
        return headers, body, settings

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        import httpx

        headers, body, settings = self.build_request(request)
        streaming = bool(body.get("stream"))
        idle = float(settings.get("idle_timeout") or self.idle_timeout)
        connect = float(settings.get("connect_timeout") or self.connect_timeout)
        read = idle if streaming else float(settings.get("request_timeout") or self.request_timeout)
        timeout = httpx.Timeout(connect=connect, read=read, write=connect, pool=connect)
        client = self._client_for_loop()
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        phase = "request"
        try:
            async with client.stream("POST", self.url, content=content, headers=headers, timeout=timeout) as response:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise http_error(
                        response.status_code, raw, response.headers, provider=self.name, env_var=self.env_var
                    )
                phase = "stream"
                ctype = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                if ctype == "text/event-stream":
                    async for event in self._read_sse(response):
                        yield event
                else:
                    # Non-streamed call, or a server that ignored "stream": true.
                    raw = await response.aread()
                    for event in self._parse_completion(raw, ctype):
                        yield event
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, provider=self.name, base_url=self.base_url, phase="stream" if streaming else phase,
                idle_timeout=idle,
            ) from None

    def _parse_completion(self, raw: bytes, ctype: str) -> list[ProviderEvent]:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise AgentError.from_code(
                "provider_error",
                f"{self.name} sent a body that is not JSON ({exc})",
                details={"provider": self.name, "content_type": ctype, "body": raw[:500].decode("utf-8", "replace")},
            ) from None
        if not isinstance(data, dict):
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent JSON that is not an object",
                details={"provider": self.name, "body": raw[:500].decode("utf-8", "replace")},
            )
        if data.get("error"):
            raise in_band_error(data["error"], provider=self.name, env_var=self.env_var)
        if not data.get("choices"):
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent a completion without choices",
                details={"provider": self.name, "body": raw[:500].decode("utf-8", "replace")},
            )
        return events_from_completion(data)

    async def _read_sse(self, response: httpx.Response) -> AsyncIterator[ProviderEvent]:
        from httpx_sse import EventSource, SSEError

        assembler = StreamAssembler()
        done = False
        seen = 0
        sse_iter = EventSource(response).aiter_sse()
        try:
            async for sse in sse_iter:
                seen += 1
                data = sse.data
                if sse.event == "error" and data.strip() and not data.strip().startswith("{"):
                    raise in_band_error({"message": data}, provider=self.name, env_var=self.env_var)
                if not data.strip():
                    continue
                if data.strip() == "[DONE]":
                    done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError as exc:
                    raise AgentError.from_code(
                        "provider_error",
                        f"{self.name} sent a stream event that is not JSON ({exc})",
                        details={"provider": self.name, "event": sse.event, "data": data[:500]},
                    ) from None
                if not isinstance(chunk, dict):
                    raise AgentError.from_code(
                        "provider_error", f"{self.name} sent a stream event that is not a JSON object",
                        details={"provider": self.name, "data": data[:500]},
                    )
                if chunk.get("error"):
                    raise in_band_error(chunk["error"], provider=self.name, env_var=self.env_var)
                for event in assembler.feed(chunk):
                    yield event
        except SSEError as exc:
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent a malformed event stream: {exc}",
                details={"provider": self.name},
            ) from None
        finally:
            await sse_iter.aclose()
        if not done and not assembler.complete:
            if seen == 0 or assembler.chunks == 0:
                raise AgentError.from_code(
                    "provider_error",
                    f"{self.name} answered with an event stream holding no events; is {self.base_url} an "
                    f"OpenAI-compatible endpoint?",
                    details={"provider": self.name, "base_url": self.base_url},
                )
            raise AgentError.from_code(
                "provider_unavailable",
                f"the stream from {self.name} ended before the model finished",
                details={"provider": self.name, "chunks": assembler.chunks, "transport": "truncated"},
            )
        for event in assembler.finish():
            yield event
