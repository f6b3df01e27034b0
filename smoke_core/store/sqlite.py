"""``SQLiteStore``: sessions in a SQLite file (standard library ``sqlite3``).

WAL journal, one transaction per appended message (committed before
``append`` returns, ``synchronous=NORMAL`` in WAL mode survives a process
kill), so a run killed with SIGKILL loses at most the step in flight.
Safe to share between threads of one process; each call uses its own
short transaction.

A damaged file (not a database, truncated, malformed pages) never surfaces
as a raw ``sqlite3.DatabaseError``: it is a :class:`~smoke_core.store.protocol.StoreCorruptError`
naming the file and what to do, or, with ``on_corrupt="start_fresh"``, the
damaged file is moved aside (kept) and a fresh one is used, with a warning.
A message row that cannot be decoded is replaced by a placeholder and
reported in :attr:`SQLiteStore.warnings`; it never fails a load.
:func:`salvage_sessions` copies whatever can still be read into a new file
(``smoke sessions doctor``, in :mod:`smoke_core.store.sqlite_repair`).

The same file holds the session leases (one run per session at a time,
across the processes of this machine) and the journal of mutating tool
calls (at-most-once execution across crashes); see :mod:`smoke_core.store.protocol`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..base.messages import Message
from ..base.smoke_dir import ensure_smoke_dir
from .protocol import (
    DEFAULT_LEASE_TTL,
    DEFAULT_LEASE_WAIT,
    CallRecord,
    Lease,
    LeaseHolder,
    SessionInfo,
    StoreCorruptError,
    lease_decision,
    salvage_hint,
)

log = logging.getLogger("smoke.store")



_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    title TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_calls (
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    result TEXT,
    PRIMARY KEY (session_id, call_id)
);
"""

#: The text that stands in for a message that cannot be read.
UNREADABLE = "(message could not be read)"
_ROLES = frozenset({"user", "assistant", "tool", "system"})
# SQLite primary result codes that mean "this file is damaged"
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26

T = TypeVar("T")


def is_corruption(exc: BaseException) -> bool:
    """True when a ``sqlite3`` error says the file is damaged (not when it is
    locked, read-only or missing: those are not fixed by moving it aside)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def move_aside(path: Path) -> Path:
    """Rename a damaged database (and its ``-wal`` / ``-shm`` files) to
    ``<name>.corrupt-<time>``; returns the new path of the main file."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def _in_transaction(conn: sqlite3.Connection, op: Callable[[sqlite3.Connection], T]) -> T:
    """``op(conn)`` in one ``BEGIN IMMEDIATE`` transaction: committed, or rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        value = op(conn)
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise
    return value


class SQLiteStore:
    """Sessions in the SQLite file ``path`` (created with its folder if missing).

    ``on_corrupt``: ``"raise"`` (default) turns a damaged file into
    :class:`~smoke_core.store.protocol.StoreCorruptError`; ``"start_fresh"`` moves it
    aside (``moved_aside`` holds the new name), starts an empty file in its
    place and records a warning — for starting a new session when the old
    ones cannot be read. ``warnings`` lists every problem met (damaged file,
    unreadable messages); each is also logged on ``smoke.store``.
    ``lease_ttl`` / ``lease_wait`` (seconds): how long a run's session lease
    lasts between renewals, and how long a second run on a busy session
    waits before it fails with ``session_busy``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, on_corrupt: Literal["raise", "start_fresh"] = "raise",
        lease_ttl: float = DEFAULT_LEASE_TTL, lease_wait: float = DEFAULT_LEASE_WAIT,
    ) -> None:
        if on_corrupt not in ("raise", "start_fresh"):
            raise ValueError(f"on_corrupt must be 'raise' or 'start_fresh', got {on_corrupt!r}")
        self.path = Path(path)
        if self.path.parent.name == ".smoke" and not self.path.parent.exists():
            ensure_smoke_dir(self.path.parent.parent)  # with its .gitignore: the database stays out of git
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.on_corrupt = on_corrupt
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait
        self.warnings: list[str] = []
        self.moved_aside: Path | None = None
        self._lock = threading.Lock()
        # what this store appended, kept only to replay it if the file turns out damaged mid-run
        self._appended: list[tuple[str, Message]] | None = [] if on_corrupt == "start_fresh" else None
        try:
            self._conn = self._connect()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            self._conn = self._start_fresh(exc)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(_SCHEMA)
            # cheap reads that touch the root pages of both tables (a full check costs ~3 ms per MB)
            conn.execute("SELECT count(*) FROM sessions").fetchone()
            conn.execute("SELECT max(id) FROM messages").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def _start_fresh(self, exc: BaseException) -> sqlite3.Connection:
        """Move the damaged file aside and open a fresh one (``start_fresh``), or raise."""
        detail = str(exc)
        if self.on_corrupt != "start_fresh" or self.moved_aside is not None:
            raise StoreCorruptError(self.path, detail) from None
        self.moved_aside = move_aside(self.path)
        self._warn(
            f"the session database {self.path} could not be read ({detail}); it was moved to "
            f"{self.moved_aside} and a fresh one was started; {salvage_hint(self.path, self.moved_aside)} "
            f"to copy the sessions that can still be read into the fresh file."
        )
        conn = self._connect()
        for session_id, message in self._appended or []:
            self._append_on(conn, session_id, message)
        return conn

    def _guard(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` on the connection; a damaged file becomes StoreCorruptError
        or, in ``start_fresh`` mode (once), a fresh file and a retry."""
        with self._lock:
            try:
                return op(self._conn)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                try:
                    self._conn.close()
                except sqlite3.Error:
                    pass
                self._conn = self._start_fresh(exc)
                return op(self._conn)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("%s", message)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, session_id: str) -> list[Message]:
        rows = self._guard(
            lambda conn: conn.execute(
                "SELECT seq, role, content FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        )
        messages, problems = decode_rows(rows)
        for seq, reason in problems:
            self._warn(
                f"session {session_id!r} in {self.path}: message {seq} could not be read ({reason}); "
                f"it is shown as {UNREADABLE!r}"
            )
        return messages

    def append(self, session_id: str, message: Message) -> None:
        self._guard(lambda conn: self._append_on(conn, session_id, message))
        if self._appended is not None:
            self._appended.append((session_id, json.loads(json.dumps(message))))

    @staticmethod
    def _append_on(conn: sqlite3.Connection, session_id: str, message: Message) -> None:
        now = time.time()
        content = json.dumps(message["content"], ensure_ascii=False)
        title = None
        if message["role"] == "user":
            title = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")[:80]

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO sessions (session_id, title, created_at, updated_at, message_count) "
                "VALUES (?, ?, ?, ?, 0) ON CONFLICT(session_id) DO NOTHING",
                (session_id, title, now, now),
            )
            row = conn.execute("SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            seq = row[0]
            conn.execute(
                "INSERT INTO messages (session_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, message["role"], content, now),
            )
            conn.execute(
                "UPDATE sessions SET message_count = ?, updated_at = ?, title = COALESCE(title, ?) "
                "WHERE session_id = ?",
                (seq + 1, now, title, session_id),
            )
            if message["role"] == "tool":  # these calls are answered: the journal has done its job
                conn.executemany(
                    "DELETE FROM tool_calls WHERE session_id = ? AND call_id = ?",
                    [(session_id, str(b.get("tool_call_id"))) for b in message["content"]],
                )

        _in_transaction(conn, write)

    def rename_session(self, session_id: str, title: str) -> bool:
        """Set a session's title; False when there is no such session."""
        cur = self._guard(
            lambda conn: conn.execute("UPDATE sessions SET title = ? WHERE session_id = ?", (title, session_id))
        )
        return cur.rowcount > 0

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages in one transaction; False when there was none."""

        def op(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM tool_calls WHERE session_id = ?", (session_id,))
            return conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,)).rowcount > 0

        return self._transaction(op)

    def list_sessions(self) -> list[SessionInfo]:
        rows = self._guard(
            lambda conn: conn.execute(
                "SELECT session_id, message_count, created_at, updated_at, title FROM sessions "
                "ORDER BY updated_at DESC"
            ).fetchall()
        )
        return [SessionInfo(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    # ------------------------------------------------------------ session lease

    def _transaction(self, op: Callable[[sqlite3.Connection], T]) -> T:
        return self._guard(lambda conn: _in_transaction(conn, op))

    def acquire_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> Lease:
        """Take the session's lease for ``ttl`` seconds, or say who has it."""

        def op(conn: sqlite3.Connection) -> Lease:
            now = time.time()
            row = conn.execute(
                "SELECT token, host, pid, since, expires_at FROM leases WHERE session_id = ?", (session_id,)
            ).fetchone()
            current = LeaseHolder(row[0], row[1], row[2]) if row else None
            if row is None or lease_decision(current, row[4], holder, now):
                since = row[3] if row is not None and row[0] == holder.token else now
                conn.execute(
                    "INSERT INTO leases (session_id, token, host, pid, since, expires_at) VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET token = excluded.token, host = excluded.host, "
                    "pid = excluded.pid, since = excluded.since, expires_at = excluded.expires_at",
                    (session_id, holder.token, holder.host, holder.pid, since, now + ttl),
                )
                return Lease(session_id, True, holder, since, now + ttl)
            assert current is not None
            return Lease(session_id, False, current, row[3], row[4])

        return self._transaction(op)

    def renew_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease; False when it is no longer theirs."""
        cur = self._guard(lambda conn: conn.execute(
            "UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ?",
            (time.time() + ttl, session_id, holder.token),
        ))
        return cur.rowcount > 0

    def release_lease(self, session_id: str, holder: LeaseHolder) -> None:
        self._guard(lambda conn: conn.execute(
            "DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, holder.token)
        ))

    # ------------------------------------------------------------ call journal

    def record_call_start(self, session_id: str, call_id: str, tool_name: str) -> None:
        """Commit that a mutating call is about to run (before it runs)."""
        self._guard(lambda conn: conn.execute(
            "INSERT INTO tool_calls (session_id, call_id, tool_name, started_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(session_id, call_id) DO UPDATE SET tool_name = excluded.tool_name, "
            "started_at = excluded.started_at, ended_at = NULL, result = NULL",
            (session_id, call_id, tool_name, time.time()),
        ))

    def record_call_end(self, session_id: str, call_id: str, result: dict[str, Any]) -> None:
        """Commit that the call returned, with its result."""
        text = json.dumps(result, ensure_ascii=False)
        now = time.time()
        self._guard(lambda conn: conn.execute(
            "INSERT INTO tool_calls (session_id, call_id, tool_name, started_at, ended_at, result) "
            "VALUES (?, ?, '', ?, ?, ?) ON CONFLICT(session_id, call_id) DO UPDATE SET "
            "ended_at = excluded.ended_at, result = excluded.result",
            (session_id, call_id, now, now, text),
        ))

    def pending_calls(self, session_id: str) -> dict[str, CallRecord]:
        """Journaled calls whose result message was never appended."""
        rows = self._guard(lambda conn: conn.execute(
            "SELECT call_id, tool_name, started_at, ended_at, result FROM tool_calls WHERE session_id = ?",
            (session_id,),
        ).fetchall())
        out: dict[str, CallRecord] = {}
        for call_id, tool_name, started_at, ended_at, result in rows:
            try:
                value = json.loads(result) if result is not None else None
            except ValueError:
                value = None
            out[call_id] = CallRecord(call_id, tool_name, started_at, ended_at,
                                      value if isinstance(value, dict) else None)
        return out


# ---------------------------------------------------------------- decoding rows


def _decode(role: Any, content: Any) -> list[dict[str, Any]]:
    if role not in _ROLES:
        raise ValueError(f"unknown role {role!r}")
    if isinstance(content, bytes):
        content = content.decode("utf-8")
    blocks = json.loads(content)
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
        raise ValueError("content is not a list of blocks")
    return blocks


def decode_rows(rows: list[tuple[Any, Any, Any]]) -> tuple[list[Message], list[tuple[Any, str]]]:
    """``(seq, role, content)`` rows as messages. A row that cannot be decoded
    becomes a placeholder with the same role, kept valid for providers: an
    unreadable assistant turn loses its tool calls, so the tool results
    that answered them are dropped; an unreadable tool turn answers the
    calls before it with an error. Returns (messages, [(seq, reason)])."""
    out: list[Message] = []
    problems: list[tuple[Any, str]] = []
    last_calls: list[str] = []  # ids of the tool calls of the previous assistant message
    for seq, role, content in rows:
        try:
            blocks = _decode(role, content)
        except (ValueError, UnicodeError, TypeError) as exc:
            reason = str(exc).splitlines()[0][:200] or type(exc).__name__
            problems.append((seq, reason))
            if role not in _ROLES:
                continue  # no placeholder can stand in for an unknown role
            if role == "tool":
                if last_calls:
                    out.append({"role": "tool", "content": [
                        {"type": "tool_result", "tool_call_id": call_id, "is_error": True,
                         "content": [{"type": "text", "text": UNREADABLE}]}
                        for call_id in last_calls
                    ]})
                last_calls = []
                continue
            out.append({"role": role, "content": [{"type": "text", "text": UNREADABLE}]})
            last_calls = []
            continue
        if role == "tool":
            known = set(last_calls)
            blocks = [b for b in blocks if b.get("type") != "tool_result" or b.get("tool_call_id") in known]
            last_calls = []
            if not blocks:
                continue  # it answered calls of a message that could not be read
        elif role == "assistant":
            last_calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_call"]
        else:
            last_calls = []
        out.append({"role": role, "content": blocks})
    return out, problems
