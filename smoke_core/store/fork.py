"""Forking a session: a new session that starts with a copy of another's
history (the Claude Agent SDK's ``fork_session``); the source is not changed.

The copy is taken under the source's lease (:mod:`smoke_core.store.lease`),
so a run still writing to the source cannot leave half a step in the fork:
a source held by another run is :class:`~smoke_core.store.lease.SessionBusy`
(``session_busy``) at once, nothing written.
"""

from __future__ import annotations

from typing import Any

from .lease import SessionLease, call_store


class UnknownSession(LookupError):
    """The session to fork (or resume) holds no messages in this store."""


async def fork_session(store: Any, source: str, target: str) -> int:
    """Copy every message of ``source`` into the new session ``target``; the
    number of messages copied. Raises :class:`UnknownSession` when
    ``source`` is empty, ``ValueError`` when ``target`` already holds
    messages, :class:`~smoke_core.store.lease.SessionBusy` when another run
    holds ``source``."""
    if source == target:
        raise ValueError(f"a fork needs a new session id, not the source's own ({source!r})")
    lease = await SessionLease.take(store, source, wait=0.0)
    try:
        messages = await call_store(store, "load", source)
        if not messages:
            raise UnknownSession(f"no session {source!r} in this store")
        if await call_store(store, "load", target):
            raise ValueError(f"session {target!r} already holds messages; a fork starts a new session")
        for message in messages:
            await call_store(store, "append", target, message)
    finally:
        if lease is not None:
            await lease.release()
    return len(messages)
