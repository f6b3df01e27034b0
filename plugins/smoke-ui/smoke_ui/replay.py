"""The event hub behind ``/api/events``: live fan-out plus a replay log that is
bounded in **bytes**, not in events.

Why bytes: a command that floods its output sends tens of thousands of
``tool.output`` chunks; a log of the last N events then holds N chunks (the
flood of issue 21 grew a server from 41 MiB to 1.23 GiB in three runs). Here:

- ``tool.output`` chunks of one tool call are **coalesced** into one replay
  entry holding the tail of the output (``snapshot_chars``), and that entry is
  **dropped** when the call's ``tool.completed`` arrives (the completed card
  holds the result the model saw).
- ``text.delta`` chunks of a run are coalesced the same way and dropped at
  ``text.end`` (which carries the whole text); consecutive ``text.thought``
  chunks are coalesced into one entry.
- One event larger than ``max_event_bytes`` is kept in the log with its long
  strings shortened (``data.replay_truncated``); live subscribers got it whole.
- The whole log is held under ``budget_bytes``; the oldest entries go first.
  Pending approvals and questions are **pinned**: never shortened, never
  evicted, until answered or the run (or the subagent run that asked) ends.
- A subscriber (an open page) that does not read fast enough is cut off once
  ``subscriber_bytes`` wait in its queue; the browser reconnects with
  ``Last-Event-ID`` and catches up from the (coalesced) log.

A coalesced entry is sent with ``data.snapshot = true``: it holds everything
kept so far for that call or message, so a page *replaces* what it shows with
it instead of appending (``data.omitted_chars`` says how much of the start was
not kept). Sizes are measured with :func:`sys.getsizeof` of the stored text,
i.e. the memory the log really holds.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_EVENT_BYTES",
    "DEFAULT_REPLAY_BUDGET",
    "DEFAULT_SNAPSHOT_CHARS",
    "DEFAULT_SUBSCRIBER_BYTES",
    "EventHub",
    "Subscription",
]

DEFAULT_REPLAY_BUDGET = 8 * 1024 * 1024
"""Bytes of event text the replay log keeps (8 MiB)."""
DEFAULT_SNAPSHOT_CHARS = 64 * 1024
"""Characters of a running tool's output (or a streaming message) kept for replay (the tail)."""
DEFAULT_EVENT_BYTES = 1024 * 1024
"""An event bigger than this (1 MiB) is kept in the replay log with long strings shortened."""
DEFAULT_SUBSCRIBER_BYTES = 8 * 1024 * 1024
"""Bytes that may wait for one slow page before its stream is cut (it then reconnects)."""

# a run's end, or a subagent's (its events carry the subagent run's own run_id)
_TERMINAL = frozenset({"run.completed", "run.failed", "run.interrupted",
                       "subagent.completed", "subagent.failed", "subagent.interrupted"})
_PINNED_BY = {"permission.required": "permission.resolved", "ask_user.required": "ask_user.response",
              "plan.required": "plan.resolved"}
_EMPTY_STR_SIZE = sys.getsizeof("")


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


@dataclass(slots=True)
class _Fixed:
    """One event, serialised once."""

    seq: int
    text: str
    size: int
    pin: str | None = None  # tool_call_id of a pending approval / question
    run_id: str | None = None


@dataclass(slots=True)
class _Snapshot:
    """Coalesced text chunks of one tool call's output or one message."""

    seq: int
    key: tuple[str, str]
    payload: dict[str, Any]  # the last chunk's event without its text
    chunks: deque[str] = field(default_factory=deque)
    chars: int = 0
    omitted: int = 0
    size: int = 0
    pin: None = None
    run_id: str | None = None

    def add(self, text: str, limit: int) -> None:
        self.chunks.append(text)
        self.chars += len(text)
        self.size += sys.getsizeof(text)
        while self.chars > limit and self.chunks:
            extra = self.chars - limit
            first = self.chunks[0]
            self.size -= sys.getsizeof(first)
            if len(first) <= extra:
                self.chunks.popleft()
                self.chars -= len(first)
                self.omitted += len(first)
            else:
                rest = first[extra:]
                self.chunks[0] = rest
                self.size += sys.getsizeof(rest)
                self.chars -= extra
                self.omitted += extra

    def render(self) -> str:
        payload = dict(self.payload)
        data = dict(payload.get("data") or {})
        data["text"] = "".join(self.chunks)
        data["snapshot"] = True
        data["omitted_chars"] = self.omitted
        payload["data"] = data
        return _dumps(payload)


class Subscription:
    """One open event stream: a queue of ``(seq, json)`` items, ``None`` at the end."""

    def __init__(self, limit: int) -> None:
        self.queue: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue()
        self.limit = limit
        self.pending = 0
        self.cut = False  # True when it was dropped for reading too slowly

    def _put(self, item: tuple[int, str], size: int) -> bool:
        if self.pending + size > self.limit:
            return False
        self.pending += size
        self.queue.put_nowait(item)
        return True

    def _end(self) -> None:
        # Drop what waits: a page that was too slow catches up from the replay log.
        while not self.queue.empty():
            self.queue.get_nowait()
        self.pending = 0
        self.queue.put_nowait(None)

    async def get(self) -> tuple[int, str] | None:
        item = await self.queue.get()
        if item is not None:
            self.pending -= sys.getsizeof(item[1])
        return item

    def get_nowait(self) -> tuple[int, str] | None:
        item = self.queue.get_nowait()
        if item is not None:
            self.pending -= sys.getsizeof(item[1])
        return item


class EventHub:
    """Fans events out to SSE subscribers and keeps the byte-bounded replay
    log (see the module docstring for the rules)."""

    def __init__(
        self,
        *,
        budget_bytes: int = DEFAULT_REPLAY_BUDGET,
        snapshot_chars: int = DEFAULT_SNAPSHOT_CHARS,
        max_event_bytes: int = DEFAULT_EVENT_BYTES,
        subscriber_bytes: int = DEFAULT_SUBSCRIBER_BYTES,
    ) -> None:
        if budget_bytes < 1024:
            raise ValueError(f"budget_bytes must be at least 1024, got {budget_bytes}")
        self.budget_bytes = budget_bytes
        self.snapshot_chars = snapshot_chars
        self.max_event_bytes = min(max_event_bytes, budget_bytes)
        self.subscriber_bytes = subscriber_bytes
        self._log: OrderedDict[int, _Fixed | _Snapshot] = OrderedDict()
        self._snapshots: dict[tuple[str, str], _Snapshot] = {}
        self._pins: dict[str, int] = {}  # tool_call_id -> seq of its pending request
        self._bytes = 0
        self._seq = 0
        self._evicted_upto = 0  # highest seq dropped for lack of room
        self._subscribers: set[Subscription] = set()
        self.closed = False

    # ------------------------------------------------------------ figures

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def replay_bytes(self) -> int:
        """Bytes of text the replay log holds now (always ≤ ``budget_bytes``
        unless pinned requests alone exceed it)."""
        return self._bytes

    @property
    def replay_events(self) -> int:
        return len(self._log)

    @property
    def evicted_upto(self) -> int:
        """The highest sequence number dropped from the log for lack of room (0: none)."""
        return self._evicted_upto

    # ------------------------------------------------------------ publish

    def publish(self, payload: dict[str, Any]) -> int:
        """Add one event (a JSON-ready dict); returns its sequence number."""
        self._seq += 1
        seq = self._seq
        text = _dumps(payload)
        if self._subscribers:
            item = (seq, text)
            size = sys.getsizeof(text)
            for sub in list(self._subscribers):
                if not sub._put(item, size):
                    sub.cut = True
                    self._subscribers.discard(sub)
                    sub._end()
        self._record(seq, payload, text)
        return seq

    def _record(self, seq: int, payload: dict[str, Any], text: str) -> None:
        t = payload.get("type")
        raw = payload.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        run_id = payload.get("run_id")
        call_id = str(data.get("tool_call_id")) if data.get("tool_call_id") is not None else None

        if t == "tool.output" and call_id is not None:
            self._coalesce(("out", call_id), seq, payload, str(data.get("text") or ""), run_id, move=True)
            return
        if t == "text.delta":
            self._coalesce(("delta", str(run_id)), seq, payload, str(data.get("text") or ""), run_id, move=True)
            return
        if t == "text.thought":
            key = ("thought", str(run_id))
            snap = self._snapshots.get(key)
            newest = next(reversed(self._log), None) if self._log else None
            if snap is not None and newest != snap.seq:
                del self._snapshots[key]  # something came between: start a new block
            self._coalesce(key, seq, payload, str(data.get("text") or ""), run_id, move=True)
            return

        # events that end what a coalesced entry stood for
        if t == "tool.completed" and call_id is not None:
            self._drop_snapshot(("out", call_id))
        elif t in ("text.end", "text.discarded"):
            self._drop_snapshot(("delta", str(run_id)))
        if t in _TERMINAL:
            # a message cut short (no text.end) stays as it was last seen; nothing extends it now
            self._snapshots.pop(("delta", str(run_id)), None)
            self._snapshots.pop(("thought", str(run_id)), None)
            for entry in self._log.values():
                if entry.pin is not None and entry.run_id == run_id:
                    self._pins.pop(entry.pin, None)
                    entry.pin = None
        elif t in ("permission.resolved", "ask_user.response", "plan.resolved") and call_id is not None:
            pinned = self._pins.pop(call_id, None)
            found = self._log.get(pinned) if pinned is not None else None
            if found is not None:
                found.pin = None

        pin = call_id if t in _PINNED_BY and call_id is not None else None
        size = sys.getsizeof(text)
        if pin is None and size > self.max_event_bytes:
            text = _shorten(payload, self.max_event_bytes)
            size = sys.getsizeof(text)
        entry = _Fixed(seq, text, size, pin=pin, run_id=run_id)
        self._log[seq] = entry
        self._bytes += size
        if pin is not None:
            self._pins[pin] = seq
        self._evict()

    def _coalesce(self, key: tuple[str, str], seq: int, payload: dict[str, Any], text: str,
                  run_id: str | None, *, move: bool) -> None:
        snap = self._snapshots.get(key)
        template = dict(payload)
        template["data"] = {k: v for k, v in (payload.get("data") or {}).items() if k != "text"}
        if snap is None:
            snap = _Snapshot(seq, key, template, run_id=run_id)
            snap.size = sys.getsizeof(_dumps(template))
            self._snapshots[key] = snap
            self._bytes += snap.size
        else:
            self._log.pop(snap.seq, None)
            snap.payload = template
            snap.seq = seq
        before = snap.size
        snap.add(text, self.snapshot_chars)
        self._bytes += snap.size - before
        self._log[seq] = snap
        self._evict()

    def _drop_snapshot(self, key: tuple[str, str]) -> None:
        snap = self._snapshots.pop(key, None)
        if snap is not None and self._log.pop(snap.seq, None) is not None:
            self._bytes -= snap.size

    def _evict(self) -> None:
        if self._bytes <= self.budget_bytes:
            return
        for seq in list(self._log):
            if self._bytes <= self.budget_bytes:
                break
            entry = self._log[seq]
            if entry.pin is not None:
                continue
            del self._log[seq]
            self._bytes -= entry.size
            if isinstance(entry, _Snapshot) and self._snapshots.get(entry.key) is entry:
                del self._snapshots[entry.key]
            self._evicted_upto = max(self._evicted_upto, seq)

    # ------------------------------------------------------------ subscribe

    def subscribe(self, since: int = 0) -> tuple[list[tuple[int, str]], Subscription]:
        """The logged events after ``since`` and a subscription receiving the
        next ones (``None`` when the hub closes or the page falls too far
        behind). Call :meth:`unsubscribe` when done."""
        backlog: list[tuple[int, str]] = []
        for seq, entry in self._log.items():
            if seq > since:
                backlog.append((seq, entry.render() if isinstance(entry, _Snapshot) else entry.text))
        sub = Subscription(self.subscriber_bytes)
        if self.closed:
            sub.queue.put_nowait(None)
        else:
            self._subscribers.add(sub)
        return backlog, sub

    def gap_after(self, since: int) -> bool:
        """True when events after ``since`` were dropped from the log for lack of room."""
        return self._evicted_upto > since

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)

    def close(self) -> None:
        """End every open stream (called before the server shuts down)."""
        self.closed = True
        for sub in list(self._subscribers):
            sub.queue.put_nowait(None)
        self._subscribers.clear()


def _shorten(payload: dict[str, Any], limit: int) -> str:
    """``payload`` serialised under ``limit`` bytes for the replay log: long
    strings in ``data`` keep their head and tail, long lists their first items;
    the event says so (``data.replay_truncated``)."""
    cap = 16 * 1024
    while cap >= 64:
        data = _clip(payload.get("data"), cap)
        if isinstance(data, dict):
            data["replay_truncated"] = True
        text = _dumps({**payload, "data": data})
        if sys.getsizeof(text) <= limit:
            return text
        cap //= 4
    raw = payload.get("data")
    fields: dict[str, Any] = raw if isinstance(raw, dict) else {}
    keep: dict[str, Any] = {k: fields[k] for k in ("tool_call_id", "tool_name", "is_error") if k in fields}
    keep["replay_truncated"] = True
    keep["replay_note"] = "this event was too large to keep for replay"
    return _dumps({**payload, "data": keep})


def _clip(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        if len(value) <= cap:
            return value
        head, tail = value[: cap * 3 // 4], value[-(cap // 4):]
        return f"{head}\n… [{len(value) - len(head) - len(tail):,} characters not kept for replay] …\n{tail}"
    if isinstance(value, dict):
        return {k: _clip(v, cap) for k, v in value.items()}
    if isinstance(value, list):
        items = [_clip(v, cap) for v in value[: max(1, cap // 64)]]
        if len(value) > len(items):
            items.append(f"… [{len(value) - len(items):,} more items not kept for replay]")
        return items
    return value
