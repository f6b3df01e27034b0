"""Neutral history ⇄ Chat Completions wire format. Pure functions, no I/O."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from smoke_core.providers import (
    TRANSPORT_SETTINGS,
    Finished,
    ModelRequest,
    Progress,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)

#: Settings the adapter consumes itself; every other setting goes into the body as it is.
ADAPTER_SETTINGS = TRANSPORT_SETTINGS

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
    "eos": "stop",  # some servers (older vLLM/TGI) say eos
}


# ---------------------------------------------------------------- request


def _data_url(block: dict[str, Any]) -> str:
    if block.get("url"):
        return str(block["url"])
    return f"data:{block.get('mime_type') or 'image/png'};base64,{block.get('data', '')}"


def _user_content(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if all(b.get("type") == "text" for b in blocks):
        return "".join(b.get("text", "") for b in blocks)
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if b.get("type") == "text":
            parts.append({"type": "text", "text": b.get("text", "")})
        elif b.get("type") == "image":
            parts.append({"type": "image_url", "image_url": {"url": _data_url(b)}})
    return parts


def _tool_result_text(result: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for b in result.get("content") or []:
        if b.get("type") == "text":
            texts.append(b.get("text", ""))
        elif b.get("type") == "image":
            images.append(b)
    if images:
        texts.append(f"[{len(images)} image(s) from this tool result follow in the next user message]")
    return "\n".join(texts), images


def to_wire_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Neutral messages (+ system prompt) → Chat Completions ``messages``.

    Thinking blocks are dropped; images in tool results travel in a user
    message after the tool messages (tool messages only carry text)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        role = message["role"]
        blocks = message.get("content") or []
        if role == "user":
            out.append({"role": "user", "content": _user_content(blocks)})
        elif role == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {}, separators=(",", ":"))},
                }
                for b in blocks
                if b.get("type") == "tool_call"
            ]
            wire: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                wire["tool_calls"] = calls
            elif not text:
                continue  # an empty assistant turn carries nothing
            out.append(wire)
        elif role == "tool":
            images: list[dict[str, Any]] = []
            for b in blocks:
                if b.get("type") != "tool_result":
                    continue
                text, imgs = _tool_result_text(b)
                images.extend(imgs)
                out.append({"role": "tool", "tool_call_id": b["tool_call_id"], "content": text})
            if images:
                parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool call(s) above:"}]
                parts.extend({"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images)
                out.append({"role": "user", "content": parts})
    return out


def to_wire_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": t.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def build_body(request: ModelRequest, *, model: str, stream: bool, settings: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": to_wire_messages(request)}
    if request.tools:
        body["tools"] = to_wire_tools(request.tools)
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    for key, value in settings.items():
        if key not in ADAPTER_SETTINGS and value is not None:
            body[key] = value
    extra = settings.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


# ---------------------------------------------------------------- response


def usage_from(data: dict[str, Any] | None) -> Usage | None:
    if not isinstance(data, dict):
        return None
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    # DeepSeek reports cache hits beside the usage, not in prompt_tokens_details
    cached = prompt_details.get("cached_tokens") or data.get("prompt_cache_hit_tokens") or 0
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        cache_read_tokens=int(cached),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


def finish_reason(raw: str | None, has_calls: bool) -> str:
    if raw is None:
        return "tool_calls" if has_calls else "stop"
    return FINISH_REASONS.get(raw, raw)


def _reasoning(obj: dict[str, Any]) -> str | None:
    value = obj.get("reasoning_content")
    if not value:
        value = obj.get("reasoning")
    return value if isinstance(value, str) and value else None


def events_from_completion(data: dict[str, Any]) -> list[ProviderEvent]:
    """A non-streamed ``chat.completion`` → neutral events."""
    events: list[ProviderEvent] = []
    choices = data.get("choices") or []
    choice = choices[0] if choices else {}
    message = choice.get("message") or {}
    reasoning = _reasoning(message)
    if reasoning:
        events.append(ThoughtDelta(reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        events.append(TextDelta(content))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        events.append(TextDelta(refusal))
    calls = message.get("tool_calls") or []
    for call in calls:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        events.append(
            ToolCallRequest(
                id=call.get("id") or _new_call_id(),
                name=fn.get("name") or "",
                arguments=args if isinstance(args, (str, dict)) else "",
            )
        )
    usage = usage_from(data.get("usage"))
    if usage is not None:
        events.append(UsageReport(usage))
    events.append(Finished(finish_reason(choice.get("finish_reason"), bool(calls))))
    return events


def _new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


@dataclass
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    """Folds ``chat.completion.chunk`` objects into neutral events.

    Text and reasoning deltas come out at once; tool calls (assembled by
    ``index`` from their argument fragments), usage and the finish reason come
    out of :meth:`finish`, once the stream is complete."""

    calls: list[_PendingCall] = field(default_factory=list)
    by_index: dict[int, int] = field(default_factory=dict)
    usage: Usage | None = None
    raw_finish: str | None = None
    chunks: int = 0
    #: characters of tool-call arguments received so far (progress for the no-progress timeout)
    argument_chars: int = 0
    #: prompt tokens the server has read, as its ``prompt_progress`` said (llama.cpp's ``return_progress``)
    prompt_processed: int = -1

    def feed(self, chunk: dict[str, Any]) -> list[ProviderEvent]:
        self.chunks += 1
        out: list[ProviderEvent] = []
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")
        parsed = usage_from(usage)
        if parsed is not None:
            self.usage = parsed
        progress = chunk.get("prompt_progress")
        if isinstance(progress, dict) and isinstance(progress.get("processed"), int):
            processed = progress["processed"]
            total = progress.get("total")
            if processed != self.prompt_processed:
                self.prompt_processed = processed
                out.append(Progress("prompt", processed, total if isinstance(total, int) else None))
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = _reasoning(delta)
            if reasoning:
                out.append(ThoughtDelta(reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                out.append(TextDelta(content))
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                out.append(TextDelta(refusal))
            for frag in delta.get("tool_calls") or []:
                self._add_fragment(frag)
            if choice.get("finish_reason"):
                self.raw_finish = choice["finish_reason"]
        return out

    def _add_fragment(self, frag: dict[str, Any]) -> None:
        index = frag.get("index")
        call_id = frag.get("id")
        slot: int | None = None
        if isinstance(index, int):
            slot = self.by_index.get(index)
        elif call_id:
            slot = next((i for i, c in enumerate(self.calls) if c.id == call_id), None)
        elif self.calls:
            slot = len(self.calls) - 1
        if slot is None:
            slot = len(self.calls)
            self.calls.append(_PendingCall())
            if isinstance(index, int):
                self.by_index[index] = slot
        pending = self.calls[slot]
        if call_id and not pending.id:
            pending.id = call_id
        fn = frag.get("function") or {}
        if fn.get("name"):
            pending.name = pending.name or fn["name"]
        args = fn.get("arguments")
        if isinstance(args, dict):
            args = json.dumps(args)
        if isinstance(args, str):
            pending.arguments.append(args)
            self.argument_chars += len(args)

    @property
    def pending_call_name(self) -> str | None:
        """The name of the tool call whose arguments are streaming, when known."""
        return self.calls[-1].name or None if self.calls else None

    @property
    def complete(self) -> bool:
        return self.raw_finish is not None

    def finish(self) -> list[ProviderEvent]:
        out: list[ProviderEvent] = [
            ToolCallRequest(id=c.id or _new_call_id(), name=c.name, arguments="".join(c.arguments))
            for c in self.calls
        ]
        if self.usage is not None:
            out.append(UsageReport(self.usage))
        out.append(Finished(finish_reason(self.raw_finish, bool(self.calls))))
        return out
