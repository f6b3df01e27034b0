"""Stopping everything a command started, and saying exactly what was stopped.

A process group is not enough: ``setsid`` children, double forks and
``disown``-ed jobs leave the group (and, once their parent exits, the tree).
So a command's processes are found at kill time by three marks, read from
``/proc``:

- the tree below the command's first process (parent links);
- its process group;
- a cookie: every command gets ``SMOKE_COMMAND_ID=<random>`` in its
  environment, which children inherit through ``setsid`` and double forks
  (Jenkins' ProcessTreeKiller uses the same trick).

Only processes started after the command are considered, and each is
signalled through a pidfd after checking its start time, so a reused pid is
never hit. Found processes are stopped (SIGSTOP) before being killed, and the
search repeats until nothing new appears, so a process cannot fork its way
out while the kill is under way.

Under the bwrap sandbox the command runs in its own PID namespace: every
process it starts stays in the tree below bwrap, and all of them die when
the namespace's first process does. Unsandboxed, a process that clears its
environment *and* leaves the session *and* is orphaned escapes the three
marks; docs/sandbox.md says so.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
from collections import defaultdict
from dataclasses import dataclass, field

COOKIE_VAR = "SMOKE_COMMAND_ID"
#: Seconds to wait for SIGKILLed processes to disappear.
KILL_WAIT_S = 2.0
#: Rounds of "find, stop" before the kill (a fork bomb adds processes while we look).
MAX_ROUNDS = 50
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: Without /proc (macOS, BSD) only the process group can be found and stopped.
HAVE_PROC = os.path.isdir("/proc/self")


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    ppid: int
    pgrp: int
    start: int  # clock ticks after boot
    name: str
    state: str


def read_proc(pid: int) -> Proc | None:
    """``/proc/<pid>/stat`` parsed, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    close = raw.rfind(b")")
    name = raw[raw.find(b"(") + 1 : close].decode("utf-8", "replace")
    fields = raw[close + 2 :].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[19]), name, fields[0].decode())
    except (IndexError, ValueError):
        return None


def scan() -> dict[int, Proc]:
    """Every process this user can see, by pid."""
    out: dict[int, Proc] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            proc = read_proc(int(entry))
            if proc is not None:
                out[proc.pid] = proc
    return out


def now_ticks() -> int:
    """Clock ticks since boot now, minus a tick (the unit of ``Proc.start``)."""
    try:
        with open("/proc/uptime") as fh:
            return int(float(fh.read().split()[0]) * _CLK_TCK) - 1
    except (OSError, ValueError, IndexError):
        return 0


def new_cookie() -> str:
    return secrets.token_hex(12)


@dataclass
class Tracked:
    """What identifies one command's processes: its first pid, the time it
    started (``since``, clock ticks) and its cookie."""

    leader: int
    since: int
    cookie: str

    def members(self, procs: dict[int, Proc] | None = None) -> dict[int, Proc]:
        """The live processes of this command right now."""
        procs = scan() if procs is None else procs
        mine = _ancestors(procs)
        found: dict[int, Proc] = {}
        needle = f"{COOKIE_VAR}={self.cookie}\0".encode()
        for proc in procs.values():
            if proc.start < self.since or proc.pid in mine or proc.state in ("Z", "X"):
                continue
            if proc.pid == self.leader or proc.pgrp == self.leader or _has_cookie(proc.pid, needle):
                found[proc.pid] = proc
        # and everything below them (a child that cleared its environment)
        children: dict[int, list[int]] = defaultdict(list)
        for proc in procs.values():
            children[proc.ppid].append(proc.pid)
        stack = list(found)
        while stack:
            for child in children.get(stack.pop(), ()):
                proc = procs[child]
                if child not in found and child not in mine and proc.state not in ("Z", "X"):
                    found[child] = proc
                    stack.append(child)
        return found


def _ancestors(procs: dict[int, Proc]) -> set[int]:
    """This process and its parents: never ours to kill."""
    out = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in out:
        out.add(pid)
        proc = procs.get(pid)
        if proc is None:
            break
        pid = proc.ppid
    return out


def _has_cookie(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    return data.startswith(needle) or b"\0" + needle in data


def send(proc: Proc, sig: int) -> bool:
    """Signal ``proc`` if it is still the same process (pidfd + start time)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        current = read_proc(proc.pid)
        if current is None or current.start != proc.start:
            return False
        try:
            os.kill(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    try:
        fd = pidfd_open(proc.pid)
    except OSError:
        return False
    try:
        current = read_proc(proc.pid)
        if current is None or current.start != proc.start:
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@dataclass
class StopReport:
    """What a stop found and did. ``stopped``: ``[(pid, name)]`` of every
    process that was signalled, in the order found; ``survivors``: those
    still alive afterwards (should be empty)."""

    stopped: list[tuple[int, str]] = field(default_factory=list)
    survivors: list[tuple[int, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.stopped)

    def describe(self, limit: int = 8) -> str:
        """``3 processes (1201 bash, 1203 sleep, 1207 sleep)``."""
        n = len(self.stopped)
        names = ", ".join(f"{pid} {name}" for pid, name in self.stopped[:limit])
        more = f", and {n - limit} more" if n > limit else ""
        text = f"{n} process{'es' if n != 1 else ''} ({names}{more})"
        if self.survivors:
            text += (
                f"; {len(self.survivors)} could not be stopped: "
                + ", ".join(f"{pid} {name}" for pid, name in self.survivors[:limit])
            )
        return text

    def to_list(self) -> list[dict[str, object]]:
        return [{"pid": pid, "name": name} for pid, name in self.stopped]


async def stop(tracked: Tracked, *, grace: float, spare_on_term: tuple[str, ...] = ()) -> StopReport:
    """Stop every process of ``tracked``: SIGTERM and up to ``grace`` seconds
    to exit (skipped when ``grace`` is 0), then SIGSTOP everything left (again
    until nothing new appears) and SIGKILL it. Processes named in
    ``spare_on_term`` get no SIGTERM (bwrap: terminating it would kill the
    sandbox at once, without the grace period for the command)."""
    if not HAVE_PROC:
        return await _stop_group(tracked.leader, grace)
    report = StopReport()
    seen: dict[int, Proc] = {}
    found = tracked.members()
    if not found:
        return report
    seen.update(found)
    if grace > 0:
        termed = [p for p in found.values() if p.name not in spare_on_term and send(p, signal.SIGTERM)]
        if termed:  # (a sandbox whose command has not started yet has nobody to wait for)
            await _wait_gone(found, grace)
    frozen: dict[int, Proc] = {}
    for _ in range(MAX_ROUNDS):
        current = {pid: p for pid, p in tracked.members().items() if pid not in frozen}
        if not current:
            break
        for proc in current.values():
            if send(proc, signal.SIGSTOP):
                frozen[proc.pid] = proc
        seen.update(current)
    for proc in frozen.values():
        send(proc, signal.SIGKILL)
    await _wait_gone(frozen, KILL_WAIT_S)
    left = tracked.members()
    for proc in left.values():  # appeared after the last round: one more kill
        send(proc, signal.SIGKILL)
        seen.setdefault(proc.pid, proc)
    if left:
        await _wait_gone(left, KILL_WAIT_S)
        left = tracked.members()
    report.stopped = [(p.pid, p.name) for p in seen.values()]
    report.survivors = [(p.pid, p.name) for p in left.values()]
    return report


async def _stop_group(pgid: int, grace: float) -> StopReport:
    """Where /proc is missing: SIGTERM the process group, wait, SIGKILL it."""
    loop = asyncio.get_running_loop()
    try:
        os.killpg(pgid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return StopReport()
    deadline = loop.time() + grace
    while loop.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            break
        await asyncio.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return StopReport(stopped=[(pgid, "process group")])


async def _wait_gone(procs: dict[int, Proc], timeout: float) -> None:
    """Wait (event-driven, through pidfds) until every process in ``procs``
    has exited, or ``timeout`` seconds."""
    pidfd_open = getattr(os, "pidfd_open", None)
    loop = asyncio.get_running_loop()
    fds: list[int] = []
    waits: list[asyncio.Future[None]] = []
    try:
        for proc in procs.values():
            if pidfd_open is None:
                break
            try:
                fd = pidfd_open(proc.pid)
            except OSError:
                continue  # already gone
            current = read_proc(proc.pid)
            if current is None or current.start != proc.start or current.state in ("Z", "X"):
                os.close(fd)
                continue
            fds.append(fd)
            fut: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _done, fut)
            waits.append(fut)
        if waits:
            await asyncio.wait(waits, timeout=timeout)
        elif pidfd_open is None:
            deadline = loop.time() + timeout
            while any(_alive(p) for p in procs.values()) and loop.time() < deadline:
                await asyncio.sleep(0.02)
    finally:
        for fd in fds:
            loop.remove_reader(fd)
            os.close(fd)


def _done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _alive(proc: Proc) -> bool:
    current = read_proc(proc.pid)
    return current is not None and current.start == proc.start and current.state not in ("Z", "X")
