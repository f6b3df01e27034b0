"""Neutral history ⇄ Anthropic Messages wire format. Pure functions, no I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from smoke_core.providers import (
    TRANSPORT_SETTINGS,
    Finished,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)

DEFAULT_MAX_TOKENS = 8192

#: Settings the adapter consumes itself; every other setting goes into the body as it is.
ADAPTER_SETTINGS = TRANSPORT_SETTINGS | {"max_tokens"}

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


# ---------------------------------------------------------------- request


def _image(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("url"):
        return {"type": "image", "source": {"type": "url", "url": block["url"]}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.get("mime_type") or "image/png", "data": block.get("data", "")},
    }


def _user_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text" and b.get("text"):
            out.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "image":
            out.append(_image(b))
    return out


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    content = block.get("content") or []
    wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": block["tool_call_id"]}
    if content and all(c.get("type") == "text" for c in content):
        wire["content"] = "\n".join(c.get("text", "") for c in content)
    elif content:
        wire["content"] = _user_blocks(content)
    wire["is_error"] = bool(block.get("is_error"))
    return wire


def _assistant_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "thinking":
            # Only signed thinking can be sent back; unsigned text came from another provider.
            if b.get("signature"):
                out.append({"type": "thinking", "thinking": b.get("text", ""), "signature": b["signature"]})
        elif kind == "text" and b.get("text"):
            out.append({"type": "text", "text": b["text"]})
        elif kind == "tool_call":
            out.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b.get("input") or {}})
    return out


def to_wire_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Neutral messages → Messages API ``messages``: tool results become user
    turns, consecutive turns of one role are merged, empty turns dropped."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        role = message["role"]
        blocks = message.get("content") or []
        if role == "assistant":
            wire_role, content = "assistant", _assistant_blocks(blocks)
        elif role == "tool":
            wire_role = "user"
            content = [_tool_result(b) for b in blocks if b.get("type") == "tool_result"]
        else:
            wire_role, content = "user", _user_blocks(blocks)
        if not content:
            continue
        if out and out[-1]["role"] == wire_role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": wire_role, "content": content})
    return out


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": t["name"],
            "description": t.get("description") or "",
            "input_schema": t.get("input_schema") or {"type": "object", "properties": {}},
        }
        for t in tools
    ]


def build_body(request: ModelRequest, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": int(settings.get("max_tokens") or DEFAULT_MAX_TOKENS),
        "messages": to_wire_messages(request),
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = to_wire_tools(request.tools)
    body["stream"] = stream
    for key, value in settings.items():
        if key not in ADAPTER_SETTINGS and value is not None:
            body[key] = value
    extra = settings.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


#: the API accepts at most this many ``cache_control`` breakpoints per request
MAX_CACHE_BREAKPOINTS = 4
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def add_cache_breakpoints(body: dict[str, Any], *, ttl: str | None = None) -> dict[str, Any]:
    """Mark the prompt-cache breakpoints (at most 4): the last tool, the system
    prompt, the last block of the conversation (its moving end) and the last
    block of the user turn before it, so the next request, which appends to
    this one, reads everything up to there from the cache. Blocks that
    already carry ``cache_control`` (set by the caller) count and are kept."""
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl:
        marker["ttl"] = ttl
    used = _count_breakpoints(body)
    targets: list[dict[str, Any]] = []
    tools = body.get("tools") or []
    if tools and isinstance(tools[-1], dict):
        targets.append(tools[-1])
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system}]
    if isinstance(body.get("system"), list) and body["system"]:
        targets.append(body["system"][-1])
    messages = body.get("messages") or []
    last = _last_cacheable(messages[-1]) if messages else None
    if last is not None:
        targets.append(last)
    earlier_users = [m for m in messages[:-1] if m.get("role") == "user"]
    previous = _last_cacheable(earlier_users[-1]) if earlier_users else None
    if previous is not None:
        targets.append(previous)
    for block in targets:
        if used >= MAX_CACHE_BREAKPOINTS:
            break
        if "cache_control" not in block:
            block["cache_control"] = dict(marker)
            used += 1
    return body


def _last_cacheable(message: dict[str, Any]) -> dict[str, Any] | None:
    content = message.get("content")
    if not isinstance(content, list):
        return None
    for block in reversed(content):
        if isinstance(block, dict) and block.get("type") not in _UNCACHEABLE and not (
            block.get("type") == "text" and not block.get("text")
        ):
            return block
    return None


def _count_breakpoints(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_count_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_breakpoints(v) for v in value)
    return 0


# ---------------------------------------------------------------- response


def usage_from(data: dict[str, Any] | None, base: Usage | None = None) -> Usage:
    """Anthropic usage → neutral usage. Neutral ``input_tokens`` counts every
    prompt token (uncached + cache reads + cache writes), like OpenAI's
    ``prompt_tokens``; the cache fields say how many of them were cached."""
    usage = base if base is not None else Usage()
    data = data or {}
    fresh = data.get("input_tokens")
    read = data.get("cache_read_input_tokens")
    write = data.get("cache_creation_input_tokens")
    if read is not None:
        usage.cache_read_tokens = int(read or 0)
    if write is not None:
        usage.cache_write_tokens = int(write or 0)
    if fresh is not None or read is not None or write is not None:
        uncached = int(fresh if fresh is not None else usage.input_tokens - usage.cache_read_tokens
                       - usage.cache_write_tokens)
        usage.input_tokens = uncached + usage.cache_read_tokens + usage.cache_write_tokens
    if data.get("output_tokens") is not None:
        usage.output_tokens = int(data["output_tokens"] or 0)
    return usage


def stop_reason(raw: str | None, has_calls: bool) -> str:
    if raw is None:
        return "tool_calls" if has_calls else "stop"
    return STOP_REASONS.get(raw, raw)


def events_from_message(data: dict[str, Any]) -> list[ProviderEvent]:
    """A non-streamed ``message`` → neutral events."""
    events: list[ProviderEvent] = []
    calls: list[ToolCallRequest] = []
    for block in data.get("content") or []:
        kind = block.get("type")
        if kind == "thinking":
            events.append(ThoughtDelta(block.get("thinking", ""), signature=block.get("signature") or None))
        elif kind == "text" and block.get("text"):
            events.append(TextDelta(block["text"]))
        elif kind == "tool_use":
            calls.append(ToolCallRequest(id=block["id"], name=block["name"], arguments=block.get("input") or {}))
    events.extend(calls)
    events.append(UsageReport(usage_from(data.get("usage"))))
    events.append(Finished(stop_reason(data.get("stop_reason"), bool(calls))))
    return events


@dataclass
class _ToolBlock:
    id: str
    name: str
    start_input: dict[str, Any]
    parts: list[str] = field(default_factory=list)

    def arguments(self) -> str:
        raw = "".join(self.parts)
        return raw if raw.strip() else json.dumps(self.start_input)


@dataclass
class StreamAssembler:
    """Folds Messages API stream events into neutral events.

    Text and thinking deltas come out at once; tool calls (assembled from
    ``input_json_delta`` fragments), usage and the stop reason come out of
    :meth:`finish`, once the stream is complete."""

    tools: dict[int, _ToolBlock] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    raw_stop: str | None = None
    started: bool = False
    stopped: bool = False
    #: characters of tool input received so far (progress for the no-progress timeout)
    argument_chars: int = 0

    def feed(self, kind: str, data: dict[str, Any]) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        if kind == "message_start":
            self.started = True
            self.usage = usage_from((data.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            btype = block.get("type")
            if btype == "tool_use":
                self.tools[int(data.get("index", len(self.tools)))] = _ToolBlock(
                    block.get("id", ""), block.get("name", ""), block.get("input") or {}
                )
            elif btype == "text" and block.get("text"):
                out.append(TextDelta(block["text"]))
            elif btype == "thinking" and (block.get("thinking") or block.get("signature")):
                out.append(ThoughtDelta(block.get("thinking", ""), signature=block.get("signature") or None))
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta" and delta.get("text"):
                out.append(TextDelta(delta["text"]))
            elif dtype == "thinking_delta" and delta.get("thinking"):
                out.append(ThoughtDelta(delta["thinking"]))
            elif dtype == "signature_delta" and delta.get("signature"):
                out.append(ThoughtDelta("", signature=delta["signature"]))
            elif dtype == "input_json_delta":
                tool = self.tools.get(int(data.get("index", -1)))
                if tool is not None:
                    part = delta.get("partial_json") or ""
                    tool.parts.append(part)
                    self.argument_chars += len(part)
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self.raw_stop = delta["stop_reason"]
            if data.get("usage"):
                self.usage = usage_from(data["usage"], self.usage)
        elif kind == "message_stop":
            self.stopped = True
        return out

    @property
    def complete(self) -> bool:
        return self.stopped or self.raw_stop is not None

    def finish(self) -> list[ProviderEvent]:
        out: list[ProviderEvent] = [
            ToolCallRequest(id=t.id, name=t.name, arguments=t.arguments())
            for _, t in sorted(self.tools.items())
        ]
        out.append(UsageReport(self.usage))
        out.append(Finished(stop_reason(self.raw_stop, bool(self.tools))))
        return out
