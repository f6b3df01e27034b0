"""What an approval card offers besides *allow* and *deny*: the "Always
allow" answer, which writes an allow rule to a settings file.

The card shows the rule **exactly as it will be written** and the file it goes
to, for each place the person may choose:

- ``local``: ``<workspace>/.smoke/config.local.yaml`` with the event's
  ``suggested_rule`` (paths relative to the workspace). Offered only when the
  folder is trusted: an untrusted folder's own settings files are not read, so
  a rule there would not be honoured (the same choice ``smoke run`` makes).
- ``user``: the person's settings file. Core writes path rules there with
  the folder's full path (:meth:`smoke_core.Agent.resolve_permission`,
  ``remember="user"``), because that file applies to every folder; the user
  form is derived here from the suggested rule the same way, and the answer is
  refused when the page sends a rule other than the one derived for its
  choice. A test pins the derivation to what core writes.

MCP server starts get no "always" offer (core refuses it: allow them with
*Allow* or *Allow for this run*).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["SCOPES", "always_offer", "rule_pattern", "user_scope_rule"]

SCOPES = ("local", "user")

# How rule patterns match a tool's argument, as core decides it (smoke_core's
# value_mode): a declared permission_key naming a path or a command wins, then
# the tool's declared kind.
_PATH_FIELDS = ("path", "file", "file_path", "filename", "workdir", "target")
_PATH_KEYS = frozenset({*_PATH_FIELDS, "dir", "directory", "folder"})
_COMMAND_KEYS = frozenset({"command", "cmd"})
_PATH_KINDS = frozenset({"read", "edit", "delete", "move"})
_GLOB_CHARS = re.compile(r"([\\*?\[\]])")


def _escape_glob(text: str) -> str:
    return _GLOB_CHARS.sub(r"\\\1", text)


def _is_path_rule(tool_kind: str | None, permission_key: str | None) -> bool:
    if permission_key in _PATH_KEYS:
        return True
    if permission_key in _COMMAND_KEYS:
        return False
    return tool_kind in _PATH_KINDS


def rule_pattern(rule: str) -> tuple[str, str | None]:
    """``("write_file", "src/app.py")`` for ``write_file(src/app.py)``;
    ``(name, None)`` for a rule without an argument pattern."""
    if rule.endswith(")") and "(" in rule:
        name, _, rest = rule.partition("(")
        return name, rest[:-1]
    return rule, None


def user_scope_rule(suggested: str, *, tool_kind: str | None, permission_key: str | None,
                    workspace_root: str | os.PathLike[str]) -> str:
    """The rule core writes to the user settings for a request whose
    ``suggested_rule`` (the local form) is ``suggested``: a path inside the
    workspace becomes the full path; anything else is the same rule."""
    name, pattern = rule_pattern(suggested)
    if pattern is None or not _is_path_rule(tool_kind, permission_key) or pattern.startswith("/"):
        return suggested
    root = _escape_glob(str(Path(workspace_root).resolve()))
    relative = pattern[2:] if pattern.startswith("./") else pattern
    if relative == ".":
        return f"{name}({root})"
    return f"{name}({root.rstrip('/')}/{relative})"


def always_offer(data: dict[str, Any], agent: Any) -> dict[str, Any] | None:
    """What the card's "Always allow" shows for a ``permission.required``
    event, or ``None`` when it offers none (an MCP server start, no rule).

    ``{"default": scope, "broad": bool, "local": {...}, "user": {...}}`` where
    each scope is ``{"rule", "file", "available", "note"}``."""
    from smoke_core.settings import local_settings_path, user_settings_path

    suggested = data.get("suggested_rule")
    if data.get("kind", "tool") != "tool" or not isinstance(suggested, str) or not suggested:
        return None
    workspace = getattr(agent, "workspace", None)
    root = getattr(workspace, "root", None)
    if root is None:
        return None
    tool_name = str(data.get("tool_name") or "")
    registry = getattr(agent, "registry", None)
    tool = registry.get(tool_name) if registry is not None else None
    permission_key = getattr(tool, "permission_key", None)
    tool_kind = data.get("tool_kind")
    trusted = bool(getattr(getattr(agent, "options", None), "workspace_trusted", True))
    local_file = local_settings_path(root)
    user_file = user_settings_path()
    _, pattern = rule_pattern(suggested)
    return {
        "default": "local" if trusted else "user",
        # a rule without an argument allows every call of the tool, whatever its input
        "broad": pattern is None,
        "local": {
            "rule": suggested,
            "file": str(local_file),
            "available": trusted,
            "note": None if trusted else (
                "this folder is not trusted (smoke trust), so its .smoke/config.local.yaml is not read: "
                "a rule there would not be honoured"
            ),
        },
        "user": {
            "rule": user_scope_rule(suggested, tool_kind=tool_kind if isinstance(tool_kind, str) else None,
                                    permission_key=permission_key, workspace_root=root),
            "file": str(user_file),
            "available": True,
            "note": None,
        },
    }
