"""Constrained tool calls: the reply must be either text or one valid call
of an exposed tool, enforced by the server while it samples.

:func:`reply_schema` builds one JSON Schema from the exposed tools' input
schemas: ``anyOf`` a JSON string (the answer as text) or, per tool, an
object ``{"name": <that tool>, "arguments": <its input schema>}``. The
server compiles it into a grammar (llama.cpp's ``json_schema``; vLLM,
Ollama and LM Studio through ``response_format`` ``json_schema``, which they
turn into their guided decoding / ``format``), so even a 135M model can
only write calls Smoke can run. The tools are described in the system prompt
(:func:`constrained_prompt`), and :class:`ConstrainedReply` turns the
reply back into text and calls as it streams.
"""

from __future__ import annotations

import json
from typing import Any

from smoke_core.providers import ToolCallRequest

from ._inline import InlineToolParser, _new_id
from ._textcalls import CallChecker

_SKIP = ("$defs", "definitions", "$schema", "$id", "title")


def _hoist(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` moved into ``defs`` under ``prefix`` (refs rewritten)."""
    local = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    rename = {}
    for name in local:
        rename[f"#/$defs/{name}"] = rename[f"#/definitions/{name}"] = f"#/$defs/{prefix}{name}"

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items() if k not in ("$defs", "definitions")}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref in rename:
                out["$ref"] = rename[ref]
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for name, sub in local.items():
        defs[f"{prefix}{name}"] = walk(sub)
    return {k: walk(v) for k, v in schema.items() if k not in _SKIP}


def reply_schema(tools: list[dict[str, Any]], *, text: bool = True) -> dict[str, Any]:
    """The JSON Schema of a reply: a string (``text``) or one call of one of ``tools``."""
    defs: dict[str, Any] = {}
    branches: list[dict[str, Any]] = [{"type": "string"}] if text else []
    for i, tool in enumerate(tools):
        arguments = _hoist(tool.get("input_schema") or {"type": "object", "properties": {}}, f"t{i}_", defs)
        arguments.setdefault("type", "object")
        if arguments.get("type") == "object":
            arguments.setdefault("properties", {})
            arguments.setdefault("additionalProperties", False)  # a small model may not invent arguments
        branches.append({
            "type": "object",
            "properties": {"name": {"const": tool["name"]}, "arguments": arguments},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def constrained_prompt(tools: list[dict[str, Any]], *, json_text: bool = False) -> str:
    """The system-prompt section that offers ``tools`` when the reply is
    constrained (``json_text``: text must be a JSON string, as with
    :func:`reply_schema`; else plain text, as with the grammar)."""
    call = '{"name": "<tool name>", "arguments": {<the tool\'s arguments>}}'
    how = (f"Reply with JSON only: either one tool call, an object {call}, or, when you need no tool, a JSON string "
           f'holding your answer to the user, such as "The file says hello.".' if json_text else
           f"To call a tool, reply with only a JSON object {call}. When you need no tool, reply in plain text.")
    lines = [
        "# Tools",
        "",
        f"You can call the tools below, one call per reply. {how} The result of each call comes back in the next message.",
        "",
        "<tools>",
    ]
    for tool in tools:
        spec = {"name": tool["name"], "description": tool.get("description") or "",
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}}}
        lines.append(json.dumps(spec, ensure_ascii=False, separators=(", ", ": ")))
    lines.append("</tools>")
    return "\n".join(lines)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _StringDecoder:
    """A JSON string's characters, decoded as they arrive (the opening quote already read)."""

    def __init__(self) -> None:
        self.pending = ""
        self.closed = False

    def feed(self, text: str) -> str:
        s = self.pending + text
        out: list[str] = []
        i = 0
        n = len(s)
        while i < n:
            ch = s[i]
            if ch == '"':
                self.closed = True
                i = n
                break
            if ch != "\\":
                j = i
                while j < n and s[j] not in '"\\':
                    j += 1
                out.append(s[i:j])
                i = j
                continue
            if i + 1 >= n:
                break
            kind = s[i + 1]
            if kind != "u":
                out.append(_ESCAPES.get(kind, kind))
                i += 2
                continue
            if i + 6 > n:
                break
            try:
                code = int(s[i + 2 : i + 6], 16)
            except ValueError:
                out.append(s[i : i + 6])
                i += 6
                continue
            if 0xD800 <= code < 0xDC00:  # a surrogate pair: wait for its second half
                if i + 12 > n:
                    break
                if s[i + 6 : i + 8] == "\\u":
                    try:
                        low = int(s[i + 8 : i + 12], 16)
                    except ValueError:
                        low = 0
                    if 0xDC00 <= low < 0xE000:
                        out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                        i += 12
                        continue
            out.append(chr(code))
            i += 6
        self.pending = "" if self.closed else s[i:]
        return "".join(out)


class ConstrainedReply:
    """The streamed text of a constrained reply → the text a person sees and the call.

    With ``json_text`` (the schema of :func:`reply_schema`), a reply that
    opens with ``"`` is text: its characters stream as they are decoded. A
    reply that opens with ``{`` or ``[`` is held until the end and
    read as a call (a call of an exposed tool that does not validate still
    goes to the loop, which tells the model what is wrong). Anything else
    means the server did not apply the constraint: the reply is read as an
    inline reply (every text form of a call)."""

    def __init__(self, tools: list[dict[str, Any]], *, json_text: bool = False) -> None:
        self.tools = tools
        self.json_text = json_text
        self.checker = CallChecker(tools)
        self._state = "start"
        self._held = ""
        self._string = _StringDecoder()
        self._inline: InlineToolParser | None = None

    @property
    def pending_chars(self) -> int:
        return len(self._held) if self._state == "json" else 0

    def feed(self, text: str) -> str:
        if self._state == "start":
            self._held += text
            stripped = self._held.lstrip()
            if not stripped:
                return ""
            text, self._held = stripped, ""
            if text[0] == '"' and self.json_text:
                self._state, text = "string", text[1:]
            elif text[0] in "{[":
                self._state = "json"
            else:
                self._state = "inline"
                self._inline = InlineToolParser(tools=self.tools)
        if self._state == "string":
            return "" if self._string.closed else self._string.feed(text)
        if self._state == "json":
            self._held += text
            return ""
        assert self._inline is not None
        return self._inline.feed(text)

    def finish(self) -> tuple[str, list[ToolCallRequest]]:
        if self._state == "inline":
            assert self._inline is not None
            return self._inline.finish()
        if self._state != "json":
            return "", []
        body = self._held.strip()
        calls = self.checker.calls_in_text(body)
        if calls is not None:
            return "", [ToolCallRequest(id=_new_id(), name=n, arguments=a) for n, a in calls[:1]]
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("name") in self.checker.schemas:
            arguments = data.get("arguments")
            raw = arguments if isinstance(arguments, dict) else json.dumps(arguments)
            return "", [ToolCallRequest(id=_new_id(), name=data["name"], arguments=raw)]
        return self._held, []  # JSON that is no call: the text as it came
