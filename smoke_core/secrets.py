"""The secrets door: child environments without provider keys, and redaction.

The implementation is in :mod:`smoke_core.policy.secrets`; this module is
what plugins and applications import (docs/compatibility.md).
"""

from __future__ import annotations

from .policy.secrets import (
    KNOWN_SECRET_VARS,
    MASK,
    MIN_SECRET_LENGTH,
    Redactor,
    child_env,
    is_secret_name,
    redact,
    register_secret,
    secret_env_names,
)

__all__ = [
    "KNOWN_SECRET_VARS",
    "MASK",
    "MIN_SECRET_LENGTH",
    "Redactor",
    "child_env",
    "is_secret_name",
    "redact",
    "register_secret",
    "secret_env_names",
]
