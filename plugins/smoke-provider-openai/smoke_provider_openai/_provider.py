"""The Chat Completions provider: HTTP with httpx, SSE with httpx-sse.

The provider only classifies failures; the agent loop owns retries
(:class:`smoke_core.providers.RetryPolicy`). Tool calls go natively
(``tools`` in the body) or inline (described in the system prompt, parsed out
of the text: :mod:`smoke_provider_openai._inline`), per ``tool_calls``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from smoke_core.providers import (
    AgentError,
    AgentErrorInfo,
    ApiKey,
    Finished,
    HTTPProvider,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    in_band_error,
)

from ._inline import InlineToolParser, inline_request
from ._wire import StreamAssembler, build_body, events_from_completion

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("smoke")

#: how tool calls travel: in the ``tools`` field, in the text, or natively until the server refuses tools
TOOL_CALL_MODES = ("native", "inline", "auto")
#: settings that make no sense without native tools (dropped in inline mode)
NATIVE_TOOL_SETTINGS = frozenset({"tool_choice", "parallel_tool_calls"})
# what a server says when it does not take the tools parameter (vLLM without a tool parser,
# Ollama for a model without tool support, llama.cpp without --jinja, LM Studio, ...)
_TOOLS_REFUSED = re.compile(r"tool|function.?call|jinja", re.I)


def tools_refused(info: AgentErrorInfo) -> bool:
    """True when an HTTP error answer says the server does not take ``tools``
    (a 400/404/422/500/501 whose message mentions tools, function calling or
    the chat template), not when it rejected the model's call."""
    status = info.details.get("status")
    return (
        info.code == "provider_error" or info.code == "provider_unavailable"
    ) and status in (400, 404, 422, 500, 501) and not info.details.get("in_band") and bool(
        _TOOLS_REFUSED.search(info.message)
    )


def _check_mode(mode: object, where: str) -> str:
    if mode not in TOOL_CALL_MODES:
        raise ValueError(f"tool_calls{where}: expected one of {', '.join(TOOL_CALL_MODES)}, got {mode!r}")
    return str(mode)


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
        tool_calls: str | Mapping[str, str] = "native",
        prompt_cache: bool = True,
        prompt_cache_key: str | None = None,
        cache_routing: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            model=model, base_url=base_url, name=name, api_key=api_key, env_var=env_var,
            key_required=key_required, **options,
        )
        if isinstance(tool_calls, Mapping):
            self.tool_calls: str | dict[str, str] = {
                str(k): _check_mode(v, f"[{k!r}]") for k, v in tool_calls.items()
            }
        else:
            self.tool_calls = _check_mode(tool_calls, "")
        #: send a cache-routing key (``cache_routing`` says how the preset takes one)
        self.prompt_cache = bool(prompt_cache)
        self.prompt_cache_key = prompt_cache_key
        if cache_routing is not None and cache_routing != "body" and not cache_routing.startswith("header:"):
            raise ValueError(f"cache_routing: expected 'body', 'header:<name>' or None, got {cache_routing!r}")
        self.cache_routing = cache_routing
        # models whose server refused the tools parameter (auto mode), shared with with_model() clones
        self._inline_models: set[str] = set()

    # ------------------------------------------------------------ tool calls

    def tool_call_mode(self, model: str | None = None) -> str:
        """``native``, ``inline`` or ``auto`` for ``model``; ``auto`` reads as
        ``inline`` once the server refused ``tools`` for that model."""
        model = model or self.model
        mode = self.tool_calls
        if isinstance(mode, dict):
            mode = next((m for pattern, m in mode.items() if fnmatch.fnmatchcase(model, pattern)), "native")
        if mode == "auto" and model in self._inline_models:
            return "inline"
        return mode

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        model = request.model or self.model
        mode = self.tool_call_mode(model)
        if mode == "native" or not request.tools:
            async for event in super().stream(request):
                yield event
            return
        if mode == "auto":
            sent_any = False
            try:
                async for event in super().stream(request):
                    sent_any = True
                    yield event
                return
            except AgentError as exc:
                if sent_any or not tools_refused(exc.info):
                    raise
                self._inline_models.add(model)
                log.warning(
                    "smoke: %s refused the tools parameter for model %s (%s); tool calls go inline (in the "
                    "text) from now on", self.name, model, exc.info.message,
                )
        async for event in self._stream_inline(request):
            yield event

    async def _stream_inline(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        parser = InlineToolParser(tools=request.tools)
        finished = False
        async for event in super().stream(inline_request(request, drop_settings=NATIVE_TOOL_SETTINGS)):
            if type(event) is TextDelta:
                text = parser.feed(event.text)
                if text:
                    yield TextDelta(text)
            elif type(event) is Finished:
                rest, calls = parser.finish()
                if rest:
                    yield TextDelta(rest)
                for call in calls:
                    yield call
                finished = True
                yield Finished("tool_calls" if calls else event.reason)
            else:
                yield event
        if not finished:
            rest, calls = parser.finish()
            if rest:
                yield TextDelta(rest)
            for call in calls:
                yield call

    # ------------------------------------------------------------ body

    def build_body(self, request: ModelRequest, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
        body = build_body(request, model=model, stream=stream, settings=settings)
        if self.prompt_cache and self.cache_routing == "body" and "prompt_cache_key" not in body:
            body["prompt_cache_key"] = self.cache_key_for(request)
        return body

    def build_request(self, request: ModelRequest) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        headers, body, settings = super().build_request(request)
        if self.prompt_cache and self.cache_routing and self.cache_routing.startswith("header:"):
            name = self.cache_routing.partition(":")[2]
            headers.setdefault(name, self.cache_key_for(request))
        return headers, body, settings

    def cache_key_for(self, request: ModelRequest) -> str:
        """The cache-routing key: ``prompt_cache_key`` when given, else one per
        conversation (its model, system prompt, tools and first message), so
        the requests of one conversation reach the server that holds its prefix."""
        if self.prompt_cache_key:
            return self.prompt_cache_key
        first = request.messages[0] if request.messages else None
        seed = json.dumps([request.model or self.model, request.system, [t.get("name") for t in request.tools],
                           first, request.user_id], sort_keys=True, ensure_ascii=False, default=str)
        return "smoke-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]

    def __repr__(self) -> str:
        return f"OpenAIChatProvider(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

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
