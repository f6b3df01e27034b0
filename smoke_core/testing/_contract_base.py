"""What every provider contract case uses: the adapter's builders a
subclass implements and the helpers that call the provider over HTTP."""

from __future__ import annotations

import email.utils
import time
import unittest
from collections.abc import Iterable
from typing import Any

from ..base.errors import AgentError
from ..base.messages import user_message
from ..wire.types import (
    ModelRequest,
    ProviderEvent,
    TextDelta,
)
from ._fake_server import FakeProviderServer, Reply

# ---------------------------------------------------------------- helpers


async def collect_events(provider: Any, request: ModelRequest) -> list[ProviderEvent]:
    """Every event of one ``provider.stream(request)`` call, in order."""
    events: list[ProviderEvent] = []
    stream = provider.stream(request)
    try:
        async for event in stream:
            events.append(event)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return events


def upto(chunks: list[bytes], marker: str) -> list[bytes]:
    """``chunks`` up to and including the first one that contains ``marker``."""
    needle = marker.encode("utf-8")
    for i, chunk in enumerate(chunks):
        if needle in chunk:
            return chunks[: i + 1]
    raise AssertionError(f"no chunk contains {marker!r}")


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)




# ---------------------------------------------------------------- the contract


class ContractBase:
    """Base class for provider adapter tests (subclass it as ``TestXxx``).

    Subclasses set :attr:`env_var` and implement the builders below. The
    builders return :class:`Reply` objects in the adapter's wire format.
    """

    #: the environment variable the provider reads its key from
    env_var: str = ""
    #: the model name the contract asks for
    model: str = "test-model"

    # -- to implement -------------------------------------------------

    def make_provider(self, base_url: str, api_key: str | None, **kwargs: Any) -> Any:
        """A provider talking to ``base_url`` (the fake server's root) with
        ``api_key``; ``kwargs`` may hold ``idle_timeout``."""
        raise NotImplementedError

    def text_stream(self, chunks: list[str], *, finish: str = "stop", input_tokens: int = 0,
                    output_tokens: int = 0) -> list[bytes]:
        """SSE chunks streaming ``chunks`` as text deltas, then ``finish``
        (a neutral reason) and the usage. One element per network write."""
        raise NotImplementedError

    def tool_call_stream(self, calls: list[tuple[str, str, list[str]]], *, input_tokens: int = 0,
                         output_tokens: int = 0) -> list[bytes]:
        """SSE chunks for parallel tool calls ``(id, name, argument_fragments)``."""
        raise NotImplementedError

    def error_body(self, message: str) -> bytes:
        """The JSON body the provider sends with an HTTP error status."""
        raise NotImplementedError

    def in_band_error_stream(self, kind: str, *, text_before: str = "") -> list[bytes]:
        """SSE chunks: optional text, then an error event inside the 200
        stream. ``kind`` is ``"overloaded"`` or ``"rate_limited"``."""
        raise NotImplementedError

    # -- misbehaving servers (defaults built from text_stream; override if they do not fit) --

    _MARK = "smoke-contract-marker"

    def _around_a_delta(self) -> tuple[list[bytes], bytes]:
        """The chunks before the first text delta, and that delta with a marker for its text."""
        chunks = self.text_stream([self._MARK])
        needle = self._MARK.encode()
        for i, chunk in enumerate(chunks):
            if needle in chunk:
                return chunks[:i], chunk
        raise AssertionError("text_stream() did not put the text in any chunk")

    def empty_delta_chunk(self) -> bytes:
        """One text delta with empty text (not progress)."""
        return self._around_a_delta()[1].replace(self._MARK.encode(), b"")

    def text_chunk(self, text: str) -> bytes:
        """One text delta carrying ``text`` (plain ASCII, no JSON escaping needed)."""
        return self._around_a_delta()[1].replace(self._MARK.encode(), text.encode())

    def stream_prefix(self) -> list[bytes]:
        """What a stream sends before its first text delta (message start, role chunk, ...)."""
        return self._around_a_delta()[0]

    def rejected_tool_call_replies(self, failed_generation: str) -> list[Reply]:
        """Replies in which the server rejects the model's tool call (Groq's
        in-band ``tool_use_failed``, its HTTP 400, vLLM's 400 for unparsable
        tool-call JSON), each to be classified as ``tool_invalid_input``.
        Skipped for an API that never rejects the model's tool calls."""
        raise unittest.SkipTest(f"{type(self).__name__}: this API does not reject the model's tool calls")

    # -- helpers ----------------------------------------------------------

    def request(self, text: str = "hi", *, tools: list[dict[str, Any]] | None = None,
                settings: dict[str, Any] | None = None) -> ModelRequest:
        return ModelRequest(model=self.model, messages=[user_message(text)], tools=tools or [],
                            system="Be brief.", settings=dict(settings or {}))

    def sse(self, chunks: Iterable[bytes], *, then: str | None = None, interval: float = 0.0) -> Reply:
        return Reply.sse(chunks, then=then, interval=interval)

    def error_reply(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        return Reply(status, {"content-type": "application/json", **(headers or {})}, self.error_body(message))

    async def _call(self, server: FakeProviderServer, request: ModelRequest | None = None,
                    **kwargs: Any) -> list[ProviderEvent]:
        provider = self.make_provider(server.url, "sk-test", **kwargs)
        try:
            return await collect_events(provider, request or self.request())
        finally:
            await provider.aclose()

    async def _call_error(self, server: FakeProviderServer, **kwargs: Any) -> AgentError:
        try:
            await self._call(server, **kwargs)
        except AgentError as exc:
            return exc
        raise AssertionError("the provider did not raise AgentError")

    # -- provider-level tests ----------------------------------------------
