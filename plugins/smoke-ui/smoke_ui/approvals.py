"""What an approval card offers besides *allow* and *deny*: the "Always
allow" answer, which writes an allow rule to a settings file.

The card shows the rule **exactly as it will be written** and the file it goes
to, for each place the person may choose:

- ``local``: ``<workspace>/.smoke/config.local.yaml`` with the event's
  ``suggested_rule`` (paths relative to the workspace). Offered only when the
  folder is trusted: an untrusted folder's own settings files are not read, so
  a rule there would not be honoured (the same choice ``smoke run`` makes).
- ``user``: the person's settings file, with the event's
  ``suggested_rule_user`` (core writes path rules there with the folder's
  full path, because that file applies to every folder). The answer is
  refused when the page sends a rule other than the one shown for its choice.

MCP server starts get no "always" offer (core refuses it: allow them with
*Allow* or *Allow for this run*).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCOPES", "always_offer", "rule_pattern"]

SCOPES = ("local", "user")

def rule_pattern(rule: str) -> tuple[str, str | None]:
    """``("write_file", "src/app.py")`` for ``write_file(src/app.py)``;
    ``(name, None)`` for a rule without an argument pattern."""
    if rule.endswith(")") and "(" in rule:
        name, _, rest = rule.partition("(")
        return name, rest[:-1]
    return rule, None


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
    suggested_user = data.get("suggested_rule_user")
    if not isinstance(suggested_user, str) or not suggested_user:
        suggested_user = suggested
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
            "rule": suggested_user,
            "file": str(user_file),
            "available": True,
            "note": None,
        },
    }
