"""Smoke core: contracts, the plugin manager, the agent loop.

Names are imported lazily so that ``from smoke_core import hookimpl`` — what
every plugin module does at load time — costs only pluggy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._markers import hookimpl, hookspec
from ._version import __version__

__all__ = [
    "COMMAND_TOOLS",
    "ERROR_CODES",
    "EVENT_TYPES",
    "FILE_MUTATING_TOOLS",
    "PHASES",
    "PHASE_TOOLS",
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
    "COMMAND_TOOLS": "tools",
    "FILE_MUTATING_TOOLS": "tools",
    "PHASES": "tools",
    "PHASE_TOOLS": "tools",
    "READ_ONLY_TOOLS": "tools",
    "SEARCH_FAMILY_TOOLS": "tools",
    "TOOL_GROUPS": "tools",
    "ToolAnnotations": "tools",
    "ToolDefinition": "tools",
    "ToolPresentation": "tools",
    "ToolRegistry": "tools",
    "ToolResult": "tools",
    "tool": "tools",
    "ERROR_CODES": "errors",
    "AgentError": "errors",
    "AgentErrorInfo": "errors",
    "ToolError": "errors",
    "EVENT_TYPES": "events",
    "Event": "events",
    "Image": "_images",
    "Agent": "agent",
    "create_agent": "agent",
    "AgentOptions": "options",
    "Guards": "options",
    "MemoryStore": "store",
    "Store": "store",
    "PermissionGate": "permissions",
    "PermissionRequest": "permissions",
    "Provider": "providers",
    "ModelRequest": "providers",
    "RetryPolicy": "providers",
    "TextDelta": "providers",
    "ThoughtDelta": "providers",
    "ToolCallRequest": "providers",
    "Usage": "providers",
    "UsageReport": "providers",
    "Finished": "providers",
    "RunHandle": "run",
    "RunResult": "run",
    "ToolContext": "context",
    "Workspace": "workspace",
    "WorkspaceError": "workspace",
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
    from ._images import Image
    from .agent import Agent, create_agent
    from .context import ToolContext
    from .errors import ERROR_CODES, AgentError, AgentErrorInfo, ToolError
    from .events import EVENT_TYPES, Event
    from .options import AgentOptions, Guards
    from .permissions import PermissionGate, PermissionRequest
    from .providers import (
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
    from .run import RunHandle, RunResult
    from .store import MemoryStore, Store
    from .tools import (
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
        tool,
    )
    from .workspace import Workspace, WorkspaceError
