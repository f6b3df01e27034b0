"""A session's history as a provider may be sent it (:func:`repair_history`)
and new session ids (:func:`new_session_id`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from ..base.messages import Message
from ..store.protocol import CallRecord
from .call_journal import unanswered_result


def repair_history(messages: list[Message], journal: Mapping[str, CallRecord] | None = None) -> list[Message]:
    """Close tool calls left without results (a run killed mid-step) so the
    history is valid for every provider; the store itself is not changed.
    ``journal`` (the store's pending mutating calls) says which of them
    started, so they read "interrupted: outcome unknown" rather than "not
    run" (call_journal.unanswered_result)."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        out.append(message)
        if message["role"] != "assistant":
            continue
        calls = [b for b in message["content"] if b.get("type") == "tool_call"]
        if not calls:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.get("tool_call_id") for b in nxt["content"]} if nxt and nxt["role"] == "tool" else set()
        missing = [c for c in calls if c["id"] not in answered]
        if not missing:
            continue
        filler = [unanswered_result(c, journal) for c in missing]
        if nxt is not None and nxt["role"] == "tool":
            messages[i + 1] = {"role": "tool", "content": [*nxt["content"], *filler]}
        else:
            out.append({"role": "tool", "content": filler})
    return out


def new_session_id() -> str:
    return "ses_" + uuid.uuid4().hex[:12]
