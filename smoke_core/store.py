"""Session stores: keep a session's messages across runs."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .messages import Message


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
