"""Session stores: keep a session's messages across runs."""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from ._messages import Message


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
        return f"call `smoke_core._sqlite_store.salvage_sessions({str(source)!r}, {str(db)!r})`"
    return f"call `smoke_core._sqlite_store.salvage_sessions({str(db)!r}, 'new.db')`"


@dataclass(slots=True)
class SessionInfo:
    session_id: str
    message_count: int
    created_at: float
    updated_at: float
    title: str | None = None


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


class MemoryStore:
    """The default store of the library: a dict, lost when the process ends."""

    def __init__(self) -> None:
        self._messages: dict[str, list[Message]] = {}
        self._info: dict[str, SessionInfo] = {}

    def load(self, session_id: str) -> list[Message]:
        return copy.deepcopy(self._messages.get(session_id, []))

    def append(self, session_id: str, message: Message) -> None:
        now = time.time()
        msgs = self._messages.setdefault(session_id, [])
        msgs.append(copy.deepcopy(message))
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

    def delete_session(self, session_id: str) -> bool:
        """Forget a session and its messages; False when there was none."""
        self._messages.pop(session_id, None)
        return self._info.pop(session_id, None) is not None
