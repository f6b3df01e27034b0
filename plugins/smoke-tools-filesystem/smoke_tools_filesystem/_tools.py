"""The filesystem tool definitions (descriptions are written for models)."""

from __future__ import annotations

from typing import Any

from smoke_core.tools import ToolAnnotations, ToolDefinition, ToolPresentation

from ._patch import apply_patch
from ._read import list_directory, read_file
from ._write import delete_file, edit_file, replace_lines, write_file

GROUP = "filesystem"

_PATH = {"type": "string", "description": "File path relative to the workspace root (absolute paths must be inside it)."}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _presentation(label: str, icon: str, tone: str = "info") -> ToolPresentation:
    return ToolPresentation(label=label, icon=icon, tone=tone, group=GROUP)  # type: ignore[arg-type]


def build_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="read_file",
            description=(
                "Read a text file, returned with line numbers (`     12\\tcode`; the number and tab are not part of "
                "the file). At most 2000 lines per call: when the file is longer the output says so and how to read "
                "on with start_line/end_line (1-based, inclusive). Images (png, jpg, gif, webp) are returned as "
                "images; other binary files are refused. Non-UTF-8 bytes are shown as U+FFFD and flagged."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to show (default 1)."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show (inclusive)."},
                },
                ["path"],
            ),
            annotations=ToolAnnotations(title="Read file", read_only_hint=True),
            presentation=_presentation("Read file", "📄"),
            execute=read_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="list_directory",
            description=(
                "List the entries of a folder in the workspace, sorted by name: folders end with '/', symlinks with "
                "'@', files show their size. At most `limit` entries (default 200) from `offset`; the output says how "
                "many more there are."
            ),
            input_schema=_schema(
                {
                    "path": {"type": "string", "description": "Folder relative to the workspace root (default: the root)."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Entries to skip (default 0)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Entries to show (default 200)."},
                },
                [],
            ),
            annotations=ToolAnnotations(title="List directory", read_only_hint=True),
            presentation=_presentation("List directory", "📁"),
            execute=list_directory,
            group=GROUP,
        ),
        ToolDefinition(
            name="write_file",
            description=(
                "Create a file or replace its whole content. Parent folders are created. The write is atomic and "
                "keeps the file's permissions. Prefer edit_file or apply_patch to change part of an existing file."
            ),
            input_schema=_schema(
                {"path": _PATH, "content": {"type": "string", "description": "The complete new content of the file."}},
                ["path", "content"],
            ),
            annotations=ToolAnnotations(title="Write file", read_only_hint=False, destructive_hint=True),
            presentation=_presentation("Write file", "✍️", "warning"),
            execute=write_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="edit_file",
            description=(
                "Replace an exact piece of text in a file. old_string must match the file exactly (whitespace and "
                "indentation included, without read_file's line numbers) and occur once; include surrounding lines "
                "to make it unique, or set replace_all=true to replace every occurrence. If it is not found, the "
                "most similar region is shown. An empty old_string creates a new file holding new_string. The "
                "file's line endings (CRLF/LF) are kept."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
                },
                ["path", "old_string", "new_string"],
            ),
            annotations=ToolAnnotations(title="Edit file", read_only_hint=False),
            presentation=_presentation("Edit file", "📝", "warning"),
            execute=edit_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="apply_patch",
            description=(
                "Apply a patch to one or more files: a unified diff (--- a/f, +++ b/f, @@ -l,c +l,c @@), a git diff "
                "(new/deleted/renamed files included) or a block from '*** Begin Patch' to '*** End Patch' with "
                "'*** Update File: p' / '*** Add File: p' / '*** Delete File: p' / '*** Move to: p' sections whose "
                "lines start with ' ', '-' or '+' ('@@ line' marks a line above the change). Context lines must "
                "match the file; hunks whose line numbers drifted are found by their context. Either every change "
                "applies or nothing is written."
            ),
            input_schema=_schema(
                {"patch": {"type": "string", "description": "The complete patch text."}},
                ["patch"],
            ),
            annotations=ToolAnnotations(title="Apply patch", read_only_hint=False),
            presentation=_presentation("Apply patch", "🩹", "warning"),
            execute=apply_patch,
            group=GROUP,
        ),
        ToolDefinition(
            name="delete_file",
            description=(
                "Delete one file (not a folder) in the workspace. A symlink is removed itself, never its target."
            ),
            input_schema=_schema({"path": _PATH}, ["path"]),
            annotations=ToolAnnotations(title="Delete file", read_only_hint=False, destructive_hint=True),
            presentation=_presentation("Delete file", "🗑️", "error"),
            execute=delete_file,
            group=GROUP,
        ),
        ToolDefinition(
            name="replace_lines",
            description=(
                "Replace lines start_line..end_line (1-based, inclusive, as numbered by read_file) with `replacement` "
                "(any number of lines; empty deletes them). end_line = start_line - 1 inserts before start_line; "
                "start_line = last line + 1 appends. Re-read the file first: numbers shift after every edit."
            ),
            input_schema=_schema(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to replace."},
                    "end_line": {"type": "integer", "minimum": 0, "description": "Last line to replace (inclusive)."},
                    "replacement": {"type": "string", "description": "The new lines (without line numbers)."},
                },
                ["path", "start_line", "end_line", "replacement"],
            ),
            annotations=ToolAnnotations(title="Replace lines", read_only_hint=False),
            presentation=_presentation("Replace lines", "🔁", "warning"),
            execute=replace_lines,
            group=GROUP,
        ),
    ]
