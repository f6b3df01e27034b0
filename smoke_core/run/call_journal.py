"""At-most-once execution of mutating tool calls across crashes.

Before a mutating tool call executes, its start is committed to the store's
journal (:class:`~smoke_core.store.protocol.JournalingStore`); when it returns, its
end and result. A run killed in between leaves a started-but-unfinished
call. When the session is loaded again, :func:`unanswered_result` turns each
call of the transcript that has no result into one the model can act on:

- started, never ended: *interrupted — its outcome is unknown, check before
  retrying*; the harness never executes it again;
- ended, result not saved: the recorded result;
- never started: *not run*.

Read-only calls are not journaled: running one twice does no harm.
Subagents' calls are not either (their transcript is not stored).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..store.lease import call_store
from ..store.protocol import CallRecord, JournalingStore

INTERRUPTED = (
    "interrupted: the previous run stopped while this call was running, so its outcome is unknown — it may "
    "or may not have taken effect. Check before retrying (do not repeat it blindly)."
)
NOT_RUN = "not run: the previous run ended before this call completed"
RECOVERED = "(the previous run stopped after this call returned, before its result was saved; this is that result)"


class CallJournal:
    """The journal of one run's mutating calls."""

    def __init__(self, store: Any, session_id: str) -> None:
        self.store = store
        self.session_id = session_id

    @classmethod
    def for_call(cls, run: Any, tool: Any) -> CallJournal | None:
        """The journal for a call of ``tool`` in ``run`` (the
        :class:`~smoke_core.run.handle.RunHandle`), or None when the call is not
        journaled: a read-only tool, a subagent's run, no session, or a store
        without a journal."""
        if tool is None or tool.read_only or getattr(run, "parent", None) is not None:
            return None
        session_id = getattr(run, "session_id", None)
        store = getattr(getattr(run, "agent", None), "store", None)
        if session_id is None or not isinstance(store, JournalingStore):
            return None
        return cls(store, session_id)

    async def started(self, call_id: str, tool_name: str) -> None:
        await call_store(self.store, "record_call_start", self.session_id, call_id, tool_name)

    async def ended(self, call_id: str, content: list[dict[str, Any]], is_error: bool) -> None:
        await call_store(self.store, "record_call_end", self.session_id, call_id,
                         {"content": content, "is_error": is_error})


def pending_calls(store: Any, session_id: str) -> dict[str, CallRecord]:
    """The session's journaled calls that have no result message (empty for a store without a journal)."""
    if not isinstance(store, JournalingStore):
        return {}
    return store.pending_calls(session_id)


def unanswered_result(call: Mapping[str, Any], calls: Mapping[str, CallRecord] | None) -> dict[str, Any]:
    """The ``tool_result`` block standing in for ``call`` (a ``tool_call``
    block that has no result in the transcript)."""
    record = calls.get(str(call.get("id"))) if calls else None
    if record is not None and record.ended_at is not None and record.result is not None:
        content = list(record.result.get("content") or [])
        return {"type": "tool_result", "tool_call_id": call["id"], "is_error": bool(record.result.get("is_error")),
                "content": [*content, {"type": "text", "text": RECOVERED}]}
    text = INTERRUPTED if record is not None else NOT_RUN
    return {"type": "tool_result", "tool_call_id": call["id"], "is_error": True,
            "content": [{"type": "text", "text": text}]}
