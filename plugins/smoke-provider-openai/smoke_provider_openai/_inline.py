"""Inline tool calls: tools described in the system prompt, calls parsed out of the text.

For models served without native tool calling (many local models behind
Ollama, llama.cpp, vLLM without a tool parser, older fine-tunes). Pure
functions and a streaming state machine; no I/O.

- :func:`inline_request` rewrites a neutral request: the tools go into the
  system prompt (the Hermes / Qwen 2.5 ``<tools>`` block and ``<tool_call>``
  convention most open models were trained on), past tool calls become
  ``<tool_call>`` text, tool results become ``<tool_response>`` user text.
- :class:`InlineToolParser` reads the reply's text as it streams and takes
  out the calls, in any of these forms:

  - Hermes / Qwen 2.5: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``
    (several per reply);
  - Qwen3-Coder XML: ``<tool_call><function=NAME><parameter=P>value</parameter>
    </function></tool_call>`` (values typed by the tool's schema);
  - Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": ...}, ...]`` and
    ``[TOOL_CALLS]name[ARGS]{...}``;
  - Llama 3: ``<|python_tag|>{"name": ..., "parameters": ...}`` (several
    separated by ``;``);
  - a fenced ```` ```json ```` block holding ``{"name", "arguments"}`` for a tool
    that exists (any other fenced JSON stays text);
  - bare JSON: a ``{"name", "arguments"}`` object or a list of them at the
    start of a line, as small models write calls (Qwen2.5-Coder-0.5B does,
    even with native tools offered).

  Bare and fenced JSON are calls only when they name an exposed tool and
  their arguments validate (:mod:`smoke_provider_openai._textcalls`); so is
  every form with ``strict=True`` (native mode: the text of a model that was
  offered tools natively is read too, and nothing that is not a valid call
  of an exposed tool is taken from it). The same call twice in one reply
  runs once.

  Text around the calls streams as text; a marker split across deltas is
  held back until it is whole. A call whose arguments cannot be read but
  whose tool can be named goes to the loop with the raw arguments (the model
  gets ``tool_invalid_input`` for that call); a call that names no tool
  raises ``tool_invalid_input`` with the failed generation, so the model is
  told and asked again.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from smoke_core.providers import AgentError, ToolCallRequest

from ._inline_prompt import call_text, inline_request, tools_prompt
from ._textcalls import CallChecker

__all__ = ["MARKERS", "InlineToolParser", "JsonScanner", "call_text", "inline_request", "tools_prompt"]

#: start marker → the form it opens
MARKERS: dict[str, str] = {
    "<tool_call>": "hermes",
    "[TOOL_CALLS]": "mistral",
    "<|python_tag|>": "llama",
    "```json": "fence",
}
_LLAMA_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")
_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"([^"\\]+)"')
_ARGS_IN_JSON = re.compile(r'"(?:arguments|parameters)"\s*:\s*')
_XML_FUNCTION = re.compile(r"<function=([^>\s]+)\s*>")
#: where bare JSON may start: a { or [ with nothing but spaces before it on its line
_BARE_START = re.compile(r"(?m)^[ \t]*([\[{])")
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.S)

# ---------------------------------------------------------------- the reply


class JsonScanner:
    """Finds where one JSON object or array ends in text that arrives piecewise."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.started = False

    def feed(self, text: str) -> int | None:
        """The index just after the value's end in ``text``, or None (not ended yet)."""
        for i, ch in enumerate(text):
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif ch == "\\":
                    self.escape = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
                self.started = True
            elif ch in "}]":
                self.depth -= 1
                if self.started and self.depth <= 0:
                    return i + 1
        return None


def _new_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _coerce(value: str, schema: dict[str, Any] | None) -> Any:
    """A Qwen3-Coder ``<parameter>`` value, typed by the property's schema."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    kinds = (schema or {}).get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if not kinds and schema:
        kinds = [s.get("type") for s in schema.get("anyOf", schema.get("oneOf", [])) if isinstance(s, dict)]
    if not kinds or "string" in kinds:
        return value
    text = value.strip()
    if text.lower() in ("null", "none") and "null" in kinds:
        return None
    if "boolean" in kinds and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "integer" in kinds:
        try:
            return int(text)
        except ValueError:
            pass
    if "number" in kinds:
        try:
            number = float(text)
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        except ValueError:
            pass
    if "object" in kinds or "array" in kinds:
        try:
            return json.loads(text)
        except ValueError:
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError):
                pass
    return value


@dataclass
class InlineToolParser:
    """Streaming state machine: :meth:`feed` the reply's text deltas, get back
    the text to show; :meth:`finish` at the end gives the tool calls.

    ``strict``: every form is a call only when it names an exposed tool with
    valid arguments, anything else stays text, and nothing raises (native
    mode reads the text of a model offered tools natively). ``bare``: also
    read bare JSON calls at the start of a line."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    #: call texts that named no tool (reported by :meth:`finish`)
    failed: list[str] = field(default_factory=list)
    strict: bool = False
    bare: bool = True
    _buf: str = ""
    _form: str | None = None
    _marker: str = ""
    _call: str = ""
    _scanner: JsonScanner | None = None
    _searched: int = 0
    _out: list[str] = field(default_factory=list)
    #: nothing but whitespace was shown since the last line break (bare JSON may start here)
    _line_blank: bool = True
    #: the reply wrote a call it had already written: a small model looping on its call (the
    #: provider stops reading there instead of waiting for max_tokens)
    repeated: bool = False

    def __post_init__(self) -> None:
        self.checker = CallChecker(self.tools)
        self._schemas = self.checker.schemas
        self._seen: set[str] = set()

    @property
    def pending_chars(self) -> int:
        """Characters of a call being read (held back from the text so far)."""
        return len(self._call) + len(self._buf) if self._form is not None else 0

    # -- feeding -------------------------------------------------------------

    def feed(self, text: str) -> str:
        """The part of the text so far that is plain text (may be empty)."""
        self._buf += text
        out = self._out = []
        while self._buf:
            if self._form is None:
                if not self._scan_text(out):
                    break
            elif not self._scan_call():
                break
        return "".join(out)

    def _show(self, text: str) -> None:
        if not text:
            return
        self._out.append(text)
        newline = text.rfind("\n")
        if newline >= 0:
            self._line_blank = not text[newline + 1 :].strip()
        elif text.strip():
            self._line_blank = False

    def _bare_start(self, buf: str) -> int | None:
        if not self.bare:
            return None
        for match in _BARE_START.finditer(buf):
            if match.start() == 0 and not self._line_blank:
                continue
            return match.start(1)
        return None

    def _scan_text(self, out: list[str]) -> bool:
        buf = self._buf
        best: tuple[int, str] | None = None
        for marker in MARKERS:
            i = buf.find(marker)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, marker)
        bare = self._bare_start(buf if best is None else buf[: best[0] + 1])
        if bare is not None and best is None and bare >= len(buf) - _partial_marker_suffix(buf):
            bare = None  # the start of a marker ("[TOOL_CALLS]") so far: wait for more
        if bare is not None and (best is None or bare < best[0]):
            self._show(buf[:bare])
            self._buf = buf[bare:]
            self._open("bare", "")
            return True
        if best is None:
            keep = _partial_marker_suffix(buf)
            self._show(buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            return False
        index, marker = best
        self._show(buf[:index])
        self._buf = buf[index + len(marker) :]
        self._open(MARKERS[marker], marker)
        return True

    def _open(self, form: str, marker: str) -> None:
        self._form = form
        self._marker = marker
        self._call = ""
        self._searched = 0
        self._scanner = None

    def _scan_call(self) -> bool:
        """Move text into the current call; True when the call ended (the rest stays in the buffer)."""
        form = self._form
        self._call += self._buf
        self._buf = ""
        if form in ("hermes", "fence"):
            end = "</tool_call>" if form == "hermes" else "```"
            i = self._call.find(end, max(0, self._searched - len(end)))
            if i < 0:
                self._searched = len(self._call)
                return False
            body, self._buf = self._call[:i], self._call[i + len(end) :]
            self._end_call(body, end)
            return True
        if form == "llama-after":
            return self._after_llama_call()
        # mistral / llama / bare: one JSON value (after a name for Mistral's [ARGS] form)
        if self._scanner is None:
            stripped = self._call.lstrip()
            if not stripped:
                return False
            start = len(self._call) - len(stripped)
            if form == "mistral" and stripped[0] not in "[{":
                at = stripped.find("[ARGS]")
                if at < 0:
                    return False
                start += at + len("[ARGS]")
            elif stripped[0] not in "[{":
                # not JSON after the marker: it was text after all
                self._show(self._marker + self._call)
                self._form = None
                self._call = ""
                return True
            self._scanner = JsonScanner()
            self._searched = start
        offset = self._searched
        end_at = self._scanner.feed(self._call[offset:])
        if end_at is None:
            self._searched = len(self._call)
            return False
        end_at += offset
        body, self._buf = self._call[:end_at], self._call[end_at:]
        self._end_call(body, "")
        if form == "llama":
            self._form = "llama-after"  # an end token or "; {...}" (another call) may follow
        return True

    def _after_llama_call(self) -> bool:
        stripped = self._call.lstrip()
        if not stripped:
            return False
        for token in _LLAMA_END_TOKENS:
            if stripped.startswith(token):
                self._call = ""
                self._buf = stripped[len(token) :]
                return True
            if token.startswith(stripped):
                return False  # part of an end token so far
        call, self._call = self._call, ""
        if stripped[0] == ";":
            self._form = "llama"
            self._buf = stripped[1:]
        else:
            self._form = None
            self._buf = call
        return True

    def _end_call(self, body: str, end: str) -> None:
        form, marker = self._form, self._marker
        self._form = None
        self._call = ""
        self._scanner = None
        self._searched = 0
        if form == "fence" or form == "bare":
            if not self._json_call(body):
                self._show(marker + body + end)  # JSON that is no call of an exposed tool: text
            else:
                self._line_blank = True
            return
        if self.strict:
            if not self._strict_take(form or "", body):
                self._show(marker + body + end)
            return
        self._take(form or "", body)

    # -- the end ---------------------------------------------------------------

    def finish(self, *, drop_pending: bool = False) -> tuple[str, list[ToolCallRequest]]:
        """The remaining text and every call; raises ``tool_invalid_input``
        when a call named no tool (never with ``strict``). ``drop_pending``:
        the reply was cut short on purpose, so what is half read is dropped."""
        text: list[str] = []
        self._out = text
        if drop_pending:
            self._form, self._call, self._buf = None, "", ""
        if self._form is not None:
            form, body = self._form, self._call + self._buf
            self._buf = ""
            if form == "llama-after":
                for token in _LLAMA_END_TOKENS:
                    body = body.replace(token, "")
                self._buf = body.lstrip()
            elif form in ("fence", "bare"):
                if not self._json_call(body):
                    text.append(self._marker + body)
            elif self.strict:
                if not (body.strip() and self._strict_take(form, body)):
                    text.append(self._marker + body)
            elif body.strip():
                if form == "llama":
                    for token in _LLAMA_END_TOKENS:
                        body = body.replace(token, "")
                self._take(form, body)  # an unclosed call at the end (a stop sequence ate the closing tag)
            else:
                self.failed.append("")
            self._form = None
        text.append(self._buf)
        self._buf = ""
        if self.failed and not self.strict:
            shown = "\n".join(f or "(nothing after the call marker)" for f in self.failed)
            raise AgentError.from_code(
                "tool_invalid_input",
                "a tool call in the model's reply could not be read: it names no tool",
                details={"failed_generation": shown[:4000], "inline": True},
            )
        return "".join(text), self.calls

    # -- reading one call ------------------------------------------------------

    def _strict_take(self, form: str, body: str) -> bool:
        """A tagged call in strict mode: taken only when every call in it is valid."""
        before = (list(self.calls), list(self.failed), set(self._seen))
        self._take(form, body)
        added = self.calls[len(before[0]) :]
        if len(self.failed) > len(before[1]) or not added or not all(
            self.checker.valid(c.name, c.arguments) for c in added
        ):
            self.calls, self.failed, self._seen = before[0], before[1], before[2]
            return False
        return True

    def _take(self, form: str, body: str) -> None:
        text = body.strip()
        if text.startswith("```") and text.endswith("```"):
            text = text[3:-3].strip()
            text = text[4:].lstrip() if text.startswith("json") else text
        if form == "hermes" and text.startswith("<function="):
            self._take_xml(text)
            return
        if form == "mistral" and text and text[0] not in "[{":
            name, _, args = text.partition("[ARGS]")
            name = name.split("[CALL_ID]")[0].strip()
            if not name:
                self.failed.append(body)
                return
            self._add(name, args.strip() or "{}")
            return
        try:
            data = json.loads(text)
        except ValueError:
            self._take_broken(body)
            return
        items = data if isinstance(data, list) else [data]
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                self.failed.append(json.dumps(item, ensure_ascii=False) if not isinstance(item, str) else item)
                continue
            arguments = item.get("arguments", item.get("parameters", {}))
            self._add(item["name"], arguments, item.get("id") if isinstance(item.get("id"), str) else None)

    def _take_broken(self, body: str) -> None:
        name = _NAME_IN_JSON.search(body)
        if name is None:
            self.failed.append(body)
            return
        args = _ARGS_IN_JSON.search(body)
        raw = body[args.end() :].strip() if args else body.strip()
        if raw.endswith("}") and raw.count("}") > raw.count("{"):
            raw = raw[:-1].rstrip()  # the closing brace of the outer object
        try:
            json.loads(raw)
        except ValueError:
            pass
        else:
            raw = body.strip()  # the arguments parse but the whole did not: give the loop the whole text
        self.calls.append(ToolCallRequest(id=_new_id(), name=name.group(1), arguments=raw or body))

    def _take_xml(self, body: str) -> None:
        match = _XML_FUNCTION.search(body)
        if match is None:
            self.failed.append(body)
            return
        name = match.group(1)
        schema = self._schemas.get(name) or {}
        props = schema.get("properties") or {}
        args: dict[str, Any] = {}
        for pname, value in _XML_PARAMETER.findall(body[match.end() :]):
            args[pname] = _coerce(value, props.get(pname))
        self._add(name, args)

    def _json_call(self, body: str) -> bool:
        """Fenced or bare JSON: calls when every one names an exposed tool with valid arguments."""
        calls = self.checker.calls_in_text(body.strip())
        if calls is None:
            return False
        for name, arguments in calls:
            self._add(name, arguments)
        return True

    def _add(self, name: str, args: Any, call_id: str | None = None) -> None:
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
            arguments: str | dict[str, Any] = parsed if isinstance(parsed, dict) else args
        elif isinstance(args, dict):
            arguments = args
        else:
            arguments = json.dumps(args)  # not an object: the loop reports it to the model
        key = name + "\0" + (json.dumps(arguments, sort_keys=True) if isinstance(arguments, dict) else arguments)
        if key in self._seen:
            self.repeated = True
            return  # the same call twice in one reply (a small model repeating itself) runs once
        self._seen.add(key)
        self.calls.append(ToolCallRequest(id=call_id or _new_id(), name=name, arguments=arguments))


def _partial_marker_suffix(text: str) -> int:
    """How many characters at the end of ``text`` could start a marker."""
    longest = 0
    for marker in MARKERS:
        for n in range(min(len(marker) - 1, len(text)), longest, -1):
            if text.endswith(marker[:n]):
                longest = n
                break
    return longest
