"""A damaged session database: :func:`check_database` (``smoke sessions
doctor``) and :func:`salvage_sessions`, which copies whatever can still be
read into a new file.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sqlite import SQLiteStore, decode_rows

# ---------------------------------------------------------------- salvage


@dataclass
class DatabaseCheck:
    """What :func:`check_database` found: ``error`` is None when SQLite can
    read the whole file; ``unreadable`` counts message rows that cannot be
    decoded (the store shows them as placeholders)."""

    path: Path
    error: str | None = None
    sessions: int = 0
    messages: int = 0
    unreadable: int = 0


def check_database(path: str | os.PathLike[str]) -> DatabaseCheck:
    """Check a session database without changing it (read-only): SQLite's
    ``quick_check`` and a decode of every message row."""
    result = DatabaseCheck(Path(path))
    try:
        conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        result.error = str(exc)
        return result
    try:
        check = [str(r[0]) for r in conn.execute("PRAGMA quick_check(1)").fetchall()]
        if check != ["ok"]:
            lines = [x for c in check for x in c.splitlines() if x and not x.startswith("***")]
            result.error = f"integrity check failed: {lines[0] if lines else check[0]}"
            return result
        result.sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        last: tuple[Any, ...] | None = None
        rows: list[tuple[Any, Any, Any]] = []
        for session_id, seq, role, content in conn.execute(
            "SELECT session_id, seq, role, content FROM messages ORDER BY session_id, seq"
        ):
            if last is not None and session_id != last:
                result.unreadable += len(decode_rows(rows)[1])
                rows = []
            last = session_id
            rows.append((seq, role, content))
            result.messages += 1
        result.unreadable += len(decode_rows(rows)[1])
    except sqlite3.DatabaseError as exc:
        result.error = str(exc)
    finally:
        conn.close()
    return result


@dataclass
class SalvageReport:
    """What :func:`salvage_sessions` found and copied."""

    source: Path
    target: Path
    sessions: int = 0
    messages: int = 0
    unreadable_messages: int = 0
    skipped_sessions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    healthy: bool = False


def _rows_from(conn: sqlite3.Connection, sql: str, problems: list[str]) -> Iterator[tuple[Any, ...]]:
    """Rows of ``sql`` (which must select the rowid first and take ``:after``),
    stepping past damaged pages: after an error, carry on from further
    rowids (1, 2, 4, ... ahead) instead of giving up on the table."""
    after, jump, failures = -1, 1, 0
    while jump <= 1 << 40 and failures < 200:
        try:
            for row in conn.execute(sql, {"after": after}):
                if not isinstance(row[0], int) or row[0] <= after:
                    continue  # a damaged page can hand back rows out of order: never go backwards
                after, jump = row[0], 1
                yield row
            break
        except sqlite3.DatabaseError as exc:
            if failures == 0:
                problems.append(f"rows after rowid {after} could not be read ({exc})")
            failures += 1
            after += jump
            jump *= 2


def _readable_copy(source: Path, folder: Path) -> Path:
    """A copy of ``source`` (and its ``-wal``) that SQLite will read as far as
    it goes: the header's page count is marked stale, so a truncated file is
    sized by its length instead of failing as a whole."""
    copy = folder / "salvage.db"
    shutil.copyfile(source, copy)
    wal = source.with_name(source.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, folder / "salvage.db-wal")
    with open(copy, "r+b") as fh:
        header = fh.read(100)
        if len(header) == 100 and header.startswith(b"SQLite format 3\x00"):
            counter = int.from_bytes(header[24:28], "big")
            fh.seek(92)  # "version-valid-for": unequal to the change counter = size from the file length
            fh.write(((counter + 1) & 0xFFFFFFFF).to_bytes(4, "big"))
    return copy


def salvage_sessions(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> SalvageReport:
    """Copy every session and message that can still be read from the
    (damaged) database ``source`` into ``target`` (created if missing;
    sessions already in it are left as they are). ``source`` is never
    changed: a temporary copy is read. Unreadable messages are carried over
    as placeholders (see :func:`decode_rows`); session titles are kept,
    creation times are not."""
    report = SalvageReport(Path(source), Path(target))
    titles: dict[str, tuple[Any, Any]] = {}
    by_session: dict[str, list[tuple[Any, Any, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="smoke-salvage-") as tmp:
        try:
            copy = _readable_copy(Path(source), Path(tmp))
        except OSError as exc:
            report.problems.append(f"cannot read {source}: {exc.strerror or exc}")
            return report
        src = sqlite3.connect(str(copy), isolation_level=None)
        try:
            src.execute("PRAGMA writable_schema=ON")  # read what the schema allows even if part of it is damaged
            try:
                check = [str(r[0]) for r in src.execute("PRAGMA quick_check(20)").fetchall()]
                report.healthy = check == ["ok"]
                if not report.healthy:
                    lines = [x for c in check for x in c.splitlines() if x and not x.startswith("***")]
                    report.problems.append(f"the integrity check failed ({lines[0] if lines else check[0]})")
            except sqlite3.DatabaseError as exc:
                report.problems.append(f"the file cannot be checked ({exc})")
            for row in _rows_from(
                src, "SELECT rowid, session_id, title, updated_at FROM sessions WHERE rowid > :after ORDER BY rowid",
                report.problems,
            ):
                titles[str(row[1])] = (row[2], row[3])
            for row in _rows_from(
                src, "SELECT id, session_id, seq, role, content FROM messages WHERE id > :after ORDER BY id",
                report.problems,
            ):
                by_session.setdefault(str(row[1]), []).append((row[2], row[3], row[4]))
        finally:
            src.close()
    with SQLiteStore(target) as dest:
        existing = {info.session_id for info in dest.list_sessions()}
        for session_id in sorted(by_session, key=lambda sid: _number(titles.get(sid, (None, 0))[1])):
            if session_id in existing:
                report.skipped_sessions.append(session_id)
                continue
            rows = sorted(by_session[session_id], key=lambda r: _number(r[0]))
            messages, problems = decode_rows(rows)
            report.unreadable_messages += len(problems)
            if not messages:
                report.problems.append(f"session {session_id!r}: no message could be read; not copied")
                continue
            for message in messages:
                dest.append(session_id, message)
            title = titles.get(session_id, (None, None))[0]
            if title:
                dest.rename_session(session_id, str(title))
            report.sessions += 1
            report.messages += len(messages)
    return report


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0
