"""Smoke tool group ``search``: glob and grep.

Uses the ``rg`` binary shipped by the ``ripgrep`` wheel and falls back to a
pure-Python engine with the same results and output when ``rg`` is missing.
Set ``SMOKE_SEARCH_ENGINE=python`` (or ``rg``) to force one. The tool
modules are imported when an agent is created, not when the plugin loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smoke_core import hookimpl

__all__ = ["TOOL_NAMES", "register_tools"]

TOOL_NAMES: tuple[str, ...] = ("glob", "grep")

_cache: list[Any] = []


@hookimpl
def register_tools(register: Callable[..., Any]) -> None:
    """Register glob and grep in the group ``search``."""
    if not _cache:
        from ._tools import build_tools

        _cache.extend(build_tools())
    for definition in _cache:
        register(definition, group="search")
