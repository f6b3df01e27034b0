"""Context compaction: when the estimated prompt passes a share of the
model's window, older turns are replaced by a summary.

The cut never separates a tool call from its result: the kept tail always
starts at an assistant message. The summary is asked of the model itself
(no tools); if that call fails, a mechanical summary is used instead, so
compaction never fails a run. The stored session keeps every message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..base.messages import Message, user_message
from ..wire.types import ModelRequest, Provider, TextDelta


class CompactableRun(Protocol):
    """What compaction uses of a run (:class:`~smoke_core.plugin.RunHandle` is one)."""

    messages: list[Message]
    #: compaction's running count for this run (set and read by the Compactor only)
    compaction_tally: Any

    @property
    def tool_schemas(self) -> list[dict[str, Any]]: ...

    def system_prompt(self) -> str | None: ...

    def emit(self, type: str, data: dict[str, Any]) -> None: ...

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


@dataclass(slots=True)
class _Tally:
    """A run's running character count (see :meth:`Compactor.maybe_compact`)."""

    messages: list[Message] | None = None
    counted: int = 0
    chars: int = 0
    tool_chars: int | None = None


Summarise = Callable[[list[Message]], Awaitable[str]]


class Compactor:
    def __init__(self, *, context_window: int | Callable[[], int] = 128_000, threshold: float = 0.75,
                 keep_recent: int = 6) -> None:
        self._window = context_window  # a callable is asked once, on first use (the model's facts cost a look-up)
        self.threshold = threshold
        self.keep_recent = keep_recent

    @property
    def context_window(self) -> int:
        window = self._window
        if callable(window):
            window = self._window = int(window())
        return window

    @context_window.setter
    def context_window(self, value: int) -> None:
        self._window = value

    def due(self, run: CompactableRun) -> int | None:
        """The estimated prompt tokens when ``run.messages`` passes the
        threshold, else None: the check of :meth:`maybe_compact`, without a
        coroutine (the loop asks it every step and it almost always says None)."""
        messages = run.messages
        if len(messages) <= self.keep_recent + 1:
            return None
        # Per-step cost must not grow with the history: a running character
        # count per run, measuring only the messages added since the last
        # step (messages are append-only until compaction replaces them).
        tally = run.compaction_tally
        if tally is None:
            tally = run.compaction_tally = _Tally()
        if tally.messages is not messages or tally.counted > len(messages):
            tally.messages, tally.counted, tally.chars = messages, 0, 0
        for m in messages[tally.counted :]:
            tally.chars += message_chars(m)
        tally.counted = len(messages)
        if tally.tool_chars is None:
            tally.tool_chars = len(json.dumps(run.tool_schemas))
        estimated: int = (tally.chars + tally.tool_chars + len(run.system_prompt() or "")) // 4
        window = self._window
        if estimated < (window if type(window) is int else self.context_window) * self.threshold:
            return None
        return estimated

    async def maybe_compact(self, run: CompactableRun, summarise: Summarise | None = None) -> bool:
        """Compact ``run.messages`` when the estimated prompt passes the
        threshold. ``summarise(old_messages)`` asks the model for a summary
        (the run's model caller provides it); without it, or when it fails, a
        mechanical summary is used, so compaction never fails a run."""
        estimated = self.due(run)
        if estimated is None:
            return False
        return await self.compact_now(run, summarise, estimated=estimated)

    async def compact_now(self, run: CompactableRun, summarise: Summarise | None = None, *,
                          estimated: int | None = None, keep_recent: int | None = None) -> bool:
        """Compact ``run.messages`` whatever the estimate says (the server
        said the prompt does not fit: ``provider_context_overflow``), keeping
        the last ``keep_recent`` messages (default: the compactor's); False
        when there is nothing older than the kept tail to summarise."""
        messages = run.messages
        if estimated is None:
            estimated = estimate_tokens(messages, run.system_prompt(), run.tool_schemas)
        cut = self._cut_index(messages, self.keep_recent if keep_recent is None else keep_recent)
        if cut is None:
            return False
        run.emit("compaction.started", {"messages": len(messages), "estimated_tokens": estimated})
        old, kept = messages[:cut], messages[cut:]
        summary = await _summary(old, summarise)
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

    def _cut_index(self, messages: list[Message], keep_recent: int) -> int | None:
        cut = len(messages) - keep_recent
        while cut > 1 and messages[cut]["role"] != "assistant":
            cut -= 1
        if cut <= 1:
            return None
        return cut



async def _summary(old: list[Message], summarise: Summarise | None) -> str:
    if summarise is not None:
        try:
            text = (await summarise(old)).strip()
            if text:
                return text
        except Exception:  # fall back to the mechanical summary below
            pass
    return mechanical_summary(old)


async def summarise_with(
    provider: Provider, messages: list[Message], *, system: str | None, settings: dict[str, Any], user_id: str | None
) -> str:
    """Ask ``provider`` (no tools) to summarise ``messages``; the text it streams."""
    request = ModelRequest(
        model=getattr(provider, "model", ""),
        messages=[*messages, user_message(_SUMMARY_INSTRUCTION)],
        tools=[],
        system=system,
        settings=dict(settings),
        user_id=user_id,
    )
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
    return "".join(parts)


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
