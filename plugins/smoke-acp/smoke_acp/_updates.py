"""Smoke's events and stored messages as ACP ``session/update`` payloads.

Pure functions over plain data (no I/O except the sandboxed reads the caller
passes in), so the translation is tested without a connection. Everything a
person reads to decide — titles, commands, paths, approval text — goes
through :func:`smoke_core.display.visible`: control characters shown, nothing
cut (DESIGN §9).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    ImageContentBlock,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from smoke_core.display import hidden_characters, length_note, visible

#: ACP's tool kinds (Smoke's ToolDefinition.kind uses the same words).
ACP_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
#: Command output shown live in a tool call: the last this-many characters.
OUTPUT_TAIL_CHARS = 20_000
#: File contents shown as the old side of a diff: files up to this size.
MAX_DIFF_FILE_BYTES = 2 * 1024 * 1024
#: In file contents indentation is normal: only very long space runs are marked.
CONTENT_SPACE_RUN = 80

ReadText = Callable[[str], "tuple[Path, str | None] | None"]
"""``read(path_argument) -> (absolute path, text or None)`` through the workspace sandbox, or None."""


def text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def shown(text: Any) -> str:
    """Model or tool text for the editor: control characters shown, never obeyed; layout kept."""
    return visible(str(text), space_run=0, keep_tabs=True)


def message_chunk(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=text_block(shown(text)))


def thought_chunk(text: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(session_update="agent_thought_chunk", content=text_block(shown(text)))


def fenced(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence that its own backticks cannot close."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


# ---------------------------------------------------------------- tool calls


def acp_kind(kind: str | None) -> str:
    return kind if kind in ACP_KINDS else "other"


def _main_argument(tool_name: str, input: dict[str, Any]) -> str | None:
    for key in ("command", "path", "pattern", "query", "url", "question", "rev", "skill_id", "summary", "description"):
        value = input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tool_title(tool: Any, tool_name: str, input: dict[str, Any], presentation: dict[str, Any] | None = None) -> str:
    """``Label: argument`` — the argument whole, control characters made visible."""
    label = (presentation or {}).get("label") or getattr(getattr(tool, "annotations", None), "title", None) or tool_name
    arg = _main_argument(tool_name, input) if isinstance(input, dict) else None
    if arg is None:
        return visible(str(label))
    arg = visible(arg)
    if "command" in input and isinstance(input.get("command"), str):
        return f"{visible(str(label))}: `{arg}`" if "`" not in arg else f"{visible(str(label))}: {arg}"
    return f"{visible(str(label))} {arg}"


def path_argument(tool: Any, input: dict[str, Any]) -> str | None:
    """The path a file tool works on (its ``permission_key`` when that names a path)."""
    key = getattr(tool, "permission_key", None)
    if key in ("path", "file", "file_path", "filename") and isinstance(input.get(key), str):
        return str(input[key])
    if key is None and isinstance(input.get("path"), str) and acp_kind(getattr(tool, "kind", None)) in (
            "read", "edit", "delete", "move"):
        return str(input["path"])
    return None


def _line_of(text: str, needle: str) -> int | None:
    if not needle:
        return None
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def start_details(tool: Any, tool_name: str, input: dict[str, Any], read: ReadText) -> tuple[
        list[ToolCallLocation], list[Any]]:
    """``(locations, content)`` of a tool call as it starts: the file and line
    for file tools (so the editor follows along), the edit as a ``diff``
    (old / new text), the command for commands."""
    locations: list[ToolCallLocation] = []
    content: list[Any] = []
    if not isinstance(input, dict):
        return locations, content
    raw_path = path_argument(tool, input)
    kind = acp_kind(getattr(tool, "kind", None))
    found = read(raw_path) if raw_path is not None else None
    if found is not None:
        path, current = found
        line: int | None = None
        if kind == "edit" and tool_name == "edit_file" and isinstance(input.get("old_string"), str):
            old, new = input["old_string"], input.get("new_string")
            if current is not None:
                line = _line_of(current, old)
            if isinstance(new, str):
                content.append(_diff(path, old if old else None, new))
        elif kind == "edit" and tool_name == "write_file" and isinstance(input.get("content"), str):
            content.append(_diff(path, current, input["content"]))
            line = 1
        elif kind == "edit" and tool_name == "replace_lines":
            start, end, replacement = input.get("start_line"), input.get("end_line"), input.get("replacement")
            if isinstance(start, int) and isinstance(end, int) and isinstance(replacement, str):
                line = start
                if current is not None:
                    lines = current.splitlines(keepends=True)
                    old_part = "".join(lines[start - 1:end]) if end >= start else ""
                    content.append(_diff(path, old_part, replacement))
        elif kind == "delete" and current is not None:
            content.append(_diff(path, current, ""))
        elif isinstance(input.get("start_line"), int):
            line = input["start_line"]
        locations.append(ToolCallLocation(path=str(path), line=line) if line else ToolCallLocation(path=str(path)))
    if isinstance(input.get("command"), str):
        content.append(_text_content(fenced("$ " + visible(input["command"]), "sh")))
    return locations, content


def _diff(path: Path, old: str | None, new: str) -> FileEditToolCallContent:
    return FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)


def _text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=text_block(text))


def tool_call_start(call_id: str, tool: Any, tool_name: str, input: dict[str, Any],
                    presentation: dict[str, Any] | None, read: ReadText, *, status: str = "pending") -> ToolCallStart:
    locations, content = start_details(tool, tool_name, input, read)
    return ToolCallStart(
        session_update="tool_call", tool_call_id=call_id,
        title=tool_title(tool, tool_name, input, presentation),
        kind=acp_kind(getattr(tool, "kind", None) if tool is not None else None),  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        locations=locations or None, content=content or None,
    )


def approval_content(tool_name: str, input: Any, reason: str | None, start_content: list[Any]) -> list[Any]:
    """What a person reads before answering: the reason, warnings about hidden
    characters and long inputs, the diff or command, and the whole input with
    control characters made visible — never cut."""
    out: list[Any] = []
    notes: list[str] = []
    if reason:
        notes.append(visible(reason))
    texts = [str(v) for v in input.values() if isinstance(v, str)] if isinstance(input, dict) else [str(input)]
    env = input.get("env") if isinstance(input, dict) else None
    env_lines = [f"{k}={v}" for k, v in env.items()] if isinstance(env, dict) else []
    texts += env_lines
    hidden = sum(hidden_characters(t) for t in texts) + hidden_characters(tool_name)
    if hidden:
        notes.append(f"⚠ the input holds {hidden} control or invisible character(s), shown marked "
                     f"(␛ = ESC, ␍ = CR, ⟨…⟩ = invisible): what runs is exactly what is shown")
    if any(" " * 16 in t for t in texts):
        notes.append("⚠ the input holds long runs of spaces, shown as ⟨N spaces⟩")
    for t in texts:
        note = length_note(t)
        if note:
            notes.append(f"⚠ {note}")
            break
    if notes:
        out.append(_text_content("\n\n".join(notes)))
    out.extend(start_content)
    if env_lines:  # approved with the command: each entry whole, marked
        out.append(_text_content(f"with env ({len(env_lines)} variable{'s' if len(env_lines) != 1 else ''}, "
                                 f"approved with the command):\n"
                                 + fenced("\n".join(visible(line, space_run=CONTENT_SPACE_RUN) for line in env_lines))))
    whole = json.dumps(input, ensure_ascii=False, indent=2) if isinstance(input, dict) else str(input)
    out.append(_text_content(f"{visible(tool_name)} input ({len(whole):,} characters):\n"
                             + fenced(visible(whole, space_run=CONTENT_SPACE_RUN), "json")))
    return out


def output_progress(call_id: str, output: str) -> ToolCallProgress:
    tail = output[-OUTPUT_TAIL_CHARS:]
    if len(output) > len(tail):
        tail = f"… ({len(output) - len(tail):,} earlier characters not shown here)\n" + tail
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress",
                            content=[_text_content(fenced(shown(tail)))])


def result_content(content: Iterable[dict[str, Any]], *, keep: list[Any] | None = None) -> list[Any]:
    """A tool result's blocks as tool call content (after ``keep``, e.g. the diff)."""
    out: list[Any] = list(keep or [])
    for block in content or ():
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            out.append(_text_content(fenced(shown(block["text"]))))
        elif kind == "image" and block.get("data") and block.get("mime_type"):
            out.append(ContentToolCallContent(type="content", content=ImageContentBlock(
                type="image", data=block["data"], mime_type=block["mime_type"])))
    return out


def tool_call_done(call_id: str, *, is_error: bool, content: Iterable[dict[str, Any]],
                   keep: list[Any] | None = None) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                            status="failed" if is_error else "completed",
                            content=result_content(content, keep=keep) or None)


# ---------------------------------------------------------------- plan


def plan_update(todos: Iterable[dict[str, Any]]) -> AgentPlanUpdate:
    entries = []
    for todo in todos:
        status = todo.get("status")
        text = shown(todo.get("content", ""))
        if status == "cancelled":
            status, text = "completed", f"(cancelled) {text}"
        if status not in ("pending", "in_progress", "completed"):
            status = "pending"
        entries.append(PlanEntry(content=text, priority="medium", status=status))  # type: ignore[arg-type]
    return AgentPlanUpdate(session_update="plan", entries=entries)


# ---------------------------------------------------------------- replay


def replay(messages: list[dict[str, Any]], tool_for: Callable[[str], Any], read: ReadText) -> list[Any]:
    """The updates that show a stored session again (``session/load``): the
    person's messages, the answers, thoughts, and each tool call with its
    outcome (and the plan as the last ``todo_write`` left it)."""
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") == "tool":
            for block in message.get("content", []):
                if block.get("type") == "tool_result":
                    results[str(block.get("tool_call_id"))] = block
    out: list[Any] = []
    for message in messages:
        role = message.get("role")
        for block in message.get("content", []):
            kind = block.get("type")
            if role == "user" and kind == "text":
                out.append(UserMessageChunk(session_update="user_message_chunk", content=text_block(block["text"])))
            elif role == "user" and kind == "image" and block.get("data"):
                out.append(UserMessageChunk(session_update="user_message_chunk", content=ImageContentBlock(
                    type="image", data=block["data"], mime_type=block.get("mime_type") or "image/png")))
            elif role == "user" and kind == "image":
                out.append(UserMessageChunk(session_update="user_message_chunk",
                                            content=text_block(f"[image: {block.get('url')}]")))
            elif role == "assistant" and kind == "thinking" and block.get("text"):
                out.append(thought_chunk(block["text"]))
            elif role == "assistant" and kind == "text" and block.get("text"):
                out.append(message_chunk(block["text"]))
            elif role == "assistant" and kind == "tool_call":
                call_id, name = str(block.get("id")), str(block.get("name"))
                input = block.get("input") if isinstance(block.get("input"), dict) else {}
                tool = tool_for(name)
                result = results.get(call_id)
                status = "pending" if result is None else ("failed" if result.get("is_error") else "completed")
                start = tool_call_start(call_id, tool, name, input, None, read, status=status)
                out.append(start)
                if result is not None:
                    out.append(tool_call_done(call_id, is_error=bool(result.get("is_error")),
                                              content=result.get("content") or [], keep=_diffs(start)))
                    if name == "todo_write" and not result.get("is_error") and isinstance(input.get("todos"), list):
                        out.append(plan_update(t for t in input["todos"] if isinstance(t, dict)))
    return out


def _diffs(start: ToolCallStart) -> list[Any]:
    return [c for c in (start.content or []) if getattr(c, "type", None) == "diff"]
