"""The filesystem tool definitions (descriptions are written for models)."""

from __future__ import annotations

from typing import Any

from smoke_core.plugin import ClaudeDialect, ToolAnnotations, ToolDefinition, ToolPresentation

from ._patch import apply_patch
from ._read import list_directory, read_file
from ._write import delete_file, edit_file, replace_lines, write_file

GROUP = "filesystem"

_PATH = {"type": "string", "description": "Workspace-relative."}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _claude(name: str, **fields: str) -> ClaudeDialect:
    """How a file tool looks to Claude Code's hooks: ``file_path`` (absolute there) is ``path``."""
    return ClaudeDialect(name=name, input={"file_path": "path", **fields}, paths=["file_path"])


def _presentation(label: str, icon: str, tone: str = "info") -> ToolPresentation:
    return ToolPresentation(label=label, icon=icon, tone=tone, group=GROUP)  # type: ignore[arg-type]


def build_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="read_file",
            description=(
                "Read a text file, each line prefixed with its number and a tab. At most 2000 lines per call; page "
                "with start_line/end_line (1-based, inclusive). Also reads images."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
            annotations=ToolAnnotations(title="Read file", read_only_hint=True, kind="read", claude=_claude("Read", offset="start_line")),
            permission_key="path",
            presentation=_presentation("Read file", "📄"),
            execute=read_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="list_directory",
            description=(
                "List a folder sorted by name; folders end with '/'. Shows `limit` entries (default 200) from "
                "`offset`."
            ),
            input_schema=_schema(
                {
                    "path": {"type": "string", "description": "Workspace-relative folder (default: root)."},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
                },
                [],
            ),
            annotations=ToolAnnotations(title="List directory", read_only_hint=True, kind="read"),
            permission_key="path",
            presentation=_presentation("List directory", "📁"),
            execute=list_directory,
            group=GROUP,
        ),
        ToolDefinition(
            name="write_file",
            description=(
                "Create or overwrite a file, creating parent folders. For partial changes use edit_file."
            ),
            input_schema=_schema(
                {"path": _PATH, "content": {"type": "string"}},
                ["path", "content"],
            ),
            annotations=ToolAnnotations(title="Write file", read_only_hint=False, destructive_hint=True, kind="edit",
                                        claude=_claude("Write", content="content")),
            permission_key="path",
            presentation=_presentation("Write file", "✍️", "warning"),
            execute=write_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="edit_file",
            description=(
                "Replace old_string with new_string in a file. old_string must match exactly (whitespace included, "
                "no line numbers) and be unique, unless replace_all is set. An empty old_string creates a new file."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"},
                },
                ["path", "old_string", "new_string"],
            ),
            annotations=ToolAnnotations(title="Edit file", read_only_hint=False, kind="edit", claude=_claude(
                "Edit", old_string="old_string", new_string="new_string", replace_all="replace_all")),
            permission_key="path",
            presentation=_presentation("Edit file", "📝", "warning"),
            execute=edit_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="apply_patch",
            description=(
                "Apply a unified/git diff or a '*** Begin Patch' block ('*** Update/Add/Delete File: path' sections) "
                "to one or more files. Context lines must match. All changes apply or none."
            ),
            input_schema=_schema(
                {"patch": {"type": "string"}},
                ["patch"],
            ),
            # Codex names its patch tool apply_patch and hands hooks the patch as `command`
            annotations=ToolAnnotations(title="Apply patch", read_only_hint=False, kind="edit",
                                        claude=ClaudeDialect(name="apply_patch", input={"command": "patch"})),
            presentation=_presentation("Apply patch", "🩹", "warning"),
            execute=apply_patch,
            group=GROUP,
        ),
        ToolDefinition(
            name="delete_file",
            description=(
                "Delete one file (not a folder). A symlink is removed, not its target."
            ),
            input_schema=_schema({"path": _PATH}, ["path"]),
            annotations=ToolAnnotations(title="Delete file", read_only_hint=False, destructive_hint=True, kind="delete"),
            permission_key="path",
            presentation=_presentation("Delete file", "🗑️", "error"),
            execute=delete_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="replace_lines",
            description=(
                "Replace lines start_line..end_line (1-based, inclusive) with `replacement`; empty deletes, "
                "end_line = start_line - 1 inserts. Line numbers shift after each edit."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 0},
                    "replacement": {"type": "string", "description": "New lines, without line numbers."},
                },
                ["path", "start_line", "end_line", "replacement"],
            ),
            annotations=ToolAnnotations(title="Replace lines", read_only_hint=False, kind="edit"),
            permission_key="path",
            presentation=_presentation("Replace lines", "🔁", "warning"),
            execute=replace_lines,
            group=GROUP,
        ),
    ]
