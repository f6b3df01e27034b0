"""Contract tests for provider adapters, and the HTTP test server they use.

A provider plugin subclasses :class:`ProviderContract` in its tests::

    from smoke_core.testing import ProviderContract, Reply

    class TestMyProviderContract(ProviderContract):
        env_var = "MY_API_KEY"

        def make_provider(self, base_url, api_key, **kwargs):
            return MyProvider(model="m", base_url=base_url, api_key=api_key, **kwargs)

        def text_stream(self, chunks, *, finish="stop", input_tokens=0, output_tokens=0): ...
        def tool_call_stream(self, calls, *, input_tokens=0, output_tokens=0): ...
        def error_body(self, message): ...
        def in_band_error_stream(self, kind, *, text_before=""): ...

The contract's tests talk to the provider over real HTTP on 127.0.0.1
(:class:`FakeProviderServer`), one at the provider level and one through
real agent runs with a fast :class:`~smoke_core.providers.RetryPolicy`:
text streaming, tool-call assembly, usage, finish reasons, 401, 429 with
``Retry-After`` (seconds and HTTP date), 503, 529, a connection dropped
mid-stream, a stall (idle timeout), garbage bytes, in-band error events,
abort closing the stream, and that no tool call ever runs twice.

The class name has no ``Test`` prefix, so pytest collects it only through
subclasses. This module needs no pytest import; tests use ``tmp_path``.

Why this module is long: it is a test kit, not run-time code — the fault
matrix every provider adapter subclasses (HTTP statuses, in-band errors,
stalls, retries), the fake server it runs against and the cassette loader.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import gzip
import http.server
import itertools
import json
import os
import select
import socket
import threading
import time
import unittest
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import AgentError
from .._messages import user_message
from .._provider_types import (
    Finished,
    ModelRequest,
    ProviderEvent,
    RetryPolicy,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    UsageReport,
)

__all__ = [
    "Cassette",
    "FakeProviderServer",
    "Interaction",
    "ProviderContract",
    "RecordedRequest",
    "Reply",
    "collect_events",
    "load_cassette",
    "upto",
]


# ---------------------------------------------------------------- the server


@dataclass
class Reply:
    """One scripted HTTP response.

    ``body`` bytes are sent with ``Content-Length``; any other iterable of
    byte chunks (a list, or an endless generator for a misbehaving server) is
    sent with chunked transfer encoding, one flush per chunk, ``interval``
    seconds apart; the server stops writing when the client goes away.
    ``then`` says what happens after the chunks: ``None`` (end the response
    properly), ``"drop"`` (close the socket without the final chunk: a
    dropped connection) or ``"stall"`` (keep the connection open and send
    nothing until the client goes away or the server closes). ``silent``:
    read the request and never answer at all (not even a status line).
    """

    status: int = 200
    headers: dict[str, str] | list[tuple[str, str]] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""
    then: str | None = None
    interval: float = 0.0
    silent: bool = False

    @classmethod
    def no_answer(cls) -> Reply:
        """A server that accepts the request and never answers."""
        return cls(silent=True)

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, {"content-type": "application/json", **(headers or {})}, json.dumps(data).encode())

    @classmethod
    def sse(cls, chunks: Iterable[bytes | str], *, then: str | None = None,
            headers: dict[str, str] | None = None, interval: float = 0.0) -> Reply:
        body: Iterable[bytes]
        if isinstance(chunks, (list, tuple)):
            body = [c.encode() if isinstance(c, str) else c for c in chunks]
        else:  # an endless generator stays lazy
            body = (c.encode() if isinstance(c, str) else c for c in chunks)
        return cls(200, {"content-type": "text/event-stream; charset=utf-8", **(headers or {})}, body, then,
                   interval)

    def header_items(self) -> list[tuple[str, str]]:
        items = self.headers.items() if isinstance(self.headers, dict) else self.headers
        return [(str(k), str(v)) for k, v in items]


@dataclass
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


ReplySource = Reply | Callable[[RecordedRequest], Reply]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        received = self.rfile.read(length) if length else b""
        fake = self.server.fake
        recorded = RecordedRequest(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, received
        )
        reply = fake._next_reply(recorded)
        if reply.silent:
            self.close_connection = True
            fake.stalled.set()
            self._wait_for_client_close()
            return
        self.send_response(reply.status)
        names = {k.lower() for k, _ in reply.header_items()}
        for key, value in reply.header_items():
            self.send_header(key, value)
        body = reply.body
        if isinstance(body, (bytes, bytearray)):
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        if reply.then or "connection" in names:
            self.close_connection = True
        self.end_headers()
        if isinstance(body, (bytes, bytearray)):
            self.wfile.write(body)
            self.wfile.flush()
            return
        for chunk in body:
            if fake._stopping.is_set():
                self.close_connection = True
                return
            if chunk:
                try:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                except OSError:  # the client went away (a bounded reader gave up)
                    self.close_connection = True
                    fake.disconnected.set()
                    return
            if reply.interval:
                fake._stopping.wait(reply.interval)
        if reply.then == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.then == "stall":
            self.close_connection = True
            fake.stalled.set()
            self._wait_for_client_close()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _wait_for_client_close(self) -> None:
        sock = self.connection
        fake = self.server.fake
        while not fake._stopping.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], 0.05)
            except (OSError, ValueError):
                break
            if readable:
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    fake.disconnected.set()
                    return

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeProviderServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that gave up on a reply (a bounded reader, an abort): expected here
        super().handle_error(request, client_address)


class FakeProviderServer:
    """A real HTTP server on 127.0.0.1 (a free port) that plays scripted
    :class:`Reply` objects in order and records every request.

    Use as a context manager (sync or async). ``url`` is its root;
    ``requests`` the received requests; ``stalled`` is set when a ``"stall"``
    reply has sent its chunks and ``disconnected`` when the client closed a
    stalled connection. A request with no reply left gets a 400 naming it.
    A reply may be a callable ``(RecordedRequest) -> Reply``.
    """

    def __init__(self, replies: Iterable[ReplySource] = ()) -> None:
        self.replies: list[ReplySource] = list(replies)
        self.requests: list[RecordedRequest] = []
        self.stalled = threading.Event()
        self.disconnected = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def add(self, *replies: ReplySource) -> None:
        with self._lock:
            self.replies.extend(replies)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
            source = self.replies[index] if index < len(self.replies) else None
        if source is None:
            return Reply.json(
                {"error": {"type": "invalid_request_error",
                           "message": f"FakeProviderServer: no reply scripted for request {index + 1}"}},
                status=400,
            )
        return source(request) if callable(source) else source

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> FakeProviderServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-provider-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> FakeProviderServer:
        return self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self.close)

    async def wait(self, event: threading.Event, timeout: float = 10.0) -> bool:
        """Wait for one of the server's events without blocking the loop."""
        return await asyncio.to_thread(event.wait, timeout)


def unused_port() -> int:
    """A loopback port nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- cassettes


@dataclass
class Interaction:
    """A recorded request/response pair. ``request_body`` is the parsed JSON
    the client sent (or None); ``reply`` replays the response."""

    method: str
    uri: str
    request_headers: dict[str, str]
    request_body: Any
    reply: Reply


@dataclass
class Cassette:
    path: Path
    interactions: list[Interaction]

    def replies(self) -> list[Reply]:
        return [i.reply for i in self.interactions]


_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}


def _first(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value)


def load_cassette(path: str | os.PathLike[str], *, split_sse: bool = True) -> Cassette:
    """Read a recorded cassette in any of the three common YAML formats:
    vcrpy (``response.body.string``, ``response.status.code``), pydantic-ai
    (``parsed_body`` mappings, SSE kept in ``body.string``) and httpx-style
    (``response.content``, ``response.status_code``). Gzip ``!!binary``
    bodies are served gzip-encoded. SSE bodies are split into one chunk per
    event when ``split_sse``."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    interactions: list[Interaction] = []
    for item in data.get("interactions") or []:
        req = item.get("request") or {}
        resp = item.get("response") or {}
        req_headers = {str(k).lower(): _first(v) for k, v in (req.get("headers") or {}).items()}
        if "parsed_body" in req:
            req_body = req["parsed_body"]
        else:
            raw = req.get("body")
            if isinstance(raw, dict):
                raw = raw.get("string")
            if isinstance(raw, bytes):
                raw = raw.decode("utf-8", "replace")
            try:
                req_body = json.loads(raw) if raw else None
            except ValueError:
                req_body = raw
        status = resp.get("status_code")
        if status is None:
            st = resp.get("status")
            status = st.get("code") if isinstance(st, dict) else st
        headers: list[tuple[str, str]] = []
        content_encoding = None
        for key, value in (resp.get("headers") or {}).items():
            lk = str(key).lower()
            if lk == "content-encoding":
                content_encoding = _first(value)
            if lk in _HOP_HEADERS:
                continue
            for v in value if isinstance(value, list) else [value]:
                headers.append((str(key), str(v)))
        if "parsed_body" in resp:
            body: bytes = json.dumps(resp["parsed_body"]).encode("utf-8")
        elif "content" in resp:
            content = resp["content"]
            body = content if isinstance(content, bytes) else str(content).encode("utf-8")
        else:
            raw_body = resp.get("body")
            if isinstance(raw_body, dict):
                raw_body = raw_body.get("string", b"")
            if raw_body is None:
                raw_body = b""
            body = raw_body if isinstance(raw_body, bytes) else str(raw_body).encode("utf-8")
        if body[:2] == b"\x1f\x8b":
            headers.append(("Content-Encoding", content_encoding or "gzip"))
        ctype = next((v for k, v in headers if k.lower() == "content-type"), "")
        reply_body: bytes | list[bytes] = body
        if split_sse and "text/event-stream" in ctype and body[:2] != b"\x1f\x8b":
            text = body.decode("utf-8")
            parts = [p + "\n\n" for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
            reply_body = [p.encode("utf-8") for p in parts]
        interactions.append(
            Interaction(str(req.get("method") or "POST"), str(req.get("uri") or ""), req_headers, req_body,
                        Reply(int(status or 200), headers, reply_body))
        )
    return Cassette(Path(path), interactions)


def gunzip_if_needed(body: bytes) -> bytes:
    return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body


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


def _text(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


# ---------------------------------------------------------------- the contract


class ProviderContract:
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

    async def test_contract_text_streaming(self) -> None:
        chunks = self.text_stream(["Hel", "lo", " world"], input_tokens=11, output_tokens=3)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        deltas = [e.text for e in events if isinstance(e, TextDelta)]
        assert deltas == ["Hel", "lo", " world"]
        usage = [e.usage for e in events if isinstance(e, UsageReport)]
        assert len(usage) == 1
        assert (usage[0].input_tokens, usage[0].output_tokens) == (11, 3)
        assert isinstance(events[-1], Finished) and events[-1].reason == "stop"
        assert [e for e in events if isinstance(e, Finished)] == [events[-1]]

    async def test_contract_finish_reason_length(self) -> None:
        chunks = self.text_stream(["cut"], finish="length", input_tokens=1, output_tokens=1)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        assert isinstance(events[-1], Finished) and events[-1].reason == "length"

    async def test_contract_tool_call_assembly(self) -> None:
        calls = [
            ("call_a", "read_file", ['{"pa', 'th": "a', '.txt"}']),
            ("call_b", "grep", ["", '{"pattern": ', '"x"}']),
        ]
        chunks = self.tool_call_stream(calls, input_tokens=20, output_tokens=9)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        got = [e for e in events if isinstance(e, ToolCallRequest)]
        assert [(c.id, c.name) for c in got] == [("call_a", "read_file"), ("call_b", "grep")]
        args = [json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments for c in got]
        assert args == [{"path": "a.txt"}, {"pattern": "x"}]
        assert isinstance(events[-1], Finished) and events[-1].reason == "tool_calls"
        usage = [e.usage for e in events if isinstance(e, UsageReport)]
        assert [(u.input_tokens, u.output_tokens) for u in usage] == [(20, 9)]
        # a tool call comes out once, complete, after the text and thoughts
        first_call = events.index(got[0])
        assert not any(isinstance(e, (TextDelta, ThoughtDelta)) for e in events[first_call:])

    async def test_contract_sends_key(self) -> None:
        chunks = self.text_stream(["ok"])
        async with FakeProviderServer([self.sse(chunks)]) as server:
            await self._call(server)
        headers = server.requests[0].headers
        assert "sk-test" in (headers.get("authorization", "") + headers.get("x-api-key", ""))
        assert headers["content-type"] == "application/json"

    async def test_contract_401_is_provider_auth(self) -> None:
        async with FakeProviderServer([self.error_reply(401, "invalid key")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_auth"
        assert exc.info.retryable is False
        assert self.env_var in (exc.info.hint or "")
        assert "invalid key" in exc.info.message

    async def test_contract_missing_key_is_provider_auth(self) -> None:
        saved = os.environ.pop(self.env_var, None)
        try:
            provider = self.make_provider("http://127.0.0.1:9", None)
            try:
                await collect_events(provider, self.request())
            except AgentError as exc:
                assert exc.info.code == "provider_auth"
                assert exc.info.hint == f"Set {self.env_var} or pass api_key=."
            else:
                raise AssertionError("a missing key must raise provider_auth")
            finally:
                await provider.aclose()
        finally:
            if saved is not None:
                os.environ[self.env_var] = saved

    async def test_contract_429_retry_after_seconds(self) -> None:
        reply = self.error_reply(429, "slow down", {"retry-after": "7"})
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"
        assert exc.info.retryable is True
        assert exc.info.details["retry_after"] == 7.0

    async def test_contract_429_retry_after_http_date(self) -> None:
        reply = self.error_reply(429, "slow down", {"retry-after": http_date(120)})
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"
        assert 100 < exc.info.details["retry_after"] <= 121

    async def test_contract_503_is_unavailable(self) -> None:
        async with FakeProviderServer([self.error_reply(503, "down")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.details["status"] == 503

    async def test_contract_529_is_unavailable(self) -> None:
        async with FakeProviderServer([self.error_reply(529, "overloaded")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"

    async def test_contract_400_is_provider_error(self) -> None:
        async with FakeProviderServer([self.error_reply(400, "bad field")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"
        assert exc.info.retryable is False
        assert "bad field" in exc.info.message

    async def test_contract_malformed_json_is_provider_error(self) -> None:
        reply = self.sse([b"event: message_start\ndata: {not json at all\n\n"])
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"
        assert "not json" in json.dumps(exc.info.details)

    async def test_contract_garbage_bytes_is_provider_error(self) -> None:
        reply = self.sse([b"\x00\xff\xfe garbage \x89PNG\r\n\x1a\n\x00\x00", b"\xde\xad\xbe\xef"])
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"

    async def test_contract_dropped_stream_is_unavailable(self) -> None:
        chunks = self.text_stream(["par", "tial", " more"])
        reply = self.sse(upto(chunks, "tial"), then="drop")
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.retryable is True

    async def test_contract_stall_hits_idle_timeout(self) -> None:
        chunks = self.text_stream(["wait"])
        async with FakeProviderServer([self.sse(upto(chunks, "wait"), then="stall")]) as server:
            exc = await self._call_error(server, idle_timeout=0.3)
        assert exc.info.code == "provider_timeout"
        assert exc.info.retryable is True

    async def test_contract_connection_refused_is_unavailable(self) -> None:
        provider = self.make_provider(f"http://127.0.0.1:{unused_port()}", "sk-test")
        try:
            await collect_events(provider, self.request())
        except AgentError as exc:
            assert exc.info.code == "provider_unavailable"
            assert exc.info.details.get("transport") == "connect"
        else:
            raise AssertionError("connection refused must raise")
        finally:
            await provider.aclose()

    async def test_contract_in_band_overloaded(self) -> None:
        reply = self.sse(self.in_band_error_stream("overloaded"))
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.details.get("in_band") is True

    async def test_contract_in_band_rate_limited(self) -> None:
        reply = self.sse(self.in_band_error_stream("rate_limited"))
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"

    async def test_contract_abort_closes_stream(self) -> None:
        chunks = self.text_stream(["first"])
        async with FakeProviderServer([self.sse(upto(chunks, "first"), then="stall")]) as server:
            provider = self.make_provider(server.url, "sk-test")
            got_text = asyncio.Event()
            seen: list[ProviderEvent] = []

            async def consume() -> None:
                async for event in provider.stream(self.request()):
                    seen.append(event)
                    if isinstance(event, TextDelta):
                        got_text.set()

            task = asyncio.ensure_future(consume())
            try:
                await asyncio.wait_for(got_text.wait(), 10)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                assert await server.wait(server.disconnected, 10), "the server never saw the connection close"
            finally:
                await provider.aclose()
        assert _text(seen) == "first"

    # -- bounded responses (small limits; every case ends in a classified error) --

    async def _bounded(self, reply: Reply, **limits: Any) -> AgentError:
        async with FakeProviderServer([reply]) as server:
            exc = await asyncio.wait_for(self._call_error(server, **limits), 30)
        return exc

    async def test_contract_endless_empty_deltas_hit_progress_timeout(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(self.empty_delta_chunk()))
        exc = await self._bounded(self.sse(endless, interval=0.002), progress_timeout=0.3)
        assert exc.info.code == "provider_timeout" and exc.info.retryable is True
        assert exc.info.details["limit"] == "progress_timeout"

    async def test_contract_endless_keep_alives_hit_progress_timeout(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(b": keep-alive\n\n"))
        exc = await self._bounded(self.sse(endless, interval=0.002), progress_timeout=0.3)
        assert exc.info.code == "provider_timeout" and exc.info.details["limit"] == "progress_timeout"

    async def test_contract_text_keeps_a_stream_alive_past_progress_timeout(self) -> None:
        # content every 0.04 s for ~0.9 s: longer than the progress timeout in total, never a gap that long
        chunks = self.text_stream([f"w{i} " for i in range(22)])
        async with FakeProviderServer([Reply.sse(chunks, interval=0.04)]) as server:
            events = await self._call(server, progress_timeout=0.6)
        assert _text(events) == "".join(f"w{i} " for i in range(22))

    async def test_contract_tool_arguments_are_progress(self) -> None:
        fragments = ['{"key": "', *["k"] * 20, '"}']
        chunks = self.tool_call_stream([("call_slow", "lookup", fragments)])
        async with FakeProviderServer([Reply.sse(chunks, interval=0.04)]) as server:
            events = await self._call(server, progress_timeout=0.6)
        calls = [e for e in events if isinstance(e, ToolCallRequest)]
        assert len(calls) == 1
        args = calls[0].arguments
        assert (json.loads(args) if isinstance(args, str) else args) == {"key": "k" * 20}

    async def test_contract_byte_trickle_hits_response_timeout(self) -> None:
        def trickle() -> Iterator[bytes]:
            yield from self.stream_prefix()
            for chunk in itertools.repeat(self.text_chunk("slow ")):
                for i in range(len(chunk)):
                    yield chunk[i : i + 1]

        exc = await self._bounded(self.sse(trickle(), interval=0.005), response_timeout=0.5)
        assert exc.info.code == "provider_timeout" and exc.info.retryable is False
        assert exc.info.details["limit"] == "response_timeout"
        assert "response_timeout" in (exc.info.hint or "")

    async def test_contract_endless_text_hits_max_response_bytes(self) -> None:
        cap = 64 * 1024
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(self.text_chunk("spam " * 40)))
        exc = await self._bounded(self.sse(endless), max_response_bytes=cap)
        assert exc.info.code == "provider_error" and exc.info.retryable is False
        assert exc.info.details["limit"] == "max_response_bytes"
        # memory stays bounded: reading stopped within one network read of the cap
        assert cap < exc.info.details["received_bytes"] <= cap + 128 * 1024

    async def test_contract_one_endless_sse_line_hits_max_line_bytes(self) -> None:
        endless = itertools.chain(self.stream_prefix(), [b'data: {"endless": "'], itertools.repeat(b"a" * 1024))
        exc = await self._bounded(self.sse(endless), max_line_bytes=16 * 1024)
        assert exc.info.code == "provider_error" and exc.info.retryable is False
        assert exc.info.details["limit"] == "max_line_bytes"
        assert exc.info.details["line_bytes"] <= 16 * 1024 + 128 * 1024

    async def test_contract_endless_json_body_hits_max_response_bytes(self) -> None:
        endless = itertools.chain([b'{"choices": [{"message": {"content": "'], itertools.repeat(b"b" * 4096))
        reply = Reply(200, {"content-type": "application/json"}, endless)
        exc = await self._bounded(reply, max_response_bytes=64 * 1024)
        assert exc.info.code == "provider_error" and exc.info.details["limit"] == "max_response_bytes"

    async def test_contract_silent_server_hits_response_timeout(self) -> None:
        exc = await self._bounded(Reply.no_answer(), response_timeout=0.4)
        assert exc.info.code == "provider_timeout" and exc.info.details["limit"] == "response_timeout"

    async def test_contract_limits_per_request_settings(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(b": ping\n\n"))
        async with FakeProviderServer([self.sse(endless, interval=0.002)]) as server:
            provider = self.make_provider(server.url, "sk-test")
            try:
                request = self.request(settings={"progress_timeout": 0.3})
                await asyncio.wait_for(collect_events(provider, request), 30)
            except AgentError as exc:
                assert exc.info.details["progress_timeout"] == 0.3
            else:
                raise AssertionError("endless keep-alives must end in provider_timeout")
            finally:
                await provider.aclose()
        body = server.requests[0].json
        assert "progress_timeout" not in json.dumps(body)  # a transport setting, not a body field

    # -- tool calls the provider rejects (the model's mistake) ---------------

    async def test_contract_rejected_tool_call_is_tool_invalid_input(self) -> None:
        tools = [{"name": "lookup", "description": "Look a key up.",
                  "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}}}]
        for reply in self.rejected_tool_call_replies('<function=lookup>{"key": k}</function>'):
            async with FakeProviderServer([reply]) as server:
                provider = self.make_provider(server.url, "sk-test")
                try:
                    await collect_events(provider, self.request(tools=tools))
                except AgentError as exc:
                    assert exc.info.code == "tool_invalid_input", exc.info
                    assert exc.info.layer == "tool" and exc.info.retryable is False
                else:
                    raise AssertionError(f"a rejected tool call must raise tool_invalid_input: {reply}")
                finally:
                    await provider.aclose()

    async def test_contract_400_with_tools_is_still_provider_error(self) -> None:
        tools = [{"name": "lookup", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
        async with FakeProviderServer([self.error_reply(400, "max_tokens is too large")]) as server:
            provider = self.make_provider(server.url, "sk-test")
            try:
                await collect_events(provider, self.request(tools=tools))
            except AgentError as exc:
                assert exc.info.code == "provider_error"
            else:
                raise AssertionError("a 400 must raise")
            finally:
                await provider.aclose()

    # -- agent-level tests (real runs, fast retries) -------------------------

    def _agent(self, tmp_path: Path, provider: Any, *tools: Any, **kwargs: Any) -> Any:
        from .._factory import create_agent

        kwargs.setdefault("retry", RetryPolicy(base_delay=0.001, max_delay=0.01))
        return create_agent(tmp_path, provider=provider, tools=list(tools), autoload_plugins=False,
                            auto_approve=True, system_prompt="Be brief.", **kwargs)

    @staticmethod
    def _counting_tool() -> tuple[Any, list[dict[str, Any]]]:
        from .._tool_decorator import tool

        calls: list[dict[str, Any]] = []

        @tool(name="lookup")
        def lookup(key: str) -> str:
            """Look a key up."""
            calls.append({"key": key})
            return f"value of {key}"

        return lookup, calls

    async def _run(self, tmp_path: Path, replies: list[ReplySource], *, max_retries: int = 4,
                   provider_kwargs: dict[str, Any] | None = None) -> tuple[Any, list[Any], FakeProviderServer,
                                                                          list[dict[str, Any]]]:
        lookup, executions = self._counting_tool()
        async with FakeProviderServer(replies) as server:
            provider = self.make_provider(server.url, "sk-test", **(provider_kwargs or {}))
            agent = self._agent(tmp_path, provider, lookup,
                                retry=RetryPolicy(max_retries=max_retries, base_delay=0.001, max_delay=0.01))
            events: list[Any] = []
            agent.on_any(events.append)
            try:
                result = await agent.run("look up k")
            finally:
                await provider.aclose()
                await agent.aclose()
        return result, events, server, executions

    @staticmethod
    def _types(events: list[Any]) -> list[str]:
        return [e.type for e in events]

    async def test_contract_agent_retries_429_with_retry_after(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.error_reply(429, "slow", {"retry-after": "3"}),
            self.error_reply(429, "slow", {"retry-after": http_date(30)}),
            self.sse(self.text_stream(["done"], input_tokens=5, output_tokens=1)),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "done"
        assert len(server.requests) == 3
        warnings = [e.data for e in events if e.type == "run.warning"]
        assert [w["error"]["code"] for w in warnings] == ["provider_rate_limited"] * 2
        assert warnings[0]["error"]["details"]["retry_after"] == 3.0
        assert warnings[1]["error"]["details"]["retry_after"] > 20
        assert all(w["retry_in_ms"] <= 10 for w in warnings)  # capped by max_delay
        assert "text.discarded" not in self._types(events)

    async def test_contract_agent_retries_503_and_529(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.error_reply(503, "down"),
            self.error_reply(529, "overloaded"),
            self.sse(self.text_stream(["up"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "up"
        assert len(server.requests) == 3
        codes = [e.data["error"]["details"]["status"] for e in events if e.type == "run.warning"]
        assert codes == [503, 529]

    async def test_contract_agent_gives_up_after_max_retries(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.error_reply(503, "down")] * 3
        result, events, server, _ = await self._run(tmp_path, replies, max_retries=1)
        assert result.status == "failed"
        assert result.error.code == "provider_unavailable"
        assert len(server.requests) == 2
        assert self._types(events).count("run.warning") == 1
        assert self._types(events).count("run.failed") == 1

    async def test_contract_agent_auth_is_not_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.error_reply(401, "bad key"), self.sse(self.text_stream(["x"]))]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "failed" and result.error.code == "provider_auth"
        assert self.env_var in (result.error.hint or "")
        assert len(server.requests) == 1
        assert "run.warning" not in self._types(events)

    async def test_contract_agent_drop_after_text_discards(self, tmp_path: Path) -> None:
        partial = self.text_stream(["Hello ", "wor"])
        replies: list[ReplySource] = [
            self.sse(upto(partial, "wor"), then="drop"),
            self.sse(self.text_stream(["Hello ", "world"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "Hello world"
        assert len(server.requests) == 2
        types = self._types(events)
        assert types.count("text.discarded") == 1
        discarded = next(e for e in events if e.type == "text.discarded")
        assert discarded.data["reason"] == "provider_unavailable"
        assert discarded.data["text"].startswith("Hello")
        # the discard comes before the warning and before the replayed deltas
        d = types.index("text.discarded")
        assert types.index("run.warning") > d
        replay = [e.data["text"] for e in events[d:] if e.type == "text.delta"]
        assert "".join(replay) == "Hello world"
        assert result.messages[-1]["content"] == [{"type": "text", "text": "Hello world"}]

    async def test_contract_agent_stall_times_out_and_retries(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.sse(upto(self.text_stream(["x"]), '"x"'), then="stall"),
            self.sse(self.text_stream(["fine"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"idle_timeout": 0.3})
        assert result.status == "completed" and result.text == "fine"
        warnings = [e.data["error"]["code"] for e in events if e.type == "run.warning"]
        assert warnings == ["provider_timeout"]
        assert len(server.requests) == 2

    async def test_contract_agent_garbage_is_not_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.sse([b"\x00\x01\x02garbage\xff"]), self.sse(self.text_stream(["x"]))]
        result, _events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "failed" and result.error.code == "provider_error"
        assert len(server.requests) == 1

    async def test_contract_agent_in_band_error_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.sse(self.in_band_error_stream("overloaded", text_before="Thinking")),
            self.sse(self.in_band_error_stream("rate_limited")),
            self.sse(self.text_stream(["ok"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "ok"
        warnings = [e.data["error"]["code"] for e in events if e.type == "run.warning"]
        assert warnings == ["provider_unavailable", "provider_rate_limited"]
        assert self._types(events).count("text.discarded") == 1
        assert len(server.requests) == 3

    async def test_contract_agent_tool_call_never_runs_twice(self, tmp_path: Path) -> None:
        call = [("call_1", "lookup", ['{"key"', ': "k"}'])]
        full = self.tool_call_stream(call, input_tokens=3, output_tokens=2)
        replies: list[ReplySource] = [
            self.sse(full[: max(1, len(full) // 2)], then="drop"),  # dropped while the call streams
            self.sse(full),  # the call, complete: runs once
            self.sse(upto(self.text_stream(["after"]), "after"), then="drop"),  # dropped after the tool ran
            self.error_reply(503, "down"),
            self.sse(self.text_stream(["answer"])),
        ]
        result, events, server, executions = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "answer"
        assert executions == [{"key": "k"}]
        assert self._types(events).count("tool.started") == 1
        assert len(server.requests) == 5
        # every request after the tool ran carries its result exactly once
        for req in server.requests[2:]:
            assert json.dumps(req.json).count("value of k") == 1

    async def test_contract_agent_no_progress_is_retried_deadline_is_not(self, tmp_path: Path) -> None:
        stuck = itertools.chain(self.stream_prefix(), itertools.repeat(b": keep-alive\n\n"))
        replies: list[ReplySource] = [self.sse(stuck, interval=0.002), self.sse(self.text_stream(["fine"]))]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"progress_timeout": 0.3})
        assert result.status == "completed" and result.text == "fine"
        assert [e.data["error"]["code"] for e in events if e.type == "run.warning"] == ["provider_timeout"]

        replies = [Reply.no_answer(), self.sse(self.text_stream(["never"]))]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"response_timeout": 0.3})
        assert result.status == "failed" and result.error.code == "provider_timeout"
        assert result.error.details["limit"] == "response_timeout"
        assert len(server.requests) == 1  # not retried

    async def test_contract_agent_rejected_tool_call_then_valid_call(self, tmp_path: Path) -> None:
        failed = '<function=lookup>{"key": k}</function>'
        forms = self.rejected_tool_call_replies(failed)
        for n, rejected in enumerate(forms):
            call = [(f"call_ok_{n}", "lookup", ['{"key": "k"}'])]
            replies: list[ReplySource] = [
                rejected,
                self.sse(self.tool_call_stream(call, input_tokens=3, output_tokens=2)),
                self.sse(self.text_stream(["done"])),
            ]
            workspace = tmp_path / f"form{n}"
            workspace.mkdir()
            result, events, server, executions = await self._run(workspace, replies)
            assert result.status == "completed" and result.text == "done", (n, result.error)
            assert executions == [{"key": "k"}], n  # the valid call ran once; the rejected one never
            warnings = [e.data["error"] for e in events if e.type == "run.warning"]
            assert [w["code"] for w in warnings] == ["tool_invalid_input"], n
            assert len(server.requests) == 3
            # text streamed before the rejection is withdrawn before the warning
            types = self._types(events)
            before = types[: types.index("run.warning")]
            if "text.delta" in before:
                assert "text.discarded" in before, n
            # the model was told what failed before it was asked again
            retry = json.dumps(server.requests[1].json)
            assert "rejected" in retry
            if warnings[0]["details"].get("failed_generation"):
                assert json.dumps(failed)[1:-1] in retry

    async def test_contract_agent_abort_closes_stalled_stream(self, tmp_path: Path) -> None:
        stalled = self.sse(upto(self.text_stream(["partial"]), "partial"), then="stall")
        async with FakeProviderServer([stalled]) as server:
            provider = self.make_provider(server.url, "sk-test")
            agent = self._agent(tmp_path, provider)
            got_text = asyncio.Event()
            agent.on("text.delta", lambda e: got_text.set())
            try:
                runner = asyncio.ensure_future(agent.run("go"))
                await asyncio.wait_for(got_text.wait(), 10)
                agent.abort()
                # far below the 60 s idle timeout: abort itself closed the stream
                result = await asyncio.wait_for(runner, 5)
                assert result.status == "interrupted"
                assert result.error is None
                assert await server.wait(server.disconnected, 10), "the server never saw the connection close"
            finally:
                await provider.aclose()
                await agent.aclose()


def iter_sse_data(body: bytes) -> Iterator[tuple[str | None, str]]:
    """``(event, data)`` pairs of an SSE body (for asserting on recorded streams)."""
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        event = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            yield event, "\n".join(data)

