"""The agent's stdin/stdout streams and the serving loop of ``smoke acp``
(imported when the command runs, so ``smoke --help`` never loads asyncio).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
from typing import Any


class _WriteProtocol(asyncio.Protocol):
    """Flow control for the protocol's writer (what ``StreamWriter.drain`` waits on)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._lost = True
        self.resume_writing()

    async def _drain_helper(self) -> None:
        if self._lost:
            raise ConnectionResetError("the client closed the connection")
        if self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


async def open_stdio(out_fd: int) -> tuple[asyncio.StreamReader, Any]:
    """A reader of stdin and an ``async write(bytes)`` to ``out_fd``. Pipes
    (what editors give) are asynchronous; a regular file or a terminal on
    either side also works, through a thread / blocking writes."""
    import threading

    from ._transport import MAX_MESSAGE_BYTES

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    mode = os.fstat(sys.stdin.fileno()).st_mode
    # a pipe, a socket or a terminal is watched by the event loop; anything else (a
    # regular file, /dev/null, which epoll refuses) is read by a thread
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or sys.stdin.isatty():
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        def feed() -> None:
            try:
                while data := sys.stdin.buffer.read1(65536):  # type: ignore[union-attr]
                    loop.call_soon_threadsafe(reader.feed_data, data)
            finally:
                loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=feed, daemon=True, name="smoke-acp-stdin").start()
    pipe = os.fdopen(out_fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(_WriteProtocol, pipe)
    except ValueError:  # a regular file: plain writes
        async def write_blocking(data: bytes) -> None:
            pipe.write(data)  # the file object keeps the descriptor open

        return reader, write_blocking
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(data: bytes) -> None:
        if writer.is_closing():
            raise ConnectionError("the client closed the connection")
        writer.write(data)
        await writer.drain()

    return reader, write


async def serve(options: Any, out_fd: int) -> None:
    from acp.agent.connection import AgentSideConnection

    from ._agent import SmokeACPAgent
    from ._transport import StdioTransport

    reader, write = await open_stdio(out_fd)
    agent = SmokeACPAgent(options)
    conn = AgentSideConnection(agent, StdioTransport(reader, write), listening=False)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    listening = asyncio.ensure_future(conn.listen())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, listening.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        await listening  # until the client closes stdin (or a signal)
    except asyncio.CancelledError:
        logging.getLogger("smoke.acp").info("smoke acp: stopping on a signal")
    finally:
        await agent.shutdown()  # runs aborted (commands' process groups killed), MCP servers stopped
        await conn.close()
