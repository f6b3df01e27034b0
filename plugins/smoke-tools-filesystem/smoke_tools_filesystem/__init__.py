"""Smoke tool group ``filesystem``: read_file, list_directory, write_file,
edit_file, apply_patch, delete_file and replace_lines.

Every path goes through the workspace sandbox (``ctx.workspace.resolve``);
every write is atomic. The tool modules are imported when an agent is
created, not when the plugin is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smoke_core import hookimpl

__all__ = ["TOOL_NAMES", "EditorFiles", "editor_files", "register_tools"]

TOOL_NAMES: tuple[str, ...] = (
    "read_file", "list_directory", "write_file", "edit_file", "apply_patch", "delete_file", "replace_lines",
)

_cache: list[Any] = []


def __getattr__(name: str) -> Any:
    # EditorFiles / editor_files live with the file helpers (imported on first use)
    if name in ("EditorFiles", "editor_files"):
        from . import _files

        return getattr(_files, name)
    raise AttributeError(f"module 'smoke_tools_filesystem' has no attribute {name!r}")


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    """Register the filesystem tools in the group ``filesystem``."""
    if not _cache:
        from ._tools import build_tools

        _cache.extend(build_tools())
    for definition in _cache:
        register(definition, group="filesystem")
