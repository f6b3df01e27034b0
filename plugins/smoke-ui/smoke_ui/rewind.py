"""Fork a session and rewind to a turn, for the web page.

``POST /api/sessions/{id}/fork`` copies a session into a new one (the core's
``fork_session``: under the source's lease, so a run still writing to it is a
409, nothing written) and makes the copy the page's current session.

``POST /api/sessions/{id}/rewind`` ``{turn}`` puts the workspace's files and
the conversation back to before the session's ``turn``-th task (0-based, in
the order the session's user messages were sent): the files as recorded by
the last checkpoint taken before that turn (the core takes one before each
turn unless nothing changed since the previous one), and a new session that
holds the conversation up to that task (the old session is kept whole). The
core records the current state first; the answer carries it as ``undo``.
``{checkpoint: N}`` puts the files back to checkpoint ``N`` of that session
and makes it the current session again: that is how the page's "Undo
rewind" answers a rewind (the files as they were, the conversation whole).
Both are refused while a run is active (409).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from smoke_core.plugin import CheckpointError, SessionBusy, UnknownSession, fork_session

if TYPE_CHECKING:
    from .server import UIState


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _known(state: UIState, session_id: str) -> None:
    if not any(s.session_id == session_id for s in state.store.list_sessions()):
        raise Refused(404, f"no session {session_id!r} in this server's store")


async def fork(state: UIState, session_id: str) -> dict[str, Any]:
    """Copy ``session_id`` into a new session, which becomes the current one."""
    _known(state, session_id)
    running = state._running
    if state.running and running is not None and running.session_id == session_id:
        raise Refused(409, "this session is running: a fork copies a finished history — stop the run (or wait for "
                           "it to end), then fork")
    target = state._new_session_id()
    try:
        copied = await fork_session(state.store, session_id, target)
    except SessionBusy as busy:
        raise Refused(409, f"cannot fork: {busy.info.message}") from None
    except UnknownSession as exc:
        raise Refused(404, f"{exc}: only a session with messages can be forked") from None
    if not state.running:
        state.session_id = target
    return {"session_id": target, "forked_from": session_id, "messages": copied}


def turn_starts(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """The index in ``messages`` of each turn's task (each user message)."""
    return [i for i, m in enumerate(messages) if m.get("role") == "user"]


async def rewind(state: UIState, session_id: str, *, turn: int | None, checkpoint: int | None) -> dict[str, Any]:
    """Rewind ``session_id`` to before ``turn`` (files and conversation), or its files to ``checkpoint``."""
    if state.running:
        raise Refused(409, "a run is in progress: stop it (or wait for it to end) before rewinding — a rewind "
                           "changes the files the run is working on")
    _known(state, session_id)
    agent = state.agent_for(session_id)
    try:
        checkpoints = await asyncio.to_thread(agent.checkpoints, session_id)
        if checkpoint is not None:
            target = next((c for c in checkpoints if c.number == checkpoint), None)
            if target is None:
                raise Refused(404, f"no checkpoint {checkpoint} in session {session_id!r} (pruned, or never taken); "
                                   f"nothing was changed")
            before = await asyncio.to_thread(agent.rewind, target, conversation=False)
            current = session_id
            said = f"Files put back as they were at checkpoint {checkpoint}; session {session_id} is current again."
        else:
            assert turn is not None
            history = list(state.store.load(session_id))
            starts = turn_starts(history)
            if not 0 <= turn < len(starts):
                raise Refused(400, f"turn must be between 0 and {len(starts) - 1} (this session has {len(starts)} "
                                   f"turns); got {turn}")
            cut = starts[turn]
            taken = [c for c in checkpoints if c.messages <= cut]
            if not taken:
                raise Refused(404, f"no checkpoint was taken before turn {turn + 1} (checkpoints were off, or it was "
                                   f"pruned); nothing was changed")
            # the files at that turn's start are the last checkpoint's (none is taken when nothing changed);
            # the conversation goes back to just before the turn's task
            target = dataclasses.replace(taken[-1], messages=cut)
            before = await asyncio.to_thread(agent.rewind, target, conversation=True)
            current = agent.session_id or session_id
            said = (f"Rewound files and conversation to before turn {turn + 1}; the conversation goes on in session "
                    f"{current} (session {session_id} is kept).")
    except CheckpointError as exc:
        raise Refused(409, str(exc)) from None
    if current != session_id:  # the agent now works on the new session
        state.agents.pop(session_id, None)
        state.agents[current] = agent
    state.session_id = current
    return {
        "session_id": current,
        "rewound": session_id,
        "said": said,
        "undo": {"session_id": before.session_id, "checkpoint": before.number},
        "undo_hint": f"to undo: POST /api/sessions/{before.session_id}/rewind {{\"checkpoint\": {before.number}}} "
                     f"(the page's Undo rewind), or `smoke rewind {before.number} --session {before.session_id}`",
    }
