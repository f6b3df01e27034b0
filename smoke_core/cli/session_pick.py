"""Which session ``smoke run`` / ``smoke chat`` use: ``--session ID``,
``--continue`` (the last session of this folder), ``--resume [ID]`` (a
picker at the terminal, keyboard only), ``--fork ID`` (a new session from a
copy of another's history).

The last session of a folder is the most recently updated one of its own
``.smoke/sessions.db``; with a store shared between folders
(``SMOKE_STORE_URL``, the ``store`` setting) it is the session this folder
ran last, remembered in ``.smoke/last-session``.
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.display import visible

#: how many sessions the picker offers (the most recent first)
PICKER_ROWS = 20


class SessionChoiceError(Exception):
    """A session flag that cannot be honoured: one message, exit 2."""


class PickerCancelled(Exception):
    """The person left the picker without choosing (q, Esc, Ctrl-C)."""


@dataclass(slots=True)
class Choice:
    """The session a run uses, and the one it is forked from (``--fork``)."""

    session_id: str | None
    fork_from: str | None = None

    @property
    def continues(self) -> bool:
        return self.session_id is not None and self.fork_from is None


def last_session_file(ws: Path) -> Path:
    return ws / ".smoke" / "last-session"


def remember_last(ws: Path, session_id: str) -> None:
    """Note ``session_id`` as this folder's last session (never fails a run)."""
    from ..base.smoke_dir import ensure_smoke_dir

    try:
        path = ensure_smoke_dir(ws) / "last-session"
        tmp = path.with_name(f".last-session.{os.getpid()}.tmp")
        tmp.write_text(session_id + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def _is_folder_store(ws: Path, store: Any) -> bool:
    path = getattr(store, "path", None)
    return isinstance(path, Path) and path.resolve() == (ws / ".smoke" / "sessions.db").resolve()


def last_session(ws: Path, store: Any) -> str | None:
    """The last session of this folder in ``store``, or None."""
    if _is_folder_store(ws, store):
        infos = store.list_sessions()
        return max(infos, key=lambda i: i.updated_at).session_id if infos else None
    try:
        remembered = last_session_file(ws).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return remembered if remembered and store.load(remembered) else None


def choose(ws: Path, store: Any, *, session: str | None, continue_: bool, resume: str | None,
           fork: str | None, interactive: bool) -> Choice:
    """The session for this run from the flags (at most one of them)."""
    given = [name for name, value in (("--session", session), ("--continue", continue_ or None),
                                      ("--resume", resume), ("--fork", fork)) if value is not None]
    if len(given) > 1:
        raise SessionChoiceError(f"{' and '.join(given)} each choose the session: give one of them")
    where = store_title(ws, store)
    if continue_:
        found = last_session(ws, store)
        if found is None:
            raise SessionChoiceError(f"--continue: no session in this folder yet ({where}); run without it to "
                                     f"start one")
        return Choice(found)
    if fork is not None:
        if not store.load(fork):
            raise SessionChoiceError(f"--fork: no session {fork!r} in {where}; `smoke sessions` lists them")
        return Choice(None, fork_from=fork)
    if resume is not None:
        if resume:
            if not store.load(resume):
                raise SessionChoiceError(f"--resume: no session {resume!r} in {where}; `smoke sessions` lists them "
                                         f"(or --resume without an id picks one)")
            return Choice(resume)
        if not interactive:
            raise SessionChoiceError("--resume without an id needs a terminal to pick from; give the id "
                                     "(`smoke sessions` lists them) or use --continue")
        rows = session_rows(store)
        if not rows:
            raise SessionChoiceError(f"--resume: no sessions yet in {where}")
        return Choice(pick(rows, title=f"Resume a session ({where})"))
    return Choice(session)


def store_title(ws: Path, store: Any) -> str:
    """The store in people's words: its file, its (redacted) URL or its kind."""
    from ..store.url import redact_url

    path = getattr(store, "path", None)
    if isinstance(path, Path):
        return f"SQLite {path}"
    url = getattr(store, "url", None) or getattr(store, "dsn", None)
    kind = getattr(store, "store_name", None)
    if isinstance(url, str) and url:
        scheme = url.split("://", 1)[0].split("+", 1)[0].lower()
        kind = kind or {"postgresql": "PostgreSQL", "postgres": "PostgreSQL"}.get(scheme, type(store).__name__)
        return f"{kind} {redact_url(url)}"
    return str(kind or type(store).__name__)


@dataclass(slots=True)
class Row:
    session_id: str
    first_task: str
    updated_at: float
    status: str
    messages: int


def session_status(messages: list[Any]) -> str:
    """How a session's last turn ended, from its messages."""
    if not messages:
        return "empty"
    last = messages[-1]
    if last["role"] == "assistant" and not any(b.get("type") == "tool_call" for b in last["content"]):
        return "answered"
    return "unfinished"


def session_rows(store: Any, limit: int = PICKER_ROWS) -> list[Row]:
    infos = sorted(store.list_sessions(), key=lambda i: i.updated_at, reverse=True)[:limit]
    rows = []
    for info in infos:
        messages = store.load(info.session_id)
        first = next((b.get("text", "") for m in messages if m["role"] == "user" for b in m["content"]
                      if b.get("type") == "text"), "")
        rows.append(Row(info.session_id, info.title or first, info.updated_at, session_status(messages),
                        info.message_count))
    return rows


def row_text(row: Row, width: int) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated_at))
    head = f"{when}  {row.status:<10}  {row.session_id}  "
    task = visible(" ".join(row.first_task.split()))
    room = max(10, width - len(head) - 4)
    return head + (task if len(task) <= room else task[: room - 1] + "…")


def pick(rows: list[Row], *, title: str, fd_in: int | None = None, out: Any = None) -> str:
    """The picker: ↑/↓ (or k/j) move, Enter chooses, a digit jumps to that
    row, q / Esc / Ctrl-C leave (:class:`PickerCancelled`). Drawn on stderr;
    keys read from the terminal in cbreak mode (no echo), restored after."""
    import termios
    import tty

    fd = sys.stdin.fileno() if fd_in is None else fd_in
    out = out or sys.stderr
    width = shutil.get_terminal_size((100, 24)).columns
    index = 0
    saved = termios.tcgetattr(fd)
    drawn = 0

    def draw() -> None:
        nonlocal drawn
        if drawn:
            out.write(f"\x1b[{drawn}A\x1b[J")
        lines = [f"\x1b[1m{title}\x1b[0m  (↑/↓ move · Enter resume · q leave)"]
        for i, row in enumerate(rows):
            text = f"{i + 1:>2}. {row_text(row, width)}"
            lines.append(f"\x1b[7m> {text}\x1b[0m" if i == index else f"  {text}")
        out.write("\n".join(lines) + "\n")
        out.flush()
        drawn = len(lines)

    try:
        tty.setcbreak(fd)
        draw()
        while True:
            key = _read_key(fd)
            if key in ("up", "k"):
                index = (index - 1) % len(rows)
            elif key in ("down", "j"):
                index = (index + 1) % len(rows)
            elif key.isdigit() and 1 <= int(key) <= len(rows):
                index = int(key) - 1
            elif key == "enter":
                out.write(f"resuming {rows[index].session_id}\n")
                return rows[index].session_id
            elif key in ("q", "esc", "ctrl-c", "ctrl-d"):
                raise PickerCancelled()
            draw()
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_key(fd: int) -> str:
    ch = os.read(fd, 1)
    if ch in (b"\r", b"\n"):
        return "enter"
    if ch == b"\x03":
        return "ctrl-c"
    if ch in (b"\x04", b""):
        return "ctrl-d"
    if ch == b"\x1b":
        # an arrow key is ESC [ A; a lone ESC has nothing after it
        if not select.select([fd], [], [], 0.05)[0]:
            return "esc"
        seq = os.read(fd, 2)
        return {b"[A": "up", b"[B": "down", b"OA": "up", b"OB": "down"}.get(seq, "other")
    return ch.decode("utf-8", "replace")
