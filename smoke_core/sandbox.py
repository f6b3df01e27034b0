"""The sandbox door: the OS sandbox (bubblewrap) commands run in (docs/sandbox.md).

The implementation is in :mod:`smoke_core.policy.sandbox`; this module is
what plugins and applications import (docs/compatibility.md).
"""

from __future__ import annotations

from .policy.sandbox.bwrap import sandbox_env
from .policy.sandbox.launch import Launch, prepare, spawn, wrap
from .policy.sandbox.probe import (
    SandboxStatus,
    available,
    find_bwrap,
    status,
    user_namespace_settings,
)
from .policy.sandbox.refusals import explain_refusal
from .policy.sandbox.settings import (
    HOME_SECRETS,
    INSTALL_HINT,
    PACKAGE,
    PROTECTED_IN_WORKSPACE,
    SAFE_ENV,
    SandboxMode,
    SandboxPolicy,
    SandboxSettings,
    SandboxUnavailable,
)

__all__ = [
    "HOME_SECRETS",
    "INSTALL_HINT",
    "PACKAGE",
    "PROTECTED_IN_WORKSPACE",
    "SAFE_ENV",
    "Launch",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxSettings",
    "SandboxStatus",
    "SandboxUnavailable",
    "available",
    "explain_refusal",
    "find_bwrap",
    "prepare",
    "sandbox_env",
    "spawn",
    "status",
    "user_namespace_settings",
    "wrap",
]
