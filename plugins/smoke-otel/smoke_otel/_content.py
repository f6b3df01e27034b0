"""Message content as the GenAI conventions record it (opt-in): Smoke's
neutral messages turned into the ``gen_ai.input.messages`` /
``gen_ai.output.messages`` / ``gen_ai.system_instructions`` JSON, after
secret redaction. Nothing here runs unless content capture is on."""

from __future__ import annotations

import json
import os
from typing import Any

from smoke_core.secrets import Redactor

#: the environment variable the GenAI instrumentations share
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ON = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
_OFF = frozenset({"", "false", "0", "no", "off", "none", "no_content", "event_only"})


def capture_from_env(environ: dict[str, str] | None = None) -> tuple[bool, str | None]:
    """``(capture, problem)``: whether the environment turns content capture
    on, and a message when the variable holds a value nobody understands
    (capture then stays off)."""
    raw = (os.environ if environ is None else environ).get(CAPTURE_ENV)
    if raw is None:
        return False, None
    value = raw.strip().lower()
    if value in _ON:
        return True, None
    if value in _OFF:
        return False, None
    return False, (
        f"{CAPTURE_ENV}={raw!r} is not understood, so message content is not recorded; "
        f"use true or false"
    )


def _text(block: dict[str, Any]) -> str:
    return str(block.get("text", ""))


def _part(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": _text(block)}
    if kind == "thinking":
        return {"type": "reasoning", "content": _text(block)}
    if kind == "image":
        data = block.get("data") or ""
        # the picture itself is not recorded: base64 bodies would swamp the backend
        return {"type": "blob", "modality": "image", "mime_type": block.get("mime_type"),
                "content": f"[{len(data) * 3 // 4} bytes not recorded]"}
    if kind == "tool_call":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                "arguments": block.get("input")}
    if kind == "tool_result":
        text = "\n".join(_text(c) for c in block.get("content") or [] if c.get("type") == "text")
        return {"type": "tool_call_response", "id": block.get("tool_call_id"), "response": text}
    return {"type": str(kind), "content": json.dumps(block, default=str)[:2000]}


def input_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        content = message.get("content")
        parts = [{"type": "text", "content": content}] if isinstance(content, str) else [
            _part(b) for b in content or []
        ]
        out.append({"role": message.get("role"), "parts": parts})
    return out


def output_messages(response: dict[str, Any] | None, finish_reason: str | None) -> list[dict[str, Any]]:
    if not response:
        return []
    parts = [_part(b) for b in response.get("content") or []]
    if finish_reason is None:
        reason = "tool_call" if any(p["type"] == "tool_call" for p in parts) else "stop"
    else:
        reason = "tool_call" if finish_reason == "tool_calls" else finish_reason
    return [{"role": "assistant", "parts": parts, "finish_reason": reason}]


def tool_definitions(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools the model is offered, as ``gen_ai.tool.definitions`` records them."""
    return [{"type": "function", "name": t.get("name"), "description": t.get("description"),
             "parameters": t.get("input_schema")} for t in tools]


def system_instructions(system: str | None) -> list[dict[str, Any]]:
    return [{"type": "text", "content": system}] if system else []


def dump(value: Any, redactor: Redactor) -> str:
    """JSON text of ``value`` with every secret the redactor knows masked."""
    return json.dumps(redactor.redact_obj(value), ensure_ascii=False, default=str)
