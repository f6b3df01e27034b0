"""Context compaction: when the estimated prompt passes a share of the
model's window, older turns are replaced by a summary.

The cut never separates a tool call from its result: the kept tail always
starts at an assistant message. The summary is asked of the model itself
(no tools); if that call fails, a mechanical summary is used instead, so
compaction never fails a run. The stored session keeps every message.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .messages import Message, user_message
from .providers import ModelRequest, TextDelta

if TYPE_CHECKING:
    from .run import RunHandle

SUMMARY_PREFIX = "[Summary of the earlier conversation]"

_SUMMARY_INSTRUCTION = (
    "Summarise the conversation so far for your own later use: the task, decisions made, files "
    "read or changed (with paths), commands run and their outcome, and what remains to do. "
    "Be concise; use bullet points."
)


def message_chars(message: Message) -> int:
    """Characters a message adds to a prompt (images count as 1000)."""
    chars = 0
    for b in message["content"]:
        t = b.get("type")
        if t == "text" or t == "thinking":
            chars += len(b.get("text", ""))
        elif t == "tool_call":
            chars += len(b.get("name", "")) + len(str(b.get("input", {})))
        elif t == "tool_result":
            for c in b.get("content", []):
                chars += len(c.get("text", "")) if c.get("type") == "text" else 1000
        elif t == "image":
            chars += 1000
    return chars


def estimate_tokens(messages: list[Message], system: str | None = None, tools: list[Any] | None = None) -> int:
    """A cheap estimate (~4 characters per token) — good enough to decide when to compact."""
    chars = len(system or "") + sum(message_chars(m) for m in messages)
    if tools:
        chars += len(json.dumps(tools))
    return chars // 4


class Compactor:
    def __init__(self, *, context_window: int = 128_000, threshold: float = 0.75, keep_recent: int = 6) -> None:
        self.context_window = context_window
        self.threshold = threshold
        self.keep_recent = keep_recent

    async def maybe_compact(self, run: RunHandle) -> bool:
        messages = run.messages
        if len(messages) <= self.keep_recent + 1:
            return False
        # Per-step cost must not grow with the history: the run keeps a running
        # character count and only the messages added since the last step are
        # measured (messages are append-only until compaction replaces them).
        state = run._compaction_state
        if state["list"] is not messages or state["counted"] > len(messages):
            state.update(list=messages, counted=0, chars=0)
        for m in messages[state["counted"] :]:
            state["chars"] += message_chars(m)
        state["counted"] = len(messages)
        if state["tools"] is None:
            state["tools"] = len(json.dumps(getattr(run, "_schemas", None) or []))
        estimated = (state["chars"] + state["tools"] + len(run.system_prompt() or "")) // 4
        if estimated < self.context_window * self.threshold:
            return False
        cut = self._cut_index(messages)
        if cut is None:
            return False
        run.emit("compaction.started", {"messages": len(messages), "estimated_tokens": estimated})
        old, kept = messages[:cut], messages[cut:]
        summary = await self._summarise(run, old)
        new_messages: list[Message] = [user_message(f"{SUMMARY_PREFIX}\n{summary}"), *kept]
        run.messages = new_messages
        run.emit(
            "compaction.completed",
            {
                "messages_before": len(messages),
                "messages_after": len(new_messages),
                "estimated_tokens": estimate_tokens(new_messages, run.system_prompt()),
            },
        )
        return True

    def _cut_index(self, messages: list[Message]) -> int | None:
        cut = len(messages) - self.keep_recent
        while cut > 1 and messages[cut]["role"] != "assistant":
            cut -= 1
        if cut <= 1:
            return None
        return cut

    async def _summarise(self, run: RunHandle, old: list[Message]) -> str:
        provider = run.agent.provider
        request = ModelRequest(
            model=getattr(provider, "model", ""),
            messages=[*old, user_message(_SUMMARY_INSTRUCTION)],
            tools=[],
            system=run.agent.system_prompt,
            settings=dict(run.agent.model_settings),
            user_id=run.user_id,
        )
        try:
            parts: list[str] = []
            stream = provider.stream(request)
            try:
                async for ev in stream:
                    if type(ev) is TextDelta:
                        parts.append(ev.text)
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            text = "".join(parts).strip()
            if text:
                return text
        except Exception:  # fall back to the mechanical summary below
            pass
        return mechanical_summary(old)


def mechanical_summary(messages: list[Message], limit: int = 4000) -> str:
    lines: list[str] = []
    for m in messages:
        for b in m["content"]:
            t = b.get("type")
            if t == "text" and b.get("text", "").strip():
                who = "User" if m["role"] == "user" else "Assistant"
                lines.append(f"- {who}: {b['text'].strip()[:300]}")
            elif t == "tool_call":
                lines.append(f"- Called {b['name']}({json.dumps(b.get('input', {}))[:200]})")
            elif t == "tool_result" and b.get("is_error"):
                lines.append("  (that call failed)")
    text = "\n".join(lines)
    return text if len(text) <= limit else "...\n" + text[-limit:]
