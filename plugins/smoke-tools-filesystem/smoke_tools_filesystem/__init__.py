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

__all__ = ["TOOL_NAMES", "register_tools"]

TOOL_NAMES: tuple[str, ...] = (
    "read_file", "list_directory", "write_file", "edit_file", "apply_patch", "delete_file", "replace_lines",
)

_cache: list[Any] = []


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    """Register the filesystem tools in the group ``filesystem``."""
    if not _cache:
        from ._tools import build_tools

        _cache.extend(build_tools())
    for definition in _cache:
        register(definition, group="filesystem")
