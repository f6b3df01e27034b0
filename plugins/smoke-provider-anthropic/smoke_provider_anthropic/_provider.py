"""The Anthropic Messages provider: HTTP with httpx, SSE with httpx-sse.

The provider only classifies failures; the agent loop owns retries
(:class:`smoke_core.providers.RetryPolicy`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from smoke_core.providers import (
    AgentError,
    ApiKey,
    HTTPProvider,
    ModelRequest,
    ProviderEvent,
    in_band_error,
)

from ._wire import StreamAssembler, add_cache_breakpoints, build_body, events_from_message

if TYPE_CHECKING:
    import httpx


class AnthropicProvider(HTTPProvider):
    """The Anthropic Messages API (``POST /v1/messages``).

    ``options`` are :class:`~smoke_core.providers.HTTPProvider`'s: ``user_id``,
    ``idle_timeout``, ``connect_timeout``, ``request_timeout``, ``headers``,
    ``supports_images``, ``price_as`` and the response bounds
    (``response_timeout``, ``progress_timeout``, ``max_response_bytes``,
    ``max_line_bytes``). ``prompt_cache`` (on by default) marks
    ``cache_control`` breakpoints (``prompt_cache_ttl``: ``"5m"`` or ``"1h"``).
    One ``httpx.AsyncClient`` per instance, created on
    first use; release it with :meth:`aclose` (``agent.aclose()`` does it).
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.anthropic.com",
        name: str = "anthropic",
        api_key: ApiKey = None,
        env_var: str | None = "ANTHROPIC_API_KEY",
        anthropic_version: str = "2023-06-01",
        key_required: bool = True,
        prompt_cache: bool = True,
        prompt_cache_ttl: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            model=model, base_url=base_url, name=name, api_key=api_key, env_var=env_var,
            key_required=key_required, **options,
        )
        self.anthropic_version = anthropic_version
        #: ``cache_control`` breakpoints on the tools, the system prompt and the end of the conversation
        self.prompt_cache = bool(prompt_cache)
        if prompt_cache_ttl not in (None, "5m", "1h"):
            raise ValueError(f"prompt_cache_ttl: expected '5m', '1h' or None, got {prompt_cache_ttl!r}")
        self.prompt_cache_ttl = prompt_cache_ttl

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        return f"{root}/v1/messages"

    def build_body(self, request: ModelRequest, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
        body = build_body(request, model=model, stream=stream, settings=settings)
        if self.prompt_cache:
            add_cache_breakpoints(body, ttl=self.prompt_cache_ttl)
        return body

    @property
    def models_url(self) -> str:
        return self.url.rsplit("/", 1)[0] + "/models"

    def protocol_headers(self) -> dict[str, str]:
        return {"anthropic-version": self.anthropic_version}

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def parse_body(self, raw: bytes, ctype: str) -> list[ProviderEvent]:
        data = self.json_object(raw, ctype)
        if data.get("type") == "error" or data.get("error"):
            raise in_band_error(data.get("error"), provider=self.name, env_var=self.env_var)
        if data.get("type") != "message" and "content" not in data:
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent a reply that is not a message",
                details={"provider": self.name, "body": raw[:500].decode("utf-8", "replace")},
            )
        return events_from_message(data)

    async def read_sse(self, response: httpx.Response) -> AsyncIterator[ProviderEvent]:
        assembler = StreamAssembler()
        seen = 0
        sse_iter = self.sse_events(response)
        try:
            async for sse in sse_iter:
                seen += 1
                data = sse.data.strip()
                if not data:
                    continue
                payload = self.event_object(data, sse.event)
                kind = payload.get("type") or sse.event or ""
                if kind == "error" or sse.event == "error":
                    raise in_band_error(payload.get("error"), provider=self.name, env_var=self.env_var)
                fragments = assembler.argument_chars
                for event in assembler.feed(kind, payload):
                    yield event
                if assembler.argument_chars != fragments:
                    self.mark_progress(response)
                if kind == "message_stop":
                    break
        finally:
            await sse_iter.aclose()
        if not assembler.complete:
            if not assembler.started:
                raise AgentError.from_code(
                    "provider_error",
                    f"{self.name} answered with an event stream holding no message; is {self.base_url} the "
                    f"Anthropic API?",
                    details={"provider": self.name, "base_url": self.base_url, "events": seen},
                )
            raise AgentError.from_code(
                "provider_unavailable",
                f"the stream from {self.name} ended before the model finished",
                details={"provider": self.name, "transport": "truncated"},
            )
        for event in assembler.finish():
            yield event
