"""Smoke core: contracts, the plugin manager, the agent loop.

Names are imported lazily so that ``from smoke_core import hookimpl`` — what
every plugin module does at load time — costs only pluggy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._markers import hookimpl, hookspec
from ._version import PLUGIN_API_VERSION, __version__

__all__ = [
    "COMMAND_TOOLS",
    "ERROR_CODES",
    "EVENT_TYPES",
    "FILE_MUTATING_TOOLS",
    "PHASES",
    "PHASE_TOOLS",
    "PLUGIN_API_VERSION",
    "READ_ONLY_TOOLS",
    "SEARCH_FAMILY_TOOLS",
    "TOOL_GROUPS",
    "Agent",
    "AgentError",
    "AgentErrorInfo",
    "AgentOptions",
    "Event",
    "Finished",
    "Guards",
    "Image",
    "MemoryStore",
    "ModelRequest",
    "PermissionGate",
    "PermissionRequest",
    "Provider",
    "RetryPolicy",
    "RunHandle",
    "RunResult",
    "Store",
    "TextDelta",
    "ThoughtDelta",
    "ToolAnnotations",
    "ToolCallRequest",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolPresentation",
    "ToolRegistry",
    "ToolResult",
    "Usage",
    "UsageReport",
    "Workspace",
    "WorkspaceError",
    "__version__",
    "create_agent",
    "hookimpl",
    "hookspec",
    "tool",
]

_LAZY: dict[str, str] = {
    "COMMAND_TOOLS": "_tools",
    "FILE_MUTATING_TOOLS": "_tools",
    "PHASES": "_tools",
    "PHASE_TOOLS": "_tools",
    "READ_ONLY_TOOLS": "_tools",
    "SEARCH_FAMILY_TOOLS": "_tools",
    "TOOL_GROUPS": "_tools",
    "ToolAnnotations": "_tools",
    "ToolDefinition": "_tools",
    "ToolPresentation": "_tools",
    "ToolRegistry": "_tools",
    "ToolResult": "_tools",
    "tool": "_tool_decorator",
    "ERROR_CODES": "_errors",
    "AgentError": "_errors",
    "AgentErrorInfo": "_errors",
    "ToolError": "_errors",
    "EVENT_TYPES": "_events",
    "Event": "_events",
    "Image": "_images",
    "Agent": "_agent",
    "create_agent": "_factory",
    "AgentOptions": "_options",
    "Guards": "_options",
    "MemoryStore": "_store",
    "Store": "_store",
    "PermissionGate": "_permissions",
    "PermissionRequest": "_permissions",
    "Provider": "providers",
    "ModelRequest": "providers",
    "RetryPolicy": "providers",
    "TextDelta": "providers",
    "ThoughtDelta": "providers",
    "ToolCallRequest": "providers",
    "Usage": "providers",
    "UsageReport": "providers",
    "Finished": "providers",
    "RunHandle": "_run",
    "RunResult": "_run",
    "ToolContext": "_context",
    "Workspace": "_workspace",
    "WorkspaceError": "_workspace",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smoke_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from ._agent import Agent
    from ._context import ToolContext
    from ._errors import ERROR_CODES, AgentError, AgentErrorInfo, ToolError
    from ._events import EVENT_TYPES, Event
    from ._factory import create_agent
    from ._images import Image
    from ._options import AgentOptions, Guards
    from ._permissions import PermissionGate, PermissionRequest
    from ._provider_types import (
        Finished,
        ModelRequest,
        Provider,
        RetryPolicy,
        TextDelta,
        ThoughtDelta,
        ToolCallRequest,
        Usage,
        UsageReport,
    )
    from ._run import RunHandle, RunResult
    from ._store import MemoryStore, Store
    from ._tool_decorator import tool
    from ._tools import (
        COMMAND_TOOLS,
        FILE_MUTATING_TOOLS,
        PHASE_TOOLS,
        PHASES,
        READ_ONLY_TOOLS,
        SEARCH_FAMILY_TOOLS,
        TOOL_GROUPS,
        ToolAnnotations,
        ToolDefinition,
        ToolPresentation,
        ToolRegistry,
        ToolResult,
    )
    from ._workspace import Workspace, WorkspaceError
