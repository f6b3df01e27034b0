"""Running a shell command: streamed output, bounded memory and disk for
that output, a timeout, and a stop that reaches every process it started
(see ``_kill``)."""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import _kill
from ._kill import StopReport, Tracked

#: Seconds between SIGTERM and SIGKILL when a command is stopped.
KILL_GRACE_S = 2.0
#: Seconds the pipes may stay open after the command itself exited (a process
#: it left behind still holds them) before those leftovers are stopped.
PIPE_DRAIN_S = 1.0
READ_CHUNK = 65536
#: A partial line longer than this is emitted without waiting for its newline.
PARTIAL_LINE_FLUSH = 4096
#: bwrap processes get no SIGTERM: it would end the sandbox at once (the
#: command gets the SIGTERM and the grace period instead).
SANDBOX_HELPERS = ("bwrap",)

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


def extra_env(model_env: dict[str, Any] | None, cookie: str) -> dict[str, str]:
    """What every command gets on top of its base environment:
    :data:`BASE_ENV`, its cookie, then the model's ``env`` (checked).

    Raises ValueError naming a bad variable name or value.
    """
    env = dict(BASE_ENV)
    env[_kill.COOKIE_VAR] = cookie
    for name, value in (model_env or {}).items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(
                f"env: {name!r} is not a valid variable name (letters, digits and _, not starting with a digit)"
            )
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError(f"env: the value of {name} must be a string without NUL bytes")
        if name == _kill.COOKIE_VAR:
            raise ValueError(f"env: {name} is set by Smoke to track the command's processes; use another name")
        env[name] = value
    return env


def safe_file_stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80] or "output"


# ---------------------------------------------------------------- output


class CappedLog:
    """A log file that never holds more than about ``cap`` bytes: the first
    quarter of the cap is written as it comes, the rest of the output goes
    to two rotating tail segments (the older one is dropped when a third
    starts), and :meth:`close` appends a line saying how much was cut, then
    the kept tail. Memory use is one read chunk.

    With ``live`` (background processes, whose log is read while they run)
    the file is unbuffered and a line is written where the head ends, saying
    the rest is appended when the process ends.
    """

    def __init__(self, path: Path, cap: int, *, live: bool = False, head_share: float = 0.25) -> None:
        self.path = path
        self.cap = max(4096, int(cap))
        self.head_cap = int(self.cap * head_share)
        self.seg_cap = max(1, (self.cap - self.head_cap) // 2)
        self.live = live
        self._file: IO[bytes] = open(path, "wb", buffering=0 if live else -1)  # noqa: SIM115 - closed in close()
        self.head_written = 0
        self.total = 0
        self.cut = 0
        self._segs: list[Path] = []
        self._seg_file: IO[bytes] | None = None
        self._seg_size = 0
        self._seg_no = 0
        self._closed = False
        #: why the log stopped being written (disk full...), else None
        self.error: str | None = None

    def write(self, data: bytes) -> None:
        """Add ``data``; a failing disk (full, gone) is recorded in ``error``
        and the rest is dropped, so the command's pipe keeps draining."""
        if not data or self._closed:
            return
        self.total += len(data)
        if self.error is not None:
            return
        try:
            self._write(data)
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _write(self, data: bytes) -> None:
        if self.head_written < self.head_cap:
            part = data[: self.head_cap - self.head_written]
            self._file.write(part)
            self.head_written += len(part)
            data = data[len(part) :]
            if not data:
                return
            if self.live:
                self._file.write(
                    f"\n[smoke: this log keeps the first {self.head_cap} bytes and the last "
                    f"{2 * self.seg_cap} bytes of the output; the rest of it is added here when the "
                    "command ends]\n".encode()
                )
        while data:
            if self._seg_file is None or self._seg_size >= self.seg_cap:
                self._rotate()
            assert self._seg_file is not None
            part = data[: self.seg_cap - self._seg_size]
            self._seg_file.write(part)
            self._seg_size += len(part)
            data = data[len(part) :]

    def _rotate(self) -> None:
        if self._seg_file is not None:
            self._seg_file.close()
        if len(self._segs) == 2:
            self._segs.pop(0).unlink(missing_ok=True)
        seg = self.path.with_name(f"{self.path.name}.tail{self._seg_no}")
        self._seg_no += 1
        self._segs.append(seg)
        self._seg_file = open(seg, "wb")  # noqa: SIM115 - closed in _rotate()/close()
        self._seg_size = 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._seg_file is not None:
            self._seg_file.close()
        kept = sum(p.stat().st_size for p in self._segs if p.exists())
        self.cut = self.total - self.head_written - kept
        try:
            if self.error is not None:
                self._file.write(f"\n[... the log stopped here: {self.error} ...]\n".encode())
            elif self.cut > 0:
                self._file.write(
                    f"\n[... {self.cut} bytes of output cut here: the log keeps the first {self.head_written} "
                    f"and the last {kept} bytes (terminal_log_limit = {self.cap} bytes) ...]\n".encode()
                )
            for seg in self._segs if self.error is None else ():
                with open(seg, "rb") as fh:
                    shutil.copyfileobj(fh, self._file)
        except OSError as exc:
            self.error = self.error or f"{type(exc).__name__}: {exc}"
        finally:
            for seg in self._segs:
                seg.unlink(missing_ok=True)
            try:
                self._file.close()
            except OSError as exc:
                self.error = self.error or f"{type(exc).__name__}: {exc}"


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


class CommandOutput:
    """Where a foreground command's output goes, each part bounded:

    - the model's view: all of it while it is under ``limit`` characters,
      else the head (``head_share``) and a rolling tail, in memory;
    - the log file (``log_path()``, created once the output passes
      ``limit``): at most ``log_limit`` bytes, head and tail (:class:`CappedLog`);
    - live ``tool.output`` events through ``emit(text, stream)``: whole
      lines, until ``live_limit`` characters, then one line saying the rest
      is in the result and the log.
    """

    def __init__(
        self,
        *,
        limit: int,
        head_share: float,
        log_path: Callable[[], Path],
        log_limit: int,
        live_limit: int,
        emit: Callable[[str, str], None],
    ) -> None:
        self.limit = max(200, limit)
        self.head_limit = int(self.limit * head_share)
        self.tail_limit = self.limit - self.head_limit
        self._log_path = log_path
        self._log_limit = log_limit
        self._live_left = max(0, live_limit)
        self._emit = emit
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.log: CappedLog | None = None
        self.log_error: str | None = None
        self.total_bytes = 0
        self.total_chars = 0
        self.live_stopped = False
        self._parts: list[str] = []
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._buffers = {
            "stdout": LineBuffer(lambda text: self._text(text, "stdout")),
            "stderr": LineBuffer(lambda text: self._text(text, "stderr")),
        }

    # raw bytes: the log
    def feed(self, data: bytes, stream: str) -> None:
        self.total_bytes += len(data)
        if self.log is not None:
            self.log.write(data)
        elif self.log_error is None:
            self._pending.append(data)
            self._pending_size += len(data)
            if self._pending_size > self.limit:
                try:
                    self.log = CappedLog(self._log_path(), self._log_limit)
                except OSError as exc:  # keep draining the pipe all the same
                    self.log_error = f"{type(exc).__name__}: {exc}"
                else:
                    for chunk in self._pending:
                        self.log.write(chunk)
                self._pending = []
        self._buffers[stream].feed(data)

    # decoded text: the model's view and live events
    def _text(self, text: str, stream: str) -> None:
        before = self.total_chars
        self.total_chars += len(text)
        if before <= self.limit and not self._tail:  # still whole
            self._parts.append(text)
            if self.total_chars > self.limit:
                full = "".join(self._parts)
                self._parts = []
                self._head = full[: self.head_limit]
                self._push_tail(full[-self.tail_limit :])
        else:
            self._push_tail(text)
        if self._live_left > 0:
            piece = text[: self._live_left]
            self._live_left -= len(piece)
            self._emit(piece, stream)
            if self._live_left <= 0:
                self.live_stopped = True
                self._emit(
                    "\n[smoke: live output stopped here to keep the stream small; the command goes on, "
                    "its result shows the end of the output and the log keeps the rest]\n",
                    stream,
                )

    def _push_tail(self, text: str) -> None:
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail and self._tail_size - len(self._tail[0]) >= self.tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total_chars > self.limit

    def finish(self) -> None:
        """Flush partial lines and close the log (call once the pipes are done)."""
        for buf in self._buffers.values():
            buf.flush()
        if self.log is not None:
            self.log.close()

    def render(self, relative: Callable[[Path], str]) -> str:
        """The output as the model sees it: whole, or head + note + tail."""
        if not self.truncated:
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
        if self.log is None:
            where = f"the output could not be saved ({self.log_error})"
        elif self.log.error is not None:
            where = f"{relative(self.log.path)} holds only part of it (the log could not be written: {self.log.error})"
        elif self.log.cut > 0:
            where = (
                f"{relative(self.log.path)} keeps the first {self.log.head_written} and the last "
                f"{self.log.total - self.log.head_written - self.log.cut} bytes of the {self.log.total}-byte output "
                f"({self.log.cut} bytes in the middle were cut: the log is capped at {self.log.cap} bytes)"
            )
        else:
            where = f"the full output ({self.total_chars} characters) is in {relative(self.log.path)}"
        note = (
            f"[... {omitted} characters omitted; {where}; read it with read_file and start_line/end_line, "
            "or search it with grep ...]"
        )
        return f"{head}{'' if head.endswith(chr(10)) else chr(10)}{note}\n{tail}"


# ---------------------------------------------------------------- foreground


@dataclass
class CommandOutcome:
    exit_code: int | None
    timed_out: bool
    aborted: bool
    pid: int
    duration_ms: float
    #: what was stopped: on timeout/abort, or leftovers after the command exited
    stopped: StopReport = field(default_factory=StopReport)
    leftovers_stopped: bool = False


async def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    cookie: str,
    timeout_s: float,
    cancelled: asyncio.Event,
    output: CommandOutput,
    sandboxed: bool,
) -> CommandOutcome:
    """Run ``argv`` in a new session, stdin closed, feeding ``output``.

    On timeout, on ``cancelled`` being set and on task cancellation, every
    process of the command is stopped (SIGTERM, grace, SIGKILL: see
    ``_kill``). Processes it leaves behind when it exits are stopped too.
    Cancellation is re-raised after the kill.
    """
    t0 = time.monotonic()
    since = _kill.now_ticks()
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
    tracked = Tracked(leader=proc.pid, since=since, cookie=cookie)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        asyncio.ensure_future(_pump(proc.stdout, output, "stdout")),
        asyncio.ensure_future(_pump(proc.stderr, output, "stderr")),
    ]
    # Not proc.wait(): on Python 3.11 it only returns once every pipe is closed,
    # which a grandchild holding stdout can delay forever.
    waiter: asyncio.Future[Any] = protocol.exited
    stopper: asyncio.Future[Any] = asyncio.ensure_future(cancelled.wait())
    timed_out = aborted = leftovers = False
    report = StopReport()
    spare = SANDBOX_HELPERS if sandboxed else ()
    try:
        done, _ = await asyncio.wait({waiter, stopper}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            aborted = stopper in done
            timed_out = not aborted
            report = await _kill.stop(tracked, grace=KILL_GRACE_S, spare_on_term=spare)
            await asyncio.wait([waiter], timeout=KILL_GRACE_S)
        _, pending = await asyncio.wait(readers, timeout=PIPE_DRAIN_S)
        if pending or not (timed_out or aborted or sandboxed):
            # Something the command started still holds its output open, or
            # (unsandboxed) may have detached: stop whatever is left of it.
            # Sandboxed, the PID namespace died with the command.
            more = await _kill.stop(tracked, grace=KILL_GRACE_S if pending else 0, spare_on_term=spare)
            if more:
                leftovers = not (timed_out or aborted)
                report = _merge(report, more)
            if pending:
                await asyncio.wait(readers, timeout=KILL_GRACE_S)
    except asyncio.CancelledError:
        aborted = True
        try:
            await _kill.stop(tracked, grace=KILL_GRACE_S, spare_on_term=spare)
            await asyncio.wait([waiter, *readers], timeout=KILL_GRACE_S)
        finally:
            await _cancel_all([*readers, waiter, stopper])
            transport.close()
        raise
    await _cancel_all([*readers, waiter, stopper])
    transport.close()  # pipes a reader gave up on would otherwise stay open
    return CommandOutcome(
        exit_code=proc.returncode,
        timed_out=timed_out,
        aborted=aborted,
        pid=proc.pid,
        duration_ms=(time.monotonic() - t0) * 1000,
        stopped=report,
        leftovers_stopped=leftovers,
    )


def _merge(a: StopReport, b: StopReport) -> StopReport:
    seen = dict(a.stopped)
    for pid, name in b.stopped:
        seen.setdefault(pid, name)
    return StopReport(stopped=list(seen.items()), survivors=b.survivors)


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


async def _pump(stream: asyncio.StreamReader, output: CommandOutput, name: str) -> None:
    # StreamReader pauses the pipe above 2 * READ_CHUNK, so a flood waits for us
    # instead of piling up in memory.
    while True:
        data = await stream.read(READ_CHUNK)
        if not data:
            return
        output.feed(data, name)


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
    tracked: Tracked
    log: CappedLog
    drain: threading.Thread
    sandboxed: bool = False

    @property
    def running(self) -> bool:
        return self.popen.poll() is None


def start_background(
    argv: list[str], *, cwd: Path, env: dict[str, str], cookie: str, log_path: Path, log_limit: int
) -> tuple[subprocess.Popen[bytes], Tracked, CappedLog, threading.Thread]:
    """Start ``argv`` detached in a new session; its output (stdout and
    stderr together) is copied to a :class:`CappedLog` by a thread."""
    since = _kill.now_ticks()
    log = CappedLog(log_path, log_limit, live=True)
    try:
        popen = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        log.close()
        raise
    assert popen.stdout is not None
    drain = threading.Thread(
        target=_drain, args=(popen.stdout, log), name=f"smoke-terminal-log-{popen.pid}", daemon=True
    )
    drain.start()
    return popen, Tracked(leader=popen.pid, since=since, cookie=cookie), log, drain


def _drain(pipe: IO[bytes], log: CappedLog) -> None:
    fd = pipe.fileno()
    try:
        while True:
            data = os.read(fd, READ_CHUNK)
            if not data:
                return
            log.write(data)
    except OSError:
        return
    finally:
        log.close()
        pipe.close()


async def stop_background(bg: BackgroundProcess, grace: float = KILL_GRACE_S) -> StopReport:
    """Stop a background process and everything it started, reap it, and
    finish its log."""
    report = await _kill.stop(bg.tracked, grace=grace, spare_on_term=SANDBOX_HELPERS if bg.sandboxed else ())
    await asyncio.to_thread(bg.popen.wait)
    await asyncio.to_thread(bg.drain.join, KILL_GRACE_S)
    return report
