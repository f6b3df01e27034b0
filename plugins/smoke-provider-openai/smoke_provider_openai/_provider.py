"""The Chat Completions provider: HTTP with httpx, SSE with httpx-sse.

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
    ProviderEvent,
    in_band_error,
)

from ._wire import StreamAssembler, build_body, events_from_completion

if TYPE_CHECKING:
    import httpx


class OpenAIChatProvider(HTTPProvider):
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    ``options`` are :class:`~smoke_core.providers.HTTPProvider`'s: ``user_id``,
    ``idle_timeout``, ``connect_timeout``, ``request_timeout``, ``headers``,
    ``supports_images``, ``price_as`` and the response bounds
    (``response_timeout``, ``progress_timeout``, ``max_response_bytes``,
    ``max_line_bytes``). One ``httpx.AsyncClient`` per instance, created on
    first use; release it with :meth:`aclose` (``agent.aclose()`` does it).
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
        **options: Any,
    ) -> None:
        super().__init__(
            model=model, base_url=base_url, name=name, api_key=api_key, env_var=env_var,
            key_required=key_required, **options,
        )

    def __repr__(self) -> str:
        return f"OpenAIChatProvider(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    build_body = staticmethod(build_body)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def parse_body(self, raw: bytes, ctype: str) -> list[ProviderEvent]:
        data = self.json_object(raw, ctype)
        if data.get("error"):
            raise in_band_error(data["error"], provider=self.name, env_var=self.env_var)
        if not data.get("choices"):
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent a completion without choices",
                details={"provider": self.name, "body": raw[:500].decode("utf-8", "replace")},
            )
        return events_from_completion(data)

    async def read_sse(self, response: httpx.Response) -> AsyncIterator[ProviderEvent]:
        assembler = StreamAssembler()
        done = False
        seen = 0
        sse_iter = self.sse_events(response)
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
                chunk = self.event_object(data, sse.event)
                if chunk.get("error"):
                    raise in_band_error(chunk["error"], provider=self.name, env_var=self.env_var)
                fragments = assembler.argument_chars
                for event in assembler.feed(chunk):
                    yield event
                if assembler.argument_chars != fragments:
                    self.mark_progress(response)
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
