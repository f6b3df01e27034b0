"""Inline tool calls, the request side: the tools described in the system
prompt, past calls and their results as text (see :mod:`._inline` for the
reply side)."""

from __future__ import annotations

import json
from typing import Any

from smoke_core.providers import ModelRequest


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system-prompt section that offers ``tools`` (Hermes / Qwen 2.5 style)."""
    lines = [
        "# Tools",
        "",
        "You may call one or more of the tools below. To call a tool, write a <tool_call> block holding one JSON "
        'object with the tool\'s "name" and its "arguments", then end your reply and wait for the results:',
        "",
        "<tool_call>",
        '{"name": "tool_name", "arguments": {"argument": "value"}}',
        "</tool_call>",
        "",
        "Write one <tool_call> block per call; the arguments must match the tool's JSON schema. The results come "
        "back in <tool_response> blocks. When you need no tool, answer in plain text.",
        "",
        "<tools>",
    ]
    for tool in tools:
        spec = {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description") or "",
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        lines.append(json.dumps(spec, ensure_ascii=False, separators=(", ", ": ")))
    lines.append("</tools>")
    return "\n".join(lines)


def call_text(name: str, arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def _result_blocks(result: dict[str, Any], told: str | None = None) -> list[dict[str, Any]]:
    texts = [b.get("text", "") for b in result.get("content") or [] if b.get("type") == "text"]
    images = [b for b in result.get("content") or [] if b.get("type") == "image"]
    body = "\n".join(texts)
    if result.get("is_error"):
        body = f"Error: {body}"
    # told: the call in words before its result, plainly (a small model echoes <tool_response> tags)
    text = f"{told}It {'failed' if result.get('is_error') else 'returned'}:\n{body}\n" if told is not None else \
        f"<tool_response>\n{body}\n</tool_response>"
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    blocks.extend(images)
    return blocks


def inline_request(request: ModelRequest, *, drop_settings: frozenset[str] = frozenset(),
                   prompt: Any = None, describe_calls: bool = False) -> ModelRequest:
    """``request`` for a server without native tools: no ``tools``, the tools
    described in the system prompt (``prompt(tools)``, default
    :func:`tools_prompt`), tool calls and results as text, and consecutive
    user turns merged (many chat templates require alternation).

    ``describe_calls``: a call is not shown as the assistant's own text but
    told with its result ("You called read_file {...}. It returned: ...") —
    a small model shown its last call verbatim tends to write it again."""
    prompt = prompt or tools_prompt
    called: dict[str, str] = {}
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append({"type": "text", "text": "\n\n"})
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})

    for message in request.messages:
        role = message["role"]
        blocks = message.get("content") or []
        if role == "assistant":
            parts: list[str] = []
            for b in blocks:
                if b.get("type") == "text" and b.get("text"):
                    parts.append(b["text"])
                elif b.get("type") == "tool_call":
                    if describe_calls:
                        called[b.get("id", "")] = (f"You called {b['name']} "
                                                   f"{json.dumps(b.get('input') or {}, ensure_ascii=False)}. ")
                    else:
                        parts.append(call_text(b["name"], b.get("input") or {}))
            text = "\n".join(p.strip("\n") if p.startswith("<tool_call>") else p for p in parts)
            add("assistant", [{"type": "text", "text": text}] if text else [])
        elif role == "tool":
            out: list[dict[str, Any]] = []
            for b in blocks:
                if b.get("type") == "tool_result":
                    if out:
                        out.append({"type": "text", "text": "\n"})
                    told = called.pop(b.get("tool_call_id", ""), None)
                    out.extend(_result_blocks(b, told))
            add("user", out)
        else:
            add("user", [dict(b) for b in blocks])
    system = request.system or ""
    if request.tools:
        system = f"{system}\n\n{prompt(request.tools)}" if system else prompt(request.tools)
    settings = {k: v for k, v in (request.settings or {}).items() if k not in drop_settings}
    return ModelRequest(model=request.model, messages=messages, tools=[], system=system or None,  # type: ignore[arg-type]
                        settings=settings, user_id=request.user_id)


