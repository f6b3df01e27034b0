"""Rules remembered from a person's "always" answer, written to the local or
user settings file with the rest of the file kept (:func:`remember_rule`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from ..rules import parse_rule
from .files import add_to_list, local_settings_path, user_settings_path

# ---------------------------------------------------------------- remembering


def remember_rule(
    workspace: str | os.PathLike[str], rule: str, *, scope: Literal["local", "user"] = "local",
    action: Literal["allow", "deny"] = "allow",
) -> Path:
    """Append ``rule`` to the ``allow`` (or ``deny``) list of
    ``<workspace>/.smoke/config.local.yaml`` (``scope="local"``) or the user
    settings file (``scope="user"``), keeping the rest of the file. Returns
    the file written. Raises :class:`RuleError` for a rule that does not parse."""
    if scope not in ("local", "user"):
        raise ValueError(f"scope must be 'local' or 'user', got {scope!r}")
    if action not in ("allow", "deny"):
        raise ValueError(f"action must be 'allow' or 'deny', got {action!r}")
    parse_rule(rule, action, origin="remember_rule")
    path = local_settings_path(workspace) if scope == "local" else user_settings_path()
    add_to_list(path, ("permissions", action), rule)
    return path
