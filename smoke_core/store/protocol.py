"""Session stores: keep a session's messages across runs.

Besides the message log (:class:`Store`), a store may offer two more
capabilities, each its own protocol so that a third-party store without them
keeps working:

- :class:`LeasingStore` — a *session lease*: one run per session at a time,
  across processes and machines, with an expiry so that a dead holder does
  not lock the session forever (:mod:`smoke_core.store.lease` takes and renews it);
- :class:`JournalingStore` — a *call journal*: the start of a mutating tool
  call is committed before it executes and its end after, so a run resumed
  after a crash knows which calls may have taken effect (:mod:`smoke_core.run.call_journal`).

:class:`MemoryStore` and :class:`~smoke_core.store.sqlite.SQLiteStore` offer both.
"""

from __future__ import annotations

import copy
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..base.messages import Message


class StoreError(Exception):
    """A session store cannot do its job; the message says what to do."""


class StoreCorruptError(StoreError):
    """The session database is damaged (not a database, truncated, malformed).

    ``path`` is the file, ``detail`` what the database engine said. The
    message names the file and the two ways out: move it aside, or salvage
    what can still be read with ``smoke sessions doctor``."""

    def __init__(self, path: str | os.PathLike[str], detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(
            f"the session database {self.path} cannot be read ({detail}). Move it aside "
            f"(for example `mv {self.path} {self.path}.broken`) and Smoke starts a fresh one, or "
            f"{salvage_hint(self.path)} to copy the sessions that can still be read into a fresh file "
            f"(the damaged file is kept)."
        )


def salvage_hint(db: Path, source: Path | None = None) -> str:
    """How to copy the readable sessions of a damaged ``db`` (or of the
    damaged copy ``source``) into a healthy file: ``run `smoke sessions doctor ...```
    for a workspace's ``.smoke/sessions.db``, else the Python call."""
    if db.name == "sessions.db" and db.parent.name == ".smoke":
        return f"run `smoke sessions doctor -w {db.parent.parent}" + (f" --from {source}`" if source else "`")
    if source is not None:
        return f"call `smoke_core.store.sqlite_repair.salvage_sessions({str(source)!r}, {str(db)!r})`"
    return f"call `smoke_core.store.sqlite_repair.salvage_sessions({str(db)!r}, 'new.db')`"


@dataclass(slots=True)
class SessionInfo:
    session_id: str
    message_count: int
    created_at: float
    updated_at: float
    title: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds (or wants) a session lease: a token unique to one run, and
    the host and process it runs in. A lease whose holder is a process of
    this host that no longer runs is free at once (:meth:`is_gone`); any other
    lease is free when it expires."""

    token: str
    host: str
    pid: int

    @classmethod
    def for_this_process(cls) -> LeaseHolder:
        return cls(uuid.uuid4().hex, socket.gethostname(), os.getpid())

    def is_gone(self) -> bool:
        """True when the holder is a process of this host that has ended
        (a zombie counts as ended). Another host's process is never judged."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        if self.pid == os.getpid():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # it exists, owned by someone else
            return False
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
            return state in (b"Z", b"X")
        except (OSError, IndexError):
            return False

    def describe(self) -> str:
        return f"process {self.pid} on host {self.host!r}"


@dataclass(frozen=True, slots=True)
class Lease:
    """A store's answer to :meth:`LeasingStore.acquire_lease`. ``acquired``:
    the caller holds the lease now; otherwise ``holder`` is who does.
    ``since`` and ``expires_at`` are seconds since the epoch, by the store's clock."""

    session_id: str
    acquired: bool
    holder: LeaseHolder
    since: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A mutating tool call in the journal: started (committed before it
    executed) and, when it returned, ended with its result
    (``{"content": [...], "is_error": bool}``)."""

    call_id: str
    tool_name: str
    started_at: float
    ended_at: float | None = None
    result: dict[str, Any] | None = None


def lease_decision(
    current: LeaseHolder | None, current_expires_at: float, holder: LeaseHolder, now: float
) -> bool:
    """Whether ``holder`` may take a lease held by ``current`` (None: free):
    it is free, expired, already ``holder``'s, or held by a process of this
    host that has ended. Shared by the stores so they all decide alike."""
    return (
        current is None
        or not current.token
        or current.token == holder.token
        or current_expires_at <= now
        or current.is_gone()
    )


@runtime_checkable
class Store(Protocol):
    """Append-only message log per session. ``append`` must be durable when it
    returns (a crash afterwards loses nothing appended)."""

    def load(self, session_id: str) -> list[Message]: ...

    def append(self, session_id: str, message: Message) -> None: ...

    def list_sessions(self) -> list[SessionInfo]: ...


@runtime_checkable
class ManagedStore(Store, Protocol):
    """A store that can also rename and delete sessions (both built-in stores can;
    UIs check with ``isinstance(store, ManagedStore)``)."""

    def rename_session(self, session_id: str, title: str) -> bool: ...

    def delete_session(self, session_id: str) -> bool: ...


@runtime_checkable
class LeasingStore(Protocol):
    """A store that can lease a session to one run at a time. Every method is
    one short transaction; ``ttl`` is in seconds."""

    def acquire_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> Lease:
        """Take the lease when :func:`lease_decision` allows it (and hold it
        for ``ttl`` seconds); else report who holds it."""
        ...

    def renew_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease by ``ttl`` from now; False when it is no longer theirs."""
        ...

    def release_lease(self, session_id: str, holder: LeaseHolder) -> None:
        """Give the lease up (nothing happens when ``holder`` does not hold it)."""
        ...


@runtime_checkable
class JournalingStore(Protocol):
    """A store that journals mutating tool calls (at-most-once execution)."""

    def record_call_start(self, session_id: str, call_id: str, tool_name: str) -> None:
        """Commit that the call is about to execute (durable when this returns)."""
        ...

    def record_call_end(self, session_id: str, call_id: str, result: dict[str, Any]) -> None:
        """Commit that the call returned, with its result."""
        ...

    def pending_calls(self, session_id: str) -> dict[str, CallRecord]:
        """The journaled calls whose result message has not been appended
        (appending a ``tool`` message answers the calls it holds results for)."""
        ...


DEFAULT_LEASE_TTL = 30.0
DEFAULT_LEASE_WAIT = 5.0


class MemoryStore:
    """The default store of the library: a dict, lost when the process ends.

    ``lease_ttl`` / ``lease_wait`` (seconds): how long a run's session lease
    lasts between renewals, and how long a second run on a busy session
    waits before it fails with ``session_busy``."""

    def __init__(self, *, lease_ttl: float = DEFAULT_LEASE_TTL, lease_wait: float = DEFAULT_LEASE_WAIT) -> None:
        self._messages: dict[str, list[Message]] = {}
        self._info: dict[str, SessionInfo] = {}
        self._leases: dict[str, tuple[LeaseHolder, float, float]] = {}
        self._calls: dict[str, dict[str, CallRecord]] = {}
        self._lock = threading.Lock()
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait

    def load(self, session_id: str) -> list[Message]:
        return copy.deepcopy(self._messages.get(session_id, []))

    def append(self, session_id: str, message: Message) -> None:
        now = time.time()
        msgs = self._messages.setdefault(session_id, [])
        msgs.append(copy.deepcopy(message))
        if message["role"] == "tool" and session_id in self._calls:
            calls = self._calls[session_id]
            for block in message["content"]:
                calls.pop(str(block.get("tool_call_id")), None)
        info = self._info.get(session_id)
        if info is None:
            title = None
            if message["role"] == "user":
                title = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")[:80]
            self._info[session_id] = SessionInfo(session_id, 1, now, now, title)
        else:
            info.message_count += 1
            info.updated_at = now

    def list_sessions(self) -> list[SessionInfo]:
        return sorted(self._info.values(), key=lambda i: i.updated_at, reverse=True)

    def rename_session(self, session_id: str, title: str) -> bool:
        """Set a session's title; False when there is no such session."""
        info = self._info.get(session_id)
        if info is None:
            return False
        info.title = title
        return True

    def close(self) -> None:
        """Nothing to release (for code that closes every store)."""

    def delete_session(self, session_id: str) -> bool:
        """Forget a session and its messages; False when there was none."""
        self._messages.pop(session_id, None)
        self._calls.pop(session_id, None)
        return self._info.pop(session_id, None) is not None

    # -- lease (one run per session at a time, within this process)

    def acquire_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> Lease:
        with self._lock:
            now = time.time()
            current = self._leases.get(session_id)
            if current is None or lease_decision(current[0], current[2], holder, now):
                since = current[1] if current is not None and current[0].token == holder.token else now
                self._leases[session_id] = (holder, since, now + ttl)
                return Lease(session_id, True, holder, since, now + ttl)
            return Lease(session_id, False, current[0], current[1], current[2])

    def renew_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> bool:
        with self._lock:
            current = self._leases.get(session_id)
            if current is None or current[0].token != holder.token:
                return False
            self._leases[session_id] = (holder, current[1], time.time() + ttl)
            return True

    def release_lease(self, session_id: str, holder: LeaseHolder) -> None:
        with self._lock:
            current = self._leases.get(session_id)
            if current is not None and current[0].token == holder.token:
                del self._leases[session_id]

    # -- call journal (at-most-once mutating calls)

    def record_call_start(self, session_id: str, call_id: str, tool_name: str) -> None:
        self._calls.setdefault(session_id, {})[call_id] = CallRecord(call_id, tool_name, time.time())

    def record_call_end(self, session_id: str, call_id: str, result: dict[str, Any]) -> None:
        calls = self._calls.setdefault(session_id, {})
        started = calls.get(call_id)
        calls[call_id] = CallRecord(
            call_id, started.tool_name if started else "", started.started_at if started else time.time(),
            time.time(), copy.deepcopy(result),
        )

    def pending_calls(self, session_id: str) -> dict[str, CallRecord]:
        return dict(self._calls.get(session_id, {}))
