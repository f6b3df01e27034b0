"""Run events (DESIGN §6).

Every event is ``{type, session_id, run_id, timestamp, data}``; ``data`` holds
only JSON-serialisable values with snake_case keys. Consumers must ignore
types they do not know: new types are added over time.
"""

from __future__ import annotations

import time
from typing import Any, Literal, get_args

EventType = Literal[
    "run.started",
    "run.completed",
    "run.failed",
    "run.interrupted",
    "run.warning",
    "step.started",
    "step.ended",
    "phase.changed",
    "text.delta",
    "text.thought",
    "text.end",
    "text.discarded",
    "model.progress",
    "tool.started",
    "tool.output",
    "tool.progress",
    "tool.completed",
    "permission.required",
    "permission.resolved",
    "permission.mode_changed",
    "plan.required",
    "plan.resolved",
    "ask_user.required",
    "ask_user.response",
    "compaction.started",
    "compaction.completed",
    "todo.updated",
    "usage.updated",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "subagent.interrupted",
    "hook.started",
    "hook.completed",
]

EVENT_TYPES: tuple[str, ...] = get_args(EventType)

#: The payload fields each event type carries in ``data`` (documented in docs/events.md).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "run.started": ("task", "provider", "model", "tools", "step_limit"),
    "run.completed": ("text", "usage", "steps"),
    "run.failed": ("error", "usage", "steps"),
    "run.interrupted": ("reason", "usage", "steps"),
    "run.warning": ("error", "attempt", "retry_in_ms"),
    "step.started": ("step",),
    "step.ended": ("step", "tool_calls", "finish_reason"),
    "phase.changed": ("phase", "previous"),
    "text.delta": ("text",),
    "text.thought": ("text",),
    "text.end": ("text",),
    "text.discarded": ("reason", "text"),
    "model.progress": ("kind", "done", "total", "tool_name"),
    "tool.started": ("tool_call_id", "tool_name", "input", "presentation", "tool_kind"),
    "tool.output": ("tool_call_id", "tool_name", "stream", "text"),
    "tool.progress": ("tool_call_id", "tool_name", "message", "progress", "total", "presentation"),
    "tool.completed": (
        "tool_call_id", "tool_name", "is_error", "content", "error", "duration_ms", "waited_ms", "presentation",
    ),
    "permission.required": (
        "tool_call_id", "kind", "tool_name", "input", "reason", "presentation", "tool_kind", "suggested_rule",
        "suggested_rule_user", "suggested_rules", "suggested_rules_user", "commands",
    ),
    "permission.resolved": ("tool_call_id", "decision"),
    "permission.mode_changed": ("mode", "previous"),
    "plan.required": ("tool_call_id", "plan", "modes", "rejections", "max_rejections"),
    "plan.resolved": ("tool_call_id", "decision", "mode", "text"),
    "ask_user.required": ("tool_call_id", "question", "options", "multiple"),
    "ask_user.response": ("tool_call_id", "text"),
    "compaction.started": ("messages", "estimated_tokens"),
    "compaction.completed": ("messages_before", "messages_after", "estimated_tokens"),
    "todo.updated": ("todos",),
    "usage.updated": ("usage", "step_usage"),
    "subagent.started": ("task", "provider", "model", "tools", "step_limit", "parent_tool_call_id"),
    "subagent.completed": ("text", "usage", "steps", "parent_tool_call_id"),
    "subagent.failed": ("error", "usage", "steps", "parent_tool_call_id"),
    "subagent.interrupted": ("reason", "usage", "steps", "parent_tool_call_id"),
    "hook.started": ("hook_event", "hook", "command", "tool_call_id"),
    "hook.completed": (
        "hook_event", "hook", "command", "tool_call_id", "exit_code", "duration_ms", "decision", "reason", "error",
    ),
}


class Event:
    """One event of a run. ``to_dict()`` gives the wire/JSON form."""

    __slots__ = ("data", "run_id", "session_id", "timestamp", "type")

    def __init__(
        self,
        type: str,
        data: dict[str, Any],
        *,
        run_id: str | None,
        session_id: str | None,
        timestamp: float | None = None,
    ) -> None:
        self.type = type
        self.data = data
        self.run_id = run_id
        self.session_id = session_id
        self.timestamp = time.time() if timestamp is None else timestamp

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "timestamp": self.timestamp,
            "data": self.data,
        }

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __repr__(self) -> str:
        return f"Event({self.type!r}, {self.data!r})"
