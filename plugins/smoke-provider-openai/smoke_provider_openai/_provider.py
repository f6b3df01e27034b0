"""The Chat Completions provider: HTTP with httpx, SSE with httpx-sse.

The provider only classifies failures; the agent loop owns retries
(:class:`smoke_core.providers.RetryPolicy`). Tool calls go natively
(``tools`` in the body), inline (described in the system prompt, parsed out
of the text: :mod:`smoke_provider_openai._inline`) or constrained (inline,
with the reply held to a JSON Schema built from the tools:
:mod:`smoke_provider_openai._constrained`), per ``tool_calls``. In native
mode the text is read for calls too (small models write them as JSON), and
only valid calls of exposed tools are taken from it.
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
    Progress,
    ProviderEvent,
    ProviderNotice,
    TextDelta,
    in_band_error,
    resolve_api_key,
)

from . import _capabilities
from ._constrained import ConstrainedReply, constrained_prompt, reply_schema
from ._gbnf import tool_grammar
from ._inline import InlineToolParser, inline_request
from ._wire import StreamAssembler, build_body, events_from_completion

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("smoke")

#: how tool calls travel: in the ``tools`` field, in the text, in the text held to a schema,
#: or natively until the server refuses tools (or says its template takes none)
TOOL_CALL_MODES = ("native", "inline", "constrained", "auto")
#: settings that make no sense without native tools (dropped in inline and constrained mode)
NATIVE_TOOL_SETTINGS = frozenset({"tool_choice", "parallel_tool_calls"})
# What servers say when they do not take the tools parameter — these messages only, never
# any error that mentions a tool (llama.cpp's "Cannot use custom grammar constraints with
# tools." is a request mistake, not a refusal of tools).
_TOOLS_REFUSED = re.compile(
    r"tools? param requires --jinja"                          # llama.cpp without --jinja
    r"|tool_choice param requires --jinja"
    r"|does not support tools"                                # Ollama: "<model> does not support tools"
    r"|tool choice requires --enable-auto-tool-choice"        # vLLM without a tool parser
    r"|(?:tool|function) calling is not (?:supported|enabled)"
    r"|tools (?:are|is) not supported"
    r"|does not support (?:function|tool) call(?:ing|s)"
    r"|unrecognized request argument supplied: tools",
    re.I,
)
# what a server says when it cannot take the schema of constrained mode (sent only then)
_CONSTRAINT_REJECTED = re.compile(r"grammar|json.?schema|response.?format|structured.?output|guided|schema", re.I)
#: a tool call's arguments streaming yield a Progress event each this many characters
PROGRESS_CHARS = 256


def tools_refused(info: AgentErrorInfo) -> bool:
    """True when an HTTP error answer says the server does not take ``tools``
    (a 400/404/422/500/501 with one of the known refusal messages), not when
    it rejected the model's call or something else in the request."""
    status = info.details.get("status")
    return (
        info.code == "provider_error" or info.code == "provider_unavailable"
    ) and status in (400, 404, 422, 500, 501) and not info.details.get("in_band") and bool(
        _TOOLS_REFUSED.search(info.message)
    )


def constraint_rejected(info: AgentErrorInfo) -> bool:
    """True when the answer to a constrained request says the server cannot
    take its schema (a 400/422/500/501 naming the grammar or the schema)."""
    status = info.details.get("status")
    return info.code in ("provider_error", "provider_unavailable") and status in (400, 422, 500, 501) and not (
        info.details.get("in_band")) and bool(_CONSTRAINT_REJECTED.search(info.message))


def _check_mode(mode: object, where: str) -> str:
    if mode not in TOOL_CALL_MODES:
        raise ValueError(f"tool_calls{where}: expected one of {', '.join(TOOL_CALL_MODES)}, got {mode!r}")
    return str(mode)


class _ArgumentProgress:
    """Progress events while a call's arguments stream, one per :data:`PROGRESS_CHARS`."""

    def __init__(self) -> None:
        self.reported = 0

    def update(self, chars: int, name: str | None) -> Progress | None:
        if chars <= 0 or (self.reported and chars - self.reported < PROGRESS_CHARS):
            return None
        self.reported = chars
        return Progress("tool_arguments", chars, None, name)


class OpenAIChatProvider(HTTPProvider):
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    ``options`` are :class:`~smoke_core.providers.HTTPProvider`'s: ``user_id``,
    ``idle_timeout``, ``connect_timeout``, ``request_timeout``, ``headers``,
    ``supports_images``, ``price_as``, ``context_window``,
    ``max_output_tokens``, ``ask_server_facts`` and the response bounds
    (``response_timeout``, ``progress_timeout``, ``max_response_bytes``,
    ``max_line_bytes``). ``server``: what kind of server to ask about itself
    before a run (``"llamacpp"``: ``/props``; ``"ollama"``: ``/api/show``;
    None); ``constraint``: how a constrained request holds the reply
    (``"grammar"``: llama.cpp's GBNF, text or one call; ``"response_format"``:
    a JSON Schema, text as a JSON string or one call); ``call_first``
    (constrained mode): the reply to the person's message must be a tool call,
    text comes after a result (default True). One
    ``httpx.AsyncClient`` per instance, created on first use; release it with
    :meth:`aclose` (``agent.aclose()`` does it).
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
        server: str | None = None,
        constraint: str = "response_format",
        call_first: bool = True,
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
        if server not in (None, "llamacpp", "llamacpp?", "ollama"):
            raise ValueError(f"server: expected 'llamacpp', 'ollama' or None, got {server!r}")
        #: the kind of server to ask about itself ("llamacpp?": try /props, quietly)
        self.server = server
        if constraint not in ("grammar", "response_format"):
            raise ValueError(f"constraint: expected 'grammar' or 'response_format', got {constraint!r}")
        self.constraint = constraint
        #: constrained mode: the first reply to the person's message must be a tool call
        self.call_first = bool(call_first)
        # models whose server refused the tools parameter, dropped them, or rejected the schema of
        # constrained mode: their calls go inline (shared with with_model() clones)
        self._inline_models: set[str] = set()
        # what the server said about itself, per model (shared with clones), and what to tell a person
        self._server_info: dict[str, _capabilities.ServerInfo] = {}
        self._notices: list[ProviderNotice] = []

    # ------------------------------------------------------------ the server

    async def prepare(self, model: str | None = None) -> None:
        """Before a run: the model's limits from ``/models`` (see
        :meth:`HTTPProvider.prepare`) and what the server says about itself
        (``server``): whether the model takes tools, the context it serves.
        Problems become ``run.warning``s at the next call. Never raises."""
        model = model or self.model
        await super().prepare(model)
        if self.server is None or model in self._server_info:
            return
        style = "llamacpp" if self.server.startswith("llamacpp") else "ollama"
        info = _capabilities.cached(self.base_url, style, model)
        if info is None:
            headers = {"accept": "application/json", **self.protocol_headers(), **self.headers}
            key = resolve_api_key(self._api_key, self.name, self.user_id, self.env_var)
            if key:
                headers.update(self.auth_headers(key))
            info = await _capabilities.read_server_info(
                self._client_for_loop(), base_url=self.base_url, style=style, model=model, headers=headers,
                timeout=max(self.connect_timeout, 1.0), expected=not self.server.endswith("?"),
            )
        self._apply_server_info(model, info)

    def _apply_server_info(self, model: str, info: _capabilities.ServerInfo) -> None:
        self._server_info[model] = info
        where = f"{self.name} at {self.base_url}"
        for problem in info.problems:
            self._notices.append(ProviderNotice("provider_error", problem, details={"provider": self.name,
                                                                                    "base_url": self.base_url}))
        if info.n_ctx and not self._facts_options[0]:
            _, output = self._server_facts.get(model, (None, None))
            self._server_facts[model] = (info.n_ctx, output)
        if info.supports_tools is False:
            mode = self._configured_mode(model)
            details = {"provider": self.name, "base_url": self.base_url, "model": model, "supports_tools": False}
            if mode == "auto":
                self._inline_models.add(model)
                self._notices.append(ProviderNotice(
                    "provider_fallback",
                    f"{where} says the chat template of {model} has no tool support (the server would drop the "
                    f"tools without a word); tool calls go inline (in the text) for this model",
                    hint="Set tool_calls: constrained (or inline) to choose this yourself.", details=details))
            elif mode == "native":
                self._notices.append(ProviderNotice(
                    "provider_error",
                    f"{where} says the chat template of {model} has no tool support: the tools sent natively are "
                    f"dropped and the model never sees them; choose tool_calls: inline or constrained",
                    details=details))

    def server_kind(self, model: str | None = None) -> str | None:
        """``"llamacpp"`` or ``"ollama"`` when the server said so (or the preset is one), else None."""
        info = self._server_info.get(model or self.model)
        if info is not None and info.kind:
            return info.kind
        return self.server if self.server in ("llamacpp", "ollama") else None

    # ------------------------------------------------------------ tool calls

    def _configured_mode(self, model: str) -> str:
        mode = self.tool_calls
        if isinstance(mode, dict):
            mode = next((m for pattern, m in mode.items() if fnmatch.fnmatchcase(model, pattern)), "native")
        return mode

    def tool_call_mode(self, model: str | None = None) -> str:
        """``native``, ``inline``, ``constrained`` or ``auto`` for ``model``;
        ``auto`` and ``constrained`` read as ``inline`` once the server
        refused ``tools``, said the template takes none, or rejected the schema."""
        model = model or self.model
        mode = self._configured_mode(model)
        if mode in ("auto", "constrained") and model in self._inline_models:
            return "inline"
        return mode

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        model = request.model or self.model
        while self._notices:
            yield self._notices.pop(0)
        mode = self.tool_call_mode(model)
        if not request.tools:
            async for event in super().stream(request):
                yield event
            return
        if mode == "inline":
            async for event in self._stream_inline(request):
                yield event
            return
        if mode == "constrained":
            async for event in self._stream_constrained(request, model):
                yield event
            return
        sent_any = False
        try:
            async for event in self._read_text_calls(super().stream(request), request.tools, strict=True):
                sent_any = True
                yield event
            return
        except AgentError as exc:
            if mode != "auto" or sent_any or not tools_refused(exc.info):
                raise
            self._inline_models.add(model)
            log.warning("smoke: %s refused the tools parameter for model %s (%s); tool calls go inline (in the "
                        "text) from now on", self.name, model, exc.info.message)
            yield ProviderNotice(
                "provider_fallback",
                f"{self.name} at {self.base_url} refused the tools parameter for {model} ({exc.info.message}); "
                f"tool calls go inline (in the text) for this model",
                hint="Set tool_calls: inline (or constrained) to choose this yourself.",
                details={"provider": self.name, "model": model, "cause": exc.info.to_dict()})
        async for event in self._stream_inline(request):
            yield event

    async def _stream_inline(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        events = super().stream(inline_request(request, drop_settings=NATIVE_TOOL_SETTINGS))
        async for event in self._read_text_calls(events, request.tools, strict=False):
            yield event

    async def _stream_constrained(self, request: ModelRequest, model: str) -> AsyncIterator[ProviderEvent]:
        grammar = self.server_kind(model) == "llamacpp" or self.constraint == "grammar"
        sent = inline_request(request, drop_settings=NATIVE_TOOL_SETTINGS, describe_calls=True,
                              prompt=lambda tools: constrained_prompt(tools, json_text=not grammar))
        # the reply to the person's message must be a call (a small model answers from its guesses otherwise:
        # "What does hello.txt say?" -> "hello"); after a tool result, text or a call
        text = not (self.call_first and bool(request.messages) and request.messages[-1].get("role") == "user")
        if grammar:  # llama.cpp: text stays plain text
            sent.settings["grammar"] = tool_grammar(request.tools, text=text)
        else:  # vLLM, Ollama, LM Studio: their structured outputs take a JSON Schema
            sent.settings["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "smoke_reply", "schema": reply_schema(request.tools, text=text)}}
        sent_any = False
        try:
            async for event in self._read_text_calls(super().stream(sent), request.tools, strict=False,
                                                     reply=ConstrainedReply(request.tools, json_text=not grammar)):
                sent_any = True
                yield event
            return
        except AgentError as exc:
            if sent_any or not constraint_rejected(exc.info):
                raise
            self._inline_models.add(model)
            log.warning("smoke: %s rejected the schema of constrained tool calls for %s (%s); tool calls go "
                        "inline from now on", self.name, model, exc.info.message)
            yield ProviderNotice(
                "provider_fallback",
                f"{self.name} at {self.base_url} rejected the schema built from the tools for constrained tool "
                f"calls ({exc.info.message}); tool calls go inline (in the text, unconstrained) for {model}",
                hint="Look at the schema of the tools offered (details.cause), or set tool_calls: inline.",
                details={"provider": self.name, "model": model, "cause": exc.info.to_dict()})
        async for event in self._stream_inline(request):
            yield event

    async def _read_text_calls(self, events: AsyncIterator[ProviderEvent], tools: list[dict[str, Any]], *,
                               strict: bool, reply: Any = None) -> AsyncIterator[ProviderEvent]:
        """``events`` with the tool calls written in the text taken out
        (``reply``: the reader of the text; default an inline parser).
        While a call is held back, :class:`Progress` events say it grows."""
        parser = reply if reply is not None else InlineToolParser(tools=tools, strict=strict)
        progress = _ArgumentProgress()
        finished = False
        try:
            async for event in events:
                if type(event) is TextDelta:
                    text = parser.feed(event.text)
                    if text:
                        yield TextDelta(text)
                    if getattr(parser, "repeated", False):
                        # the model writes the same call again: it is looping; stop it here rather than
                        # wait for max_tokens (closing the stream stops the generation)
                        _, calls = parser.finish(drop_pending=True)
                        for call in calls:
                            yield call
                        yield Finished("tool_calls")
                        return
                    grew = progress.update(parser.pending_chars, None)
                    if grew is not None:
                        yield grew
                    continue
                if type(event) is not Finished:
                    yield event
                    continue
                rest, calls = parser.finish()
                if rest:
                    yield TextDelta(rest)
                for call in calls:
                    yield call
                finished = True
                reason = "tool_calls" if calls and event.reason in ("stop", "tool_calls") else event.reason
                yield Finished(reason, event.model, event.response_id)
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        if not finished:
            rest, calls = parser.finish()
            if rest:
                yield TextDelta(rest)
            for call in calls:
                yield call

    # ------------------------------------------------------------ body

    def build_body(self, request: ModelRequest, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
        body = build_body(request, model=model, stream=stream, settings=settings)
        if self.ask_server_facts and "max_tokens" not in body and "max_completion_tokens" not in body:
            # a local server without a limit may generate for many minutes (issue 32)
            body["max_tokens"] = self.model_facts(model).default_max_tokens
        if stream and self.server_kind(model) == "llamacpp":
            body.setdefault("return_progress", True)  # prompt_progress chunks: the prompt is being read
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
        arguments = _ArgumentProgress()
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
                    grew = arguments.update(assembler.argument_chars, assembler.pending_call_name)
                    if grew is not None:
                        yield grew
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
