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

from .base.markers import hookimpl
from .base.version import PLUGIN_API_VERSION

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
    "ChatHostBase",
    "CheckpointError",
    "ClaudeDialect",
    "CommandParse",
    "ConfigError",
    "ControlFiles",
    "DynamicWord",
    "Event",
    "FormError",
    "FormField",
    "GlobWord",
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
    "SessionBusy",
    "SessionInfo",
    "SettingsError",
    "SimpleCommand",
    "SlashCommand",
    "SlashCommandFailed",
    "Store",
    "StoreError",
    "ToolAnnotations",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolKind",
    "ToolPresentation",
    "ToolResult",
    "UnknownSession",
    "UnknownSlashCommand",
    "Workspace",
    "WorkspaceError",
    "WorkspacePath",
    "WorkspaceRaceError",
    "batch_error_result",
    "check_form",
    "child_env",
    "collect_slash_commands",
    "create_agent",
    "fork_session",
    "form_fields",
    "hookimpl",
    "is_secret_name",
    "lease_decision",
    "looks_secret",
    "new_session_id",
    "open_store",
    "parse_command",
    "redact_url",
    "resolve_agent_settings",
    "run_batch",
    "run_batch_task",
    "run_slash_command",
    "tool",
    "url_host",
    "user_message",
    "visible",
]

_LAZY: dict[str, str] = {
    "visible": "base.display",
    "ERROR_CODES": "base.errors",
    "AgentError": "base.errors",
    "AgentErrorInfo": "base.errors",
    "ConfigError": "base.errors",
    "NoProviderError": "base.errors",
    "ToolError": "base.errors",
    "EVENT_TYPES": "base.events",
    "Event": "base.events",
    "FormError": "base.forms",
    "FormField": "base.forms",
    "check_form": "base.forms",
    "form_fields": "base.forms",
    "Image": "base.images",
    "Message": "base.messages",
    "user_message": "base.messages",
    "BatchError": "batch.main",
    "run_batch": "batch.main",
    "batch_error_result": "batch.task",
    "run_batch_task": "batch.task",
    "BatchConfig": "batch.tasks",
    "BatchTask": "batch.tasks",
    "CommandParse": "policy.commands.model",
    "DynamicWord": "policy.commands.model",
    "GlobWord": "policy.commands.model",
    "SimpleCommand": "policy.commands.model",
    "parse_command": "policy.commands.walker",
    "ControlFiles": "policy.control_files",
    "url_host": "policy.domains",
    "AgentOptions": "policy.options",
    "ANSWERS": "policy.rules",
    "PermissionRequest": "policy.rules",
    "looks_secret": "policy.rules",
    "SandboxSettings": "policy.sandbox.settings",
    "Redactor": "policy.secrets",
    "child_env": "policy.secrets",
    "is_secret_name": "policy.secrets",
    "SettingsError": "policy.settings.files",
    "Agent": "run.agent",
    "resolve_agent_settings": "run.agent_settings",
    "CheckpointError": "run.checkpoints",
    "create_agent": "run.factory",
    "RunHandle": "run.handle",
    "new_session_id": "run.history",
    "ChatHost": "run.slash",
    "ChatHostBase": "run.slash",
    "SlashCommand": "run.slash",
    "SlashCommandFailed": "run.slash",
    "UnknownSlashCommand": "run.slash",
    "collect_slash_commands": "run.slash",
    "run_slash_command": "run.slash",
    "RunResult": "run.state",
    "UnknownSession": "store.fork",
    "fork_session": "store.fork",
    "SessionBusy": "store.lease",
    "CallRecord": "store.protocol",
    "JournalingStore": "store.protocol",
    "Lease": "store.protocol",
    "LeaseHolder": "store.protocol",
    "LeasingStore": "store.protocol",
    "ManagedStore": "store.protocol",
    "MemoryStore": "store.protocol",
    "SessionInfo": "store.protocol",
    "Store": "store.protocol",
    "StoreError": "store.protocol",
    "lease_decision": "store.protocol",
    "SQLiteStore": "store.sqlite",
    "open_store": "store.url",
    "redact_url": "store.url",
    "ToolContext": "tools.context",
    "tool": "tools.decorator",
    "TOOL_KINDS": "tools.definitions",
    "ClaudeDialect": "tools.definitions",
    "ToolAnnotations": "tools.definitions",
    "ToolDefinition": "tools.definitions",
    "ToolKind": "tools.definitions",
    "ToolPresentation": "tools.definitions",
    "ToolResult": "tools.definitions",
    "Workspace": "tools.workspace",
    "WorkspaceError": "tools.workspace",
    "WorkspacePath": "tools.workspace",
    "WorkspaceRaceError": "tools.workspace",
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
    from .base.display import visible
    from .base.errors import (
        ERROR_CODES,
        AgentError,
        AgentErrorInfo,
        ConfigError,
        NoProviderError,
        ToolError,
    )
    from .base.events import EVENT_TYPES, Event
    from .base.forms import FormError, FormField, check_form, form_fields
    from .base.images import Image
    from .base.messages import Message, user_message
    from .batch.main import BatchError, run_batch
    from .batch.task import batch_error_result, run_batch_task
    from .batch.tasks import BatchConfig, BatchTask
    from .policy.commands.model import CommandParse, DynamicWord, GlobWord, SimpleCommand
    from .policy.commands.walker import parse_command
    from .policy.control_files import ControlFiles
    from .policy.domains import url_host
    from .policy.options import AgentOptions
    from .policy.rules import ANSWERS, PermissionRequest, looks_secret
    from .policy.sandbox.settings import SandboxSettings
    from .policy.secrets import Redactor, child_env, is_secret_name
    from .policy.settings.files import SettingsError
    from .run.agent import Agent
    from .run.agent_settings import resolve_agent_settings
    from .run.checkpoints import CheckpointError
    from .run.factory import create_agent
    from .run.handle import RunHandle
    from .run.history import new_session_id
    from .run.slash import (
        ChatHost,
        ChatHostBase,
        SlashCommand,
        SlashCommandFailed,
        UnknownSlashCommand,
        collect_slash_commands,
        run_slash_command,
    )
    from .run.state import RunResult
    from .store.fork import UnknownSession, fork_session
    from .store.lease import SessionBusy
    from .store.protocol import (
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
    from .store.sqlite import SQLiteStore
    from .store.url import open_store, redact_url
    from .tools.context import ToolContext
    from .tools.decorator import tool
    from .tools.definitions import (
        TOOL_KINDS,
        ClaudeDialect,
        ToolAnnotations,
        ToolDefinition,
        ToolKind,
        ToolPresentation,
        ToolResult,
    )
    from .tools.workspace import Workspace, WorkspaceError, WorkspacePath, WorkspaceRaceError
