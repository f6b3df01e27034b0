"""``SQLiteStore``: sessions in a SQLite file (standard library ``sqlite3``).

WAL journal, one transaction per appended message (committed before
``append`` returns, ``synchronous=NORMAL`` in WAL mode survives a process
kill), so a run killed with SIGKILL loses at most the step in flight.
Safe to share between threads of one process; each call uses its own
short transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from .messages import Message
from .store import SessionInfo

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
"""


class SQLiteStore:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, session_id: str) -> list[Message]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT role, content FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        return [{"role": role, "content": json.loads(content)} for role, content in rows]

    def append(self, session_id: str, message: Message) -> None:
        now = time.time()
        content = json.dumps(message["content"], ensure_ascii=False)
        title = None
        if message["role"] == "user":
            title = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")[:80]
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO sessions (session_id, title, created_at, updated_at, message_count) "
                    "VALUES (?, ?, ?, ?, 0) ON CONFLICT(session_id) DO NOTHING",
                    (session_id, title, now, now),
                )
                row = conn.execute(
                    "SELECT message_count FROM sessions WHERE session_id = ?", (session_id,)
                ).fetchone()
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
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def rename_session(self, session_id: str, title: str) -> bool:
        """Set a session's title; False when there is no such session."""
        with self._lock:
            cur = self._conn.execute("UPDATE sessions SET title = ? WHERE session_id = ?", (title, session_id))
        return cur.rowcount > 0

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages in one transaction; False when there was none."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                cur = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return cur.rowcount > 0

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, message_count, created_at, updated_at, title FROM sessions "
                "ORDER BY updated_at DESC"
            ).fetchall()
        return [SessionInfo(r[0], r[1], r[2], r[3], r[4]) for r in rows]
