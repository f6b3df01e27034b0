"""Running a shell command in its own process group: streamed output, a cap
on what is kept in memory, a timeout, and a kill that reaches grandchildren."""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: Seconds between SIGTERM and SIGKILL when a process group is stopped.
KILL_GRACE_S = 2.0
#: Seconds the pipes may stay open after the command itself exited (a process
#: it left behind still holds them) before those leftovers are stopped.
PIPE_DRAIN_S = 1.0
READ_CHUNK = 65536
#: A partial line longer than this is emitted without waiting for its newline.
PARTIAL_LINE_FLUSH = 4096

#: Set for every command so tools behave non-interactively and without colour.
BASE_ENV = {
    "CI": "true",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def shell_argv(command: str) -> list[str]:
    """``bash -c command`` (``/bin/sh -c`` where bash is missing)."""
    bash = shutil.which("bash")
    return [bash, "-c", command] if bash else ["/bin/sh", "-c", command]


def command_env(extra: dict[str, Any] | None) -> dict[str, str]:
    """The environment of a command: ours, plus :data:`BASE_ENV`, plus ``extra``.

    Raises ValueError naming a bad variable name or value.
    """
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    env.update(BASE_ENV)
    for name, value in (extra or {}).items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(
                f"env: {name!r} is not a valid variable name (letters, digits and _, not starting with a digit)"
            )
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError(f"env: the value of {name} must be a string without NUL bytes")
        env[name] = value
    return env


def safe_file_stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80] or "output"


# ---------------------------------------------------------------- output


class OutputCapture:
    """Keeps a command's output: all of it while it is small; once it passes
    ``limit`` characters, the head and a rolling tail in memory and the whole
    of it in ``spill_path`` (opened on demand)."""

    def __init__(
        self, limit: int, spill_path: Callable[[], Path], *, head_share: float = 0.3
    ) -> None:
        self.limit = max(200, limit)
        self.head_limit = int(self.limit * head_share)
        self.tail_limit = self.limit - self.head_limit
        self._spill_path = spill_path
        self._parts: list[str] = []
        self._size = 0
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._file: IO[str] | None = None
        self.total_chars = 0
        self.path: Path | None = None

    def write(self, text: str) -> None:
        if not text:
            return
        self.total_chars += len(text)
        if self._file is None:
            self._parts.append(text)
            self._size += len(text)
            if self._size > self.limit:
                self._spill()
            return
        self._file.write(text)
        self._push_tail(text)

    def _spill(self) -> None:
        full = "".join(self._parts)
        self._parts = []
        self.path = self._spill_path()
        self._file = open(self.path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in close()
        self._file.write(full)
        self._head = full[: self.head_limit]
        self._push_tail(full[-self.tail_limit :])

    def _push_tail(self, text: str) -> None:
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail and self._tail_size - len(self._tail[0]) >= self.tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.path is not None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def render(self, relative: Callable[[Path], str]) -> str:
        """The output as the model sees it: whole, or head + note + tail."""
        if self.path is None:
            return "".join(self._parts)
        head = self._head
        cut = head.rfind("\n")
        if cut > len(head) // 2:
            head = head[: cut + 1]
        tail = "".join(self._tail)[-self.tail_limit :]
        cut = tail.find("\n")
        if 0 <= cut < len(tail) // 2:
            tail = tail[cut + 1 :]
        omitted = self.total_chars - len(head) - len(tail)
        note = (
            f"[... {omitted} characters omitted. The full output ({self.total_chars} characters) is in "
            f"{relative(self.path)}; read it with read_file and start_line/end_line, or search it with grep ...]"
        )
        return f"{head}{'' if head.endswith(chr(10)) else chr(10)}{note}\n{tail}"


class LineBuffer:
    """Turns raw chunks into whole lines for ``sink`` (a long partial line is
    passed on without waiting for its newline)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self._sink = sink
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decoder.decode(data)
        cut = text.rfind("\n")
        if cut >= 0:
            self._sink(text[: cut + 1])
            text = text[cut + 1 :]
        if len(text) >= PARTIAL_LINE_FLUSH:
            self._sink(text)
            text = ""
        self._pending = text

    def flush(self) -> None:
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        if text:
            self._sink(text)


# ---------------------------------------------------------------- process groups


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to every process of group ``pgid``; False when none is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def terminate_group(
    pgid: int, waits: Iterable[asyncio.Future[Any]], grace: float = KILL_GRACE_S
) -> bool:
    """SIGTERM the group, wait up to ``grace`` for ``waits``, then SIGKILL
    whatever is left (grandchildren included). Returns True if the group had
    any process when it was signalled."""
    had_members = False
    try:
        had_members = signal_group(pgid, signal.SIGTERM)
        pending = [w for w in waits if not w.done()]
        if had_members and pending:
            await asyncio.wait(pending, timeout=grace)
    finally:
        # Also reached when the wait above is cancelled: never leave the group running.
        signal_group(pgid, signal.SIGKILL)
    return had_members


@dataclass
class CommandOutcome:
    exit_code: int | None
    timed_out: bool
    aborted: bool
    leftovers_stopped: bool
    pid: int
    duration_ms: float


async def run_in_group(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    cancelled: asyncio.Event,
    on_output: Callable[[str, str], None],
) -> CommandOutcome:
    """Run ``argv`` in a new session (its own process group), stdin closed,
    passing whole lines of output to ``on_output(text, stream)``.

    On timeout, on ``cancelled`` being set and on task cancellation the whole
    group is stopped (TERM, then KILL). Processes the command leaves behind
    are stopped when it exits. Cancellation is re-raised after the kill.
    """
    t0 = time.monotonic()
    loop = asyncio.get_running_loop()
    protocol_box: list[_ExitAwareProtocol] = []

    def make_protocol() -> _ExitAwareProtocol:
        protocol = _ExitAwareProtocol(limit=READ_CHUNK, loop=loop)
        protocol_box.append(protocol)
        return protocol

    try:
        transport, _ = await loop.subprocess_exec(
            make_protocol,
            *argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"could not start the command: {exc}") from exc
    protocol = protocol_box[0]
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    pgid = proc.pid
    assert proc.stdout is not None and proc.stderr is not None
    out_buf = LineBuffer(lambda text: on_output(text, "stdout"))
    err_buf = LineBuffer(lambda text: on_output(text, "stderr"))
    readers = [
        asyncio.ensure_future(_pump(proc.stdout, out_buf)),
        asyncio.ensure_future(_pump(proc.stderr, err_buf)),
    ]
    # Not proc.wait(): on Python 3.11 it only returns once every pipe is closed,
    # which a grandchild holding stdout can delay forever.
    waiter: asyncio.Future[Any] = protocol.exited
    stopper: asyncio.Future[Any] = asyncio.ensure_future(cancelled.wait())
    timed_out = aborted = leftovers = False
    try:
        done, _ = await asyncio.wait(
            {waiter, stopper}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            aborted = stopper in done
            timed_out = not aborted
            await terminate_group(pgid, [waiter])
            await asyncio.wait([waiter], timeout=KILL_GRACE_S)
        _, pending = await asyncio.wait(readers, timeout=PIPE_DRAIN_S)
        if pending:
            # Something the command started still holds its output open.
            leftovers = await terminate_group(pgid, readers)
            await asyncio.wait(readers, timeout=KILL_GRACE_S)
        elif not (timed_out or aborted):
            # Detached leftovers (output redirected) would outlive the call otherwise.
            leftovers = await terminate_group(pgid, [], grace=0)
    except asyncio.CancelledError:
        aborted = True
        try:
            await terminate_group(pgid, [waiter])
            await asyncio.wait([waiter, *readers], timeout=KILL_GRACE_S)
        finally:
            await _cancel_all([*readers, waiter, stopper])
        raise
    await _cancel_all([*readers, waiter, stopper])
    out_buf.flush()
    err_buf.flush()
    return CommandOutcome(
        exit_code=proc.returncode,
        timed_out=timed_out,
        aborted=aborted,
        leftovers_stopped=leftovers,
        pid=proc.pid,
        duration_ms=(time.monotonic() - t0) * 1000,
    )


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol of ``create_subprocess_exec`` plus a future that is
    done as soon as the process itself exits (pipes may still be open)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _pump(stream: asyncio.StreamReader, buf: LineBuffer) -> None:
    while True:
        data = await stream.read(READ_CHUNK)
        if not data:
            return
        buf.feed(data)


async def _cancel_all(tasks: list[asyncio.Future[Any]]) -> None:
    for t in tasks:
        if not t.done():
            t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------- background


@dataclass
class BackgroundProcess:
    pid: int
    command: str
    log_path: Path
    popen: subprocess.Popen[bytes]
    owner: int  # id() of the agent options it belongs to

    @property
    def running(self) -> bool:
        return self.popen.poll() is None


def start_background(
    argv: list[str], *, cwd: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` detached in its own process group, output to ``log_path``."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


async def stop_background(bg: BackgroundProcess, grace: float = KILL_GRACE_S) -> None:
    """Stop a background process and its whole group, and reap it."""
    pgid = bg.pid
    try:
        if signal_group(pgid, signal.SIGTERM):
            try:
                await asyncio.to_thread(bg.popen.wait, grace)
            except subprocess.TimeoutExpired:
                pass
    finally:
        signal_group(pgid, signal.SIGKILL)
    await asyncio.to_thread(bg.popen.wait)
