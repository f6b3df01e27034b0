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
from ._version import PLUGIN_API_VERSION

__all__ = [
    "ANSWERS",
    "ERROR_CODES",
    "EVENT_TYPES",
    "PLUGIN_API_VERSION",
    "TOOL_KINDS",
    "Agent",
    "AgentError",
    "AgentErrorInfo",
    "AgentOptions",
    "BatchConfig",
    "BatchError",
    "BatchTask",
    "CallRecord",
    "ChatHost",
    "ConfigError",
    "Event",
    "Image",
    "JournalingStore",
    "Lease",
    "LeaseHolder",
    "LeasingStore",
    "ManagedStore",
    "MemoryStore",
    "Message",
    "NoProviderError",
    "PermissionRequest",
    "Redactor",
    "RunHandle",
    "RunResult",
    "SQLiteStore",
    "SandboxSettings",
    "SessionInfo",
    "SettingsError",
    "SlashCommand",
    "Store",
    "StoreError",
    "ToolAnnotations",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolKind",
    "ToolPresentation",
    "ToolResult",
    "Workspace",
    "WorkspaceError",
    "WorkspacePath",
    "WorkspaceRaceError",
    "batch_error_result",
    "child_env",
    "create_agent",
    "hookimpl",
    "is_secret_name",
    "lease_decision",
    "looks_secret",
    "new_session_id",
    "open_store",
    "redact_url",
    "resolve_agent_settings",
    "run_batch",
    "run_batch_task",
    "tool",
    "user_message",
    "visible",
]

_LAZY: dict[str, str] = {
    "ANSWERS": "_permissions",
    "PermissionRequest": "_permissions",
    "looks_secret": "_permissions",
    "ERROR_CODES": "_errors",
    "AgentError": "_errors",
    "AgentErrorInfo": "_errors",
    "ToolError": "_errors",
    "EVENT_TYPES": "_events",
    "Event": "_events",
    "TOOL_KINDS": "_tools",
    "ToolAnnotations": "_tools",
    "ToolDefinition": "_tools",
    "ToolKind": "_tools",
    "ToolPresentation": "_tools",
    "ToolResult": "_tools",
    "tool": "_tool_decorator",
    "Agent": "_agent",
    "create_agent": "_factory",
    "new_session_id": "_agent",
    "AgentOptions": "_options",
    "Image": "_images",
    "ManagedStore": "_store",
    "CallRecord": "_store",
    "JournalingStore": "_store",
    "Lease": "_store",
    "LeaseHolder": "_store",
    "LeasingStore": "_store",
    "StoreError": "_store",
    "lease_decision": "_store",
    "open_store": "_store_url",
    "redact_url": "_store_url",
    "BatchConfig": "_batch_tasks",
    "BatchTask": "_batch_tasks",
    "BatchError": "_batch_main",
    "run_batch": "_batch_main",
    "batch_error_result": "_batch_task",
    "run_batch_task": "_batch_task",
    "MemoryStore": "_store",
    "SessionInfo": "_store",
    "Store": "_store",
    "SQLiteStore": "_sqlite_store",
    "Message": "_messages",
    "user_message": "_messages",
    "Redactor": "secrets",
    "child_env": "secrets",
    "is_secret_name": "secrets",
    "RunHandle": "_run",
    "RunResult": "_run",
    "SandboxSettings": "sandbox",
    "SettingsError": "settings",
    "ToolContext": "_context",
    "Workspace": "_workspace",
    "WorkspaceError": "_workspace",
    "WorkspacePath": "_workspace",
    "WorkspaceRaceError": "_workspace",
    "ConfigError": "_config",
    "NoProviderError": "_config",
    "resolve_agent_settings": "_config",
    "visible": "display",
    "ChatHost": "_slash",
    "SlashCommand": "_slash",
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
    from ._agent import Agent, new_session_id
    from ._batch_main import BatchError, run_batch
    from ._batch_task import batch_error_result, run_batch_task
    from ._batch_tasks import BatchConfig, BatchTask
    from ._config import ConfigError, NoProviderError, resolve_agent_settings
    from ._context import ToolContext
    from ._errors import ERROR_CODES, AgentError, AgentErrorInfo, ToolError
    from ._events import EVENT_TYPES, Event
    from ._factory import create_agent
    from ._images import Image
    from ._messages import Message, user_message
    from ._options import AgentOptions
    from ._permissions import ANSWERS, PermissionRequest, looks_secret
    from ._run import RunHandle, RunResult
    from ._slash import ChatHost, SlashCommand
    from ._sqlite_store import SQLiteStore
    from ._store import (
        CallRecord,
        JournalingStore,
        Lease,
        LeaseHolder,
        LeasingStore,
        ManagedStore,
        MemoryStore,
        SessionInfo,
        Store,
        StoreError,
        lease_decision,
    )
    from ._store_url import open_store, redact_url
    from ._tool_decorator import tool
    from ._tools import (
        TOOL_KINDS,
        ToolAnnotations,
        ToolDefinition,
        ToolKind,
        ToolPresentation,
        ToolResult,
    )
    from ._workspace import Workspace, WorkspaceError, WorkspacePath, WorkspaceRaceError
    from .display import visible
    from .sandbox import SandboxSettings
    from .secrets import Redactor, child_env, is_secret_name
    from .settings import SettingsError
