"""``HTTPProvider``: what every JSON-over-HTTP provider adapter shares.

The key check, the headers, one ``httpx.AsyncClient`` per event loop, the
timeouts (``idle_timeout`` bounds silence on an open stream), the bounds of a
response (:class:`ResponseLimits`: a total deadline, a no-progress timeout, a
cap on its bytes and on one SSE line), the POST and its failure
classification (:mod:`smoke_core.wire.http_errors`), and the dispatch between an
event stream and a plain JSON body. An adapter (smoke-provider-
openai, smoke-provider-anthropic, or a third-party one) supplies the wire
format through its public override points: ``url``, ``build_body``,
``auth_headers``, ``protocol_headers``, ``read_sse`` and ``parse_body``
(with ``json_object`` / ``event_object`` to check what arrives). ``httpx`` is
imported only when a request is made, so core does not depend on it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ..base.errors import AgentError
from .http_errors import http_error, redirect_error, transport_error
from .http_limits import ERROR_BODY_LIMIT, ResponseBudget, ResponseLimits, budget_of
from .model_facts import (
    DEFAULT_CONTEXT_WINDOW,
    ModelFacts,
    facts_from_models_entry,
    find_models_entry,
    genai_prices_context_window,
)
from .types import (
    ApiKey,
    ModelRequest,
    Progress,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    resolve_api_key,
)

if TYPE_CHECKING:
    import httpx
    from httpx_sse import ServerSentEvent

DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_REQUEST_TIMEOUT = 600.0

#: settings keys (``request.settings``) that :class:`HTTPProvider` consumes itself
TRANSPORT_SETTINGS = frozenset({
    "stream", "idle_timeout", "connect_timeout", "request_timeout", "extra_headers", "extra_body",
    "response_timeout", "progress_timeout", "max_response_bytes", "max_line_bytes",
})

_ssl_context: Any = None


def shared_ssl_context() -> Any:
    """One TLS context per process: building one costs ~100 ms (CA bundle)."""
    global _ssl_context
    if _ssl_context is None:
        import httpx

        _ssl_context = httpx.create_ssl_context()
    return _ssl_context


class HTTPProvider:
    """Base class of HTTP provider adapters (see the module docstring).

    ``idle_timeout``: seconds without a byte on an open stream before the
    call fails with ``provider_timeout`` (also settable per request through
    ``settings["idle_timeout"]``). ``request_timeout``: seconds without a
    byte while a non-streamed call is answered. ``response_timeout``,
    ``progress_timeout``, ``max_response_bytes`` and ``max_line_bytes`` bound
    every response (:class:`ResponseLimits`). One ``httpx.AsyncClient`` per
    instance and event loop, created on first use; release it with
    :meth:`aclose` (``agent.aclose()`` does it).
    """

    #: ``build_body(request, *, model, stream, settings) -> dict``: the wire body.
    build_body: Callable[..., dict[str, Any]]

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        name: str,
        api_key: ApiKey = None,
        env_var: str | None = None,
        key_required: bool = True,
        user_id: str | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        headers: dict[str, str] | None = None,
        supports_images: bool = True,
        price_as: str | None = None,
        response_timeout: float | None = None,
        progress_timeout: float | None = None,
        max_response_bytes: int | None = None,
        max_line_bytes: int | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        ask_server_facts: bool = False,
    ) -> None:
        self.name = name
        #: price calls as this ``genai-prices`` provider (a gateway or proxy in front of it)
        self.price_as = price_as
        #: False for a model that cannot take images (``provider_options={"supports_images": False}``)
        self.supports_images = bool(supports_images)
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.env_var = env_var
        self.key_required = key_required
        self.user_id = user_id
        self.idle_timeout = float(idle_timeout)
        self.connect_timeout = float(connect_timeout)
        self.request_timeout = float(request_timeout)
        self.headers = dict(headers or {})
        #: the bounds of every response (per request: the same names in ``settings``)
        self.limits = ResponseLimits().override({
            "response_timeout": response_timeout, "progress_timeout": progress_timeout,
            "max_response_bytes": max_response_bytes, "max_line_bytes": max_line_bytes,
        })
        self._api_key = api_key
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        for label, value in (("context_window", context_window), ("max_output_tokens", max_output_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{label} must be a positive number of tokens, got {value!r}")
        self._facts_options = (context_window, max_output_tokens)
        # what the server's /models said, per model (shared with with_model() clones: one server)
        self._server_facts: dict[str, tuple[int | None, int | None]] = {}
        #: ask the server for the model's limits before a run's first call
        #: (:meth:`prepare`): local servers, whose limits no price list knows
        self.ask_server_facts = bool(ask_server_facts)
        self._facts_asked: set[str] = set()  # models already asked about (shared with clones too)

    # ------------------------------------------------------------ adapter surface

    @property
    def url(self) -> str:
        raise NotImplementedError

    def protocol_headers(self) -> dict[str, str]:
        """Headers every request of this API carries (before ``headers=``)."""
        return {}

    def auth_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def read_sse(self, response: httpx.Response) -> AsyncIterator[ProviderEvent]:
        """The neutral events of a ``text/event-stream`` response (iterate
        :meth:`sse_events`; raise ``AgentError`` for in-band errors)."""
        raise NotImplementedError

    def sse_events(self, response: httpx.Response) -> AsyncGenerator[ServerSentEvent, None]:
        """The server-sent events of ``response``, each line bounded by
        ``max_line_bytes`` (``httpx_sse.EventSource(response).aiter_sse()``
        works too, with the raw-byte bounds only)."""
        budget = budget_of(response)
        if budget is None:
            budget = ResponseBudget(self.limits, provider=self.name)
        return budget.sse_events(response)

    def mark_progress(self, response: httpx.Response) -> None:
        """Tell the no-progress timer that content arrived which yields no
        event yet (a tool-call argument fragment). Text, reasoning and tool
        calls that ``read_sse`` yields count by themselves."""
        budget = budget_of(response)
        if budget is not None:
            budget.progress()

    def parse_body(self, raw: bytes, ctype: str) -> list[ProviderEvent]:
        """The neutral events of a plain JSON response (a non-streamed call)."""
        raise NotImplementedError

    # ------------------------------------------------------------ shared

    def _client_for_loop(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(follow_redirects=False, verify=shared_ssl_context())
            self._client_loop = loop
        return self._client

    # ------------------------------------------------------------ model facts

    @property
    def models_url(self) -> str:
        """Where the server lists its models (``GET``); override for another path."""
        return f"{self.base_url}/models"

    def model_facts(self, model: str | None = None) -> ModelFacts:
        """The context window and maximum output of ``model`` (default: this
        provider's): the options, else what :meth:`fetch_model_facts` learnt
        from the server, else ``genai-prices``, else the documented default
        (:mod:`smoke_core.wire.model_facts`)."""
        model = model or self.model
        option_window, option_output = self._facts_options
        server_window, server_output = self._server_facts.get(model, (None, None))
        output = option_output or server_output
        if option_window:
            return ModelFacts(model, option_window, output, "options")
        if server_window:
            return ModelFacts(model, server_window, output, "server")
        window, _ = genai_prices_context_window(model, base_url=self.base_url, price_as=self.price_as)
        if window:
            return ModelFacts(model, window, output, "genai-prices")
        return ModelFacts(model, DEFAULT_CONTEXT_WINDOW, output, "default")

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (:meth:`model_facts`)."""
        return self.model_facts().context_window

    @property
    def max_output_tokens(self) -> int | None:
        """The model's maximum output in tokens when known (:meth:`model_facts`)."""
        return self.model_facts().max_output_tokens

    async def fetch_model_facts(self, model: str | None = None) -> ModelFacts:
        """Ask the server (``GET models_url``) for ``model``'s limits, remember
        them, and return :meth:`model_facts`. A server that cannot say (no
        such endpoint, no such fields, not reachable) leaves the other sources;
        the reason is logged at debug level and nothing is raised."""
        import httpx

        model = model or self.model
        headers = {"accept": "application/json", **self.protocol_headers(), **self.headers}
        key = resolve_api_key(self._api_key, self.name, self.user_id, self.env_var)
        if key:
            headers.update(self.auth_headers(key))
        timeout = httpx.Timeout(self.connect_timeout)
        budget = ResponseBudget(ResponseLimits(response_timeout=max(self.connect_timeout, 1.0)), provider=self.name)
        response: httpx.Response | None = None
        try:
            sent = self._client_for_loop().build_request("GET", self.models_url, headers=headers, timeout=timeout)
            response = await budget.wait(self._client_for_loop().send(sent, stream=True))
            budget.attach(response, sse=False)
            raw = await budget.read_body(response, limit=4 * 1024 * 1024)
            if response.status_code != 200:
                raise ValueError(f"HTTP {response.status_code}")
            data = json.loads(raw)
            entries = data.get("data") if isinstance(data, dict) else data
            entry = find_models_entry(entries, model)
            if entry is None:
                raise ValueError(f"{model!r} is not in the list")
            facts = facts_from_models_entry(entry)
            if facts != (None, None):
                self._server_facts[model] = facts
        except (httpx.HTTPError, AgentError, ValueError, TypeError, AttributeError) as exc:
            logging.getLogger("smoke").debug("smoke: %s at %s told nothing about %s: %s", self.name,
                                             self.models_url, model, exc)
        finally:
            if response is not None:
                await response.aclose()
        return self.model_facts(model)

    async def prepare(self, model: str | None = None) -> None:
        """What a run awaits before its first model call: with
        ``ask_server_facts``, :meth:`fetch_model_facts` once per model (a
        served context size replaces the 128k default). Never raises."""
        model = model or self.model
        if self.ask_server_facts and model not in self._facts_asked:
            self._facts_asked.add(model)
            await self.fetch_model_facts(model)

    def with_model(self, model: str) -> HTTPProvider:
        """The same endpoint, key and settings with another model (for subagents)."""
        clone = copy.copy(self)
        clone.model = model
        clone._client = None
        clone._client_loop = None
        return clone

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
        body = self.build_body(request, model=request.model or self.model, stream=streaming, settings=settings)
        headers = {
            "content-type": "application/json",
            "accept": "application/json",  # what the official SDKs send, streaming or not
            **self.protocol_headers(),
            **self.headers,
        }
        if key:
            headers.update(self.auth_headers(key))
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
        limits = self.limits.override(settings)
        client = self._client_for_loop()
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        budget = ResponseBudget(limits, provider=self.name)
        phase = "request"
        response: httpx.Response | None = None
        try:
            sent = client.build_request("POST", self.url, content=content, headers=headers, timeout=timeout)
            response = await budget.wait(client.send(sent, stream=True))
            if 300 <= response.status_code < 400:
                raise redirect_error(response.status_code, response.headers, provider=self.name, url=self.url)
            ctype = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            budget.attach(response, sse=ctype == "text/event-stream")
            if response.status_code >= 400:
                raw = await budget.read_body(response, limit=ERROR_BODY_LIMIT)
                raise http_error(
                    response.status_code, raw, response.headers, provider=self.name, env_var=self.env_var,
                    tools_sent=bool(request.tools),
                )
            phase = "stream"
            if ctype == "text/event-stream":
                async for event in self.read_sse(response):
                    if _is_progress(event):
                        budget.progress()
                    yield event
            else:
                # A non-streamed call, or a server that ignored "stream": true.
                raw = await budget.read_body(response)
                for event in self.parse_body(raw, ctype):
                    yield event
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, provider=self.name, base_url=self.base_url, phase="stream" if streaming else phase,
                idle_timeout=idle,
            ) from None
        finally:
            if response is not None:
                await response.aclose()

    def json_object(self, raw: bytes, ctype: str) -> dict[str, Any]:
        """A response body as a JSON object, or ``provider_error`` saying what it was."""
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
        return data

    def event_object(self, data: str, event: str | None) -> dict[str, Any]:
        """One SSE ``data`` field as a JSON object, or ``provider_error``."""
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise AgentError.from_code(
                "provider_error",
                f"{self.name} sent a stream event that is not JSON ({exc})",
                details={"provider": self.name, "event": event, "data": data[:500]},
            ) from None
        if not isinstance(payload, dict):
            raise AgentError.from_code(
                "provider_error", f"{self.name} sent a stream event that is not a JSON object",
                details={"provider": self.name, "event": event, "data": data[:500]},
            )
        return payload


def _is_progress(event: ProviderEvent) -> bool:
    """Content: text, reasoning, a tool call, reported progress (prompt
    processing, tool-call arguments). Usage and the finish reason are not."""
    if type(event) is Progress:
        return True
    if type(event) is TextDelta:
        return bool(event.text)
    if type(event) is ThoughtDelta:
        return bool(event.text or event.signature)
    return type(event) is ToolCallRequest
