"""Tools as hooks written for Claude Code see them: the name (``Bash``,
``Write``...) and input each tool declares (:class:`~smoke_core.plugin.ClaudeDialect`
on its annotations), the way back for an ``updatedInput``, and the
``tool_response`` shapes Claude Code documents.

A hook from Smoke's own settings sees Smoke's names and inputs; a matcher of
either kind may name either form (``Bash|run_command``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from smoke_core.plugin import ToolDefinition, ToolResult


def _dialect(tool: ToolDefinition | None) -> Any:
    return tool.annotations.claude if tool is not None else None


def claude_name(tool: ToolDefinition | None, name: str) -> str:
    """The tool's name in Claude Code's shape (MCP tools: ``mcp__<server>__<tool>``)."""
    dialect = _dialect(tool)
    if dialect is not None:
        return str(dialect.name)
    if tool is not None and tool.group == "mcp" and not name.startswith("mcp__"):
        return f"mcp__{name}"
    return name


def match_names(tool: ToolDefinition | None, name: str) -> tuple[str, ...]:
    """Every name a matcher may use for this tool: Smoke's, Claude Code's and its aliases."""
    names = [name]
    claude = claude_name(tool, name)
    if claude != name:
        names.append(claude)
    dialect = _dialect(tool)
    if dialect is not None:
        names.extend(dialect.aliases)
    return tuple(names)


def _absolute(value: Any, workspace: Path) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(workspace / value)
    return value


def _relative(value: Any, workspace: Path) -> Any:
    if isinstance(value, str) and os.path.isabs(value):
        path = Path(os.path.normpath(value))
        root = workspace.resolve()
        for base in (workspace, root):
            if path.is_relative_to(base):
                return path.relative_to(base).as_posix() or "."
    return value


def to_claude(tool: ToolDefinition | None, name: str, tool_input: dict[str, Any],
              workspace: Path) -> tuple[str, dict[str, Any]]:
    """``(name, input)`` as a hook written for Claude Code expects them. A tool
    that declares no dialect keeps its input (MCP tools: the server's arguments)."""
    dialect = _dialect(tool)
    if dialect is None:
        return claude_name(tool, name), dict(tool_input)
    out: dict[str, Any] = {}
    for claude_field, smoke_field in dialect.input.items():
        if smoke_field in tool_input:
            value = tool_input[smoke_field]
            out[claude_field] = _absolute(value, workspace) if claude_field in dialect.paths else value
    return str(dialect.name), out


def from_claude(tool: ToolDefinition | None, original: dict[str, Any], updated: dict[str, Any],
                workspace: Path) -> dict[str, Any]:
    """A Claude-shaped ``updatedInput`` as the tool's own input: mapped fields
    come from ``updated`` (a mapped field left out is removed), fields the
    dialect does not show keep their value, Claude fields the tool does not
    have are dropped."""
    dialect = _dialect(tool)
    if dialect is None:
        return dict(updated)
    shown = set(dialect.input.values())
    out = {k: v for k, v in original.items() if k not in shown}
    for claude_field, smoke_field in dialect.input.items():
        if claude_field in updated:
            value = updated[claude_field]
            out[smoke_field] = _relative(value, workspace) if claude_field in dialect.paths else value
    return out


def _text(result: ToolResult) -> str:
    return "\n".join(str(b.get("text", "")) for b in result.content if b.get("type") == "text")


def tool_response(claude: bool, name: str, tool_input: dict[str, Any], result: ToolResult) -> Any:
    """PostToolUse's ``tool_response``: Claude Code's documented shapes for a
    Claude-dialect hook (by the Claude name), Smoke's result otherwise."""
    if not claude:
        return {"content": result.content, "is_error": result.is_error, **({"data": result.data} if result.data else {})}
    text = _text(result)
    data = result.data or {}
    if name == "Bash":
        return {"stdout": text, "stderr": "", "interrupted": bool(data.get("timed_out")), "isImage": False,
                **({"exit_code": data["exit_code"]} if "exit_code" in data else {})}
    if name in ("Write", "Edit"):
        out = {"filePath": tool_input.get("file_path"), "success": not result.is_error}
        if name == "Write":
            out["content"] = tool_input.get("content")
        else:
            out.update(oldString=tool_input.get("old_string"), newString=tool_input.get("new_string"),
                       replaceAll=bool(tool_input.get("replace_all")))
        return out
    if name == "Read":
        return {"type": "text", "file": {"filePath": tool_input.get("file_path"), "content": text}}
    if name == "Glob":
        files = [line for line in text.splitlines() if line.strip()]
        return {"filenames": files, "numFiles": len(files), "truncated": False}
    if name == "Grep":
        return {"mode": "content", "content": text, "numFiles": 0, "filenames": []}
    return result.content
