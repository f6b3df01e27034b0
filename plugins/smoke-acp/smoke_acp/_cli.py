"""``smoke acp``: the agent on stdin/stdout.

stdout carries the protocol and nothing else: the process's file descriptor
1 is pointed at stderr once the protocol has its own copy, so a stray
``print`` (a plugin's, a library's) or an inheriting child cannot corrupt
the stream. Logs go to stderr, or to ``--log-file``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click


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
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # not a pipe: feed the reader from a thread
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


@click.command("acp")
@click.option("--provider", default=None, help="Provider name (openai, anthropic, nvidia, ...).")
@click.option("--model", "-m", default=None, help="Model name, or provider:model.")
@click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write logs to this file instead of stderr.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              show_default=True, help="How much to log.")
def acp_command(provider: str | None, model: str | None, base_url: str | None, log_file: Path | None,
                log_level: str) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed,
    JetBrains, Neovim). Each editor session works in the folder the editor
    names; see docs/editors.md for the editor settings."""
    try:
        import acp  # noqa: F401
    except ImportError:
        raise click.ClickException("smoke acp needs the ACP SDK: pip install agent-client-protocol") from None
    from ._agent import ServeOptions

    handler: logging.Handler
    if log_file is not None:
        try:
            handler = logging.FileHandler(log_file)
        except OSError as exc:
            raise click.BadParameter(f"cannot write {log_file}: {exc.strerror or exc}", param_hint="--log-file") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, log_level.upper()))

    sys.stdout.flush()
    out_fd = os.dup(1)  # the protocol's own copy of stdout
    os.dup2(2, 1)  # everything else that writes to fd 1 lands on stderr
    sys.stdout = sys.stderr
    asyncio.run(serve(ServeOptions(provider=provider, model=model, base_url=base_url), out_fd))
