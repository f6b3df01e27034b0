"""The door for plugin authors: everything a plugin needs, in one import.

A plugin (tool group, policy, front end, exporter) imports from here — and
from :mod:`smoke_core.providers` when it is a provider adapter, and
:mod:`smoke_core.testing` in its tests. Everything else in ``smoke_core`` is
implementation and may change without notice (docs/write-a-plugin.md)::

    from smoke_core.plugin import ToolContext, ToolError, ToolResult, hookimpl, tool

Names are imported on first use, so ``from smoke_core.plugin import
hookimpl`` — what a plugin module does at load time — costs only pluggy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._markers import hookimpl

__all__ = [
    "ANSWERS",
    "ERROR_CODES",
    "EVENT_TYPES",
    "TOOL_KINDS",
    "Agent",
    "AgentError",
    "AgentErrorInfo",
    "AgentOptions",
    "Event",
    "Image",
    "ManagedStore",
    "MemoryStore",
    "Message",
    "PermissionRequest",
    "Redactor",
    "RunHandle",
    "RunResult",
    "SQLiteStore",
    "SandboxSettings",
    "SessionInfo",
    "SettingsError",
    "Store",
    "ToolAnnotations",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolKind",
    "ToolPresentation",
    "ToolResult",
    "Workspace",
    "WorkspaceError",
    "child_env",
    "create_agent",
    "hookimpl",
    "is_secret_name",
    "looks_secret",
    "new_session_id",
    "tool",
    "user_message",
    "visible",
]

_LAZY: dict[str, str] = {
    "ANSWERS": "permissions",
    "PermissionRequest": "permissions",
    "looks_secret": "permissions",
    "ERROR_CODES": "errors",
    "AgentError": "errors",
    "AgentErrorInfo": "errors",
    "ToolError": "errors",
    "EVENT_TYPES": "events",
    "Event": "events",
    "TOOL_KINDS": "tools",
    "ToolAnnotations": "tools",
    "ToolDefinition": "tools",
    "ToolKind": "tools",
    "ToolPresentation": "tools",
    "ToolResult": "tools",
    "tool": "tools",
    "Agent": "agent",
    "create_agent": "agent",
    "new_session_id": "agent",
    "AgentOptions": "options",
    "Image": "_images",
    "ManagedStore": "store",
    "MemoryStore": "store",
    "SessionInfo": "store",
    "Store": "store",
    "SQLiteStore": "sqlite_store",
    "Message": "messages",
    "user_message": "messages",
    "Redactor": "secrets",
    "child_env": "secrets",
    "is_secret_name": "secrets",
    "RunHandle": "run",
    "RunResult": "run",
    "SandboxSettings": "sandbox",
    "SettingsError": "settings",
    "ToolContext": "context",
    "Workspace": "workspace",
    "WorkspaceError": "workspace",
    "visible": "display",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smoke_core.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"smoke_core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from ._images import Image
    from .agent import Agent, create_agent, new_session_id
    from .context import ToolContext
    from .display import visible
    from .errors import ERROR_CODES, AgentError, AgentErrorInfo, ToolError
    from .events import EVENT_TYPES, Event
    from .messages import Message, user_message
    from .options import AgentOptions
    from .permissions import ANSWERS, PermissionRequest, looks_secret
    from .run import RunHandle, RunResult
    from .sandbox import SandboxSettings
    from .secrets import Redactor, child_env, is_secret_name
    from .settings import SettingsError
    from .sqlite_store import SQLiteStore
    from .store import ManagedStore, MemoryStore, SessionInfo, Store
    from .tools import (
        TOOL_KINDS,
        ToolAnnotations,
        ToolDefinition,
        ToolKind,
        ToolPresentation,
        ToolResult,
        tool,
    )
    from .workspace import Workspace, WorkspaceError
