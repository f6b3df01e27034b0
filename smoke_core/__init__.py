"""Smoke core: contracts, the plugin manager, the agent loop.

The doors (what applications and plugins import): this module (applications),
:mod:`smoke_core.plugin` (plugin authors), :mod:`smoke_core.providers`
(provider adapters), :mod:`smoke_core.testing` (tests), :mod:`smoke_core.hookspecs`
(the hook reference), and :mod:`smoke_core.settings`, :mod:`smoke_core.sandbox`,
:mod:`smoke_core.secrets`, :mod:`smoke_core.display`, :mod:`smoke_core.cli`,
:mod:`smoke_core.demo`.

The parts, each a sub-package; a part imports only the parts above it in this
list (docs/architecture.md, checked by tests/test_structure.py):

- ``base/`` — plain data: errors, events, messages, images, prompts, instructions, version;
- ``tools/`` — the tool contract, ``@tool``, ``ToolContext``, the workspace;
- ``wire/`` — the provider contract types, ``HTTPProvider``, HTTP errors and limits, model facts, prices;
- ``store/`` — the store protocols, SQLite, session leases, store URLs;
- ``policy/`` — settings layers and trust, permission rules and the gate, secrets, the sandbox;
- ``hooks/`` — the plugin manager and the hook runner;
- ``run/`` — ``create_agent``, ``Agent``, a run: its loop, model caller, tool executor, compaction, subagents;
- ``testing/`` — the scripted provider and the contract kits (not imported at run time);
- ``batch/`` — ``run_batch``: many tasks, each in its own workspace copy;
- ``demo/`` — the offline demo (a scripted model fixing a real bug);
- ``cli/`` — the ``smoke`` command; the only part that imports click, rich or prompt_toolkit.

Names are imported lazily so that ``from smoke_core import hookimpl`` — what
every plugin module does at load time — costs only pluggy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base.markers import hookimpl, hookspec
from .base.version import PLUGIN_API_VERSION, __version__

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
    "ERROR_CODES": "base.errors",
    "AgentError": "base.errors",
    "AgentErrorInfo": "base.errors",
    "ToolError": "base.errors",
    "EVENT_TYPES": "base.events",
    "Event": "base.events",
    "Image": "base.images",
    "PermissionGate": "policy.gate",
    "AgentOptions": "policy.options",
    "Guards": "policy.options",
    "PermissionRequest": "policy.rules",
    "Agent": "run.agent",
    "create_agent": "run.factory",
    "RunHandle": "run.handle",
    "RunResult": "run.state",
    "MemoryStore": "store.protocol",
    "Store": "store.protocol",
    "ToolContext": "tools.context",
    "tool": "tools.decorator",
    "COMMAND_TOOLS": "tools.definitions",
    "FILE_MUTATING_TOOLS": "tools.definitions",
    "PHASE_TOOLS": "tools.definitions",
    "PHASES": "tools.definitions",
    "READ_ONLY_TOOLS": "tools.definitions",
    "SEARCH_FAMILY_TOOLS": "tools.definitions",
    "TOOL_GROUPS": "tools.definitions",
    "ToolAnnotations": "tools.definitions",
    "ToolDefinition": "tools.definitions",
    "ToolPresentation": "tools.definitions",
    "ToolRegistry": "tools.definitions",
    "ToolResult": "tools.definitions",
    "Workspace": "tools.workspace",
    "WorkspaceError": "tools.workspace",
    "Finished": "wire.types",
    "ModelRequest": "wire.types",
    "Provider": "wire.types",
    "RetryPolicy": "wire.types",
    "TextDelta": "wire.types",
    "ThoughtDelta": "wire.types",
    "ToolCallRequest": "wire.types",
    "Usage": "wire.types",
    "UsageReport": "wire.types",
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
    from .base.errors import ERROR_CODES, AgentError, AgentErrorInfo, ToolError
    from .base.events import EVENT_TYPES, Event
    from .base.images import Image
    from .policy.gate import PermissionGate
    from .policy.options import AgentOptions, Guards
    from .policy.rules import PermissionRequest
    from .run.agent import Agent
    from .run.factory import create_agent
    from .run.handle import RunHandle
    from .run.state import RunResult
    from .store.protocol import MemoryStore, Store
    from .tools.context import ToolContext
    from .tools.decorator import tool
    from .tools.definitions import (
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
    from .tools.workspace import Workspace, WorkspaceError
    from .wire.types import (
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
