"""Bounds of one HTTP model response (issue 16, item 5).

A stream that never ends must not hold a run or memory forever. Every
response an :class:`~smoke_core.providers.HTTPProvider` reads goes through a
:class:`ResponseBudget` built from the provider's :class:`ResponseLimits`:

- ``response_timeout``: a total deadline from sending the request to the end
  of the reply. Reaching it is ``provider_timeout``, **not retryable** (a
  reply that long would likely take as long again; raise the limit instead).
- ``progress_timeout``: seconds without new content. Keep-alive comments,
  empty deltas, role-only chunks and usage are not content; text, reasoning
  and tool-call argument fragments are. ``provider_timeout``, **retryable**
  (a stuck generation; a new request usually works).
- ``max_response_bytes``: bytes of one reply (raw and decoded are both
  counted). ``provider_error``, **not retryable** (a model looping on its
  own output loops again).
- ``max_line_bytes``: bytes of one line of an event stream (the longest
  legitimate line is one event: one chunk of text or of tool arguments).
  ``provider_error``, **not retryable** (a broken server).

The raw byte stream of the ``httpx.Response`` is wrapped, so these bounds hold
for any adapter, including one reading the stream with ``httpx_sse``'s
``EventSource`` itself; :meth:`ResponseBudget.sse_events` also bounds lines
after decompression. Time limits are enforced around each network read with
``asyncio.timeout`` (never around a ``yield``: the consumer's code never runs
under the provider's timer).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.errors import AgentError

if TYPE_CHECKING:
    import httpx
    from httpx_sse import ServerSentEvent

T = TypeVar("T")

DEFAULT_RESPONSE_TIMEOUT = 1800.0
DEFAULT_PROGRESS_TIMEOUT = 300.0
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
#: an error body is read up to this size (the rest is not needed to classify it)
ERROR_BODY_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class ResponseLimits:
    """The bounds of one response (see the module docstring for what each
    error is and whether it is retried). Settable per provider
    (``provider_options={"response_timeout": 600}``) and per request
    (``model_settings={"progress_timeout": 60}``)."""

    response_timeout: float = DEFAULT_RESPONSE_TIMEOUT
    progress_timeout: float = DEFAULT_PROGRESS_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{f.name} must be a positive number, got {value!r}")

    def override(self, settings: dict[str, Any]) -> ResponseLimits:
        """These limits with the ones ``settings`` names (per-request settings)."""
        changes = {f.name: settings[f.name] for f in fields(self) if settings.get(f.name) is not None}
        if not changes:
            return self
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return ResponseLimits(**values)


class ResponseBudget:
    """The limits of one response as it is read: a clock, a byte count, the
    time of the last progress. One per request; adapters reach it through
    :meth:`HTTPProvider.mark_progress` / :meth:`HTTPProvider.sse_events`."""

    def __init__(self, limits: ResponseLimits, *, provider: str, clock: Any = time.monotonic) -> None:
        self.limits = limits
        self.provider = provider
        self._clock = clock
        self.started = clock()
        self.deadline = self.started + limits.response_timeout
        self.last_progress = self.started
        self.raw_bytes = 0
        self.decoded_bytes = 0

    # ------------------------------------------------------------ time

    def progress(self) -> None:
        """New content arrived (text, reasoning, a tool-call fragment)."""
        self.last_progress = self._clock()

    def _remaining(self) -> tuple[float, str]:
        now = self._clock()
        to_deadline = self.deadline - now
        to_stall = self.last_progress + self.limits.progress_timeout - now
        return (to_deadline, "deadline") if to_deadline <= to_stall else (to_stall, "progress")

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable``, bounded by the deadline and the progress timeout."""
        left, which = self._remaining()
        if left <= 0:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise self.timeout_error(which)
        try:
            async with asyncio.timeout(left) as scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                raise self.timeout_error(which) from None
            raise

    def timeout_error(self, which: str) -> AgentError:
        elapsed = round(self._clock() - self.started, 3)
        details: dict[str, Any] = {"provider": self.provider, "elapsed_s": elapsed}
        if which == "deadline":
            details["response_timeout"] = self.limits.response_timeout
            return AgentError.from_code(
                "provider_timeout",
                f"{self.provider} did not finish its reply within response_timeout="
                f"{self.limits.response_timeout:g} s",
                hint="A reply this long would take as long again, so it is not retried; raise response_timeout "
                     "(provider_options or model_settings) if the model really needs longer.",
                retryable=False, details={**details, "limit": "response_timeout"},
            )
        details["progress_timeout"] = self.limits.progress_timeout
        return AgentError.from_code(
            "provider_timeout",
            f"{self.provider} sent no new content for {self.limits.progress_timeout:g} s (keep-alives and empty "
            f"deltas only; progress_timeout)",
            hint="The generation looks stuck; it is retried. Raise progress_timeout for a model that thinks "
                 "silently for longer.",
            details={**details, "limit": "progress_timeout"},
        )

    # ------------------------------------------------------------ size

    def too_large(self, received: int) -> AgentError:
        cap = self.limits.max_response_bytes
        return AgentError.from_code(
            "provider_error",
            f"{self.provider} sent more than max_response_bytes={cap} bytes in one reply; the reply was cut off",
            hint="A model repeating itself produces this; raise max_response_bytes if the reply is legitimate.",
            details={"provider": self.provider, "limit": "max_response_bytes", "max_response_bytes": cap,
                     "received_bytes": received},
        )

    def line_too_long(self, length: int) -> AgentError:
        cap = self.limits.max_line_bytes
        return AgentError.from_code(
            "provider_error",
            f"{self.provider} sent an event-stream line longer than max_line_bytes={cap} bytes",
            hint="The server is not sending a well-formed event stream; raise max_line_bytes if one event is "
                 "really that large.",
            details={"provider": self.provider, "limit": "max_line_bytes", "max_line_bytes": cap,
                     "line_bytes": length},
        )

    def count_raw(self, n: int) -> None:
        self.raw_bytes += n
        if self.raw_bytes > self.limits.max_response_bytes:
            raise self.too_large(self.raw_bytes)

    def count_decoded(self, n: int) -> None:
        self.decoded_bytes += n
        if self.decoded_bytes > self.limits.max_response_bytes:
            raise self.too_large(self.decoded_bytes)

    # ------------------------------------------------------------ reading

    def attach(self, response: httpx.Response, *, sse: bool) -> None:
        """Wrap ``response``'s raw byte stream: every read is bounded in time,
        bytes are counted, and (for an uncompressed event stream) lines too."""
        identity = response.headers.get("content-encoding", "identity").strip().lower() in ("", "identity")
        response.stream = _bounded_stream_class()(response.stream, self, lines=sse and identity)

    async def read_body(self, response: httpx.Response, *, limit: int | None = None) -> bytes:
        """The decoded body, at most ``limit`` bytes (cut there, for error
        bodies) or else at most ``max_response_bytes`` (beyond: an error)."""
        parts: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if limit is not None and size >= limit:
                parts.append(chunk[: len(chunk) - (size - limit)])
                break
            self.count_decoded(len(chunk))
            parts.append(chunk)
        return b"".join(parts)

    async def sse_events(self, response: httpx.Response) -> AsyncGenerator[ServerSentEvent, None]:
        """The events of an event-stream response (``httpx_sse``'s decoder over
        lines split here, so no line grows past ``max_line_bytes``)."""
        from httpx_sse._decoders import SSEDecoder

        decoder = SSEDecoder()
        cap = self.limits.max_line_bytes
        pending = ""
        trailing_cr = False
        async for text in response.aiter_text():
            self.count_decoded(len(text))
            if trailing_cr and text.startswith("\n"):
                text = text[1:]
            trailing_cr = text.endswith("\r")
            buffer = pending + text
            if "\r" in buffer:
                buffer = buffer.replace("\r\n", "\n").replace("\r", "\n")
            lines = buffer.split("\n")
            pending = lines.pop()
            if len(pending) > cap:
                raise self.line_too_long(len(pending))
            for line in lines:
                if len(line) > cap:
                    raise self.line_too_long(len(line))
                sse = decoder.decode(line)
                if sse is not None:
                    yield sse
        if pending:
            sse = decoder.decode(pending)
            if sse is not None:
                yield sse


_STREAM_CLASS: Any = None


def _bounded_stream_class() -> Any:
    """``httpx.AsyncByteStream`` subclass, built on first use (core does not import httpx at start-up)."""
    global _STREAM_CLASS
    if _STREAM_CLASS is not None:
        return _STREAM_CLASS
    import httpx

    class BoundedByteStream(httpx.AsyncByteStream):
        def __init__(self, inner: httpx.AsyncByteStream, budget: ResponseBudget, *, lines: bool) -> None:
            self.inner = inner
            self.budget = budget
            self.lines = lines
            self.line_bytes = 0

        async def __aiter__(self) -> AsyncIterator[bytes]:
            budget = self.budget
            iterator = self.inner.__aiter__()
            while True:
                try:
                    chunk = await budget.wait(iterator.__anext__())
                except StopAsyncIteration:
                    return
                budget.count_raw(len(chunk))  # time: wait() checks before every read (keep-alives are no progress)
                if self.lines:
                    self._count_line(chunk)
                yield chunk

        def _count_line(self, chunk: bytes) -> None:
            cap = self.budget.limits.max_line_bytes
            nl, cr = chunk.find(b"\n"), chunk.find(b"\r")
            first = min(i for i in (nl, cr) if i >= 0) if nl >= 0 or cr >= 0 else -1
            if len(chunk) > cap and first >= 0:
                longest = max(len(part) for part in chunk.replace(b"\r", b"\n").split(b"\n")[1:-1] or [b""])
                if longest > cap:
                    raise self.budget.line_too_long(longest)
            if first < 0:
                self.line_bytes += len(chunk)
            else:
                if self.line_bytes + first > cap:
                    raise self.budget.line_too_long(self.line_bytes + first)
                last = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
                self.line_bytes = len(chunk) - last - 1
            if self.line_bytes > cap:
                raise self.budget.line_too_long(self.line_bytes)

        async def aclose(self) -> None:
            await self.inner.aclose()

    _STREAM_CLASS = BoundedByteStream
    return _STREAM_CLASS


def budget_of(response: httpx.Response) -> ResponseBudget | None:
    """The budget attached to ``response`` (None for a response not read through HTTPProvider)."""
    stream = getattr(response, "stream", None)
    budget = getattr(stream, "budget", None)
    return budget if isinstance(budget, ResponseBudget) else None
