"""A fake provider on 127.0.0.1 for provider contract tests: scripted
replies (:class:`Reply`), the requests it saw (:class:`RecordedRequest`)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import select
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
