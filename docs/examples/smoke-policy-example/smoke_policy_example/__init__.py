"""An example policy plugin for Smoke (the one built in docs/write-a-plugin.md)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from smoke_core.plugin import hookimpl

#: The plugin API this plugin is written for: a Smoke providing another skips it, saying why.
__smoke_plugin_api__ = ">=1.0,<2"

#: What the audit hook saw, newest last (a real plugin would write to a log).
AUDIT_LOG: list[dict] = []

_SECRET = re.compile(r"(sk-[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16})")
_WRITERS = {"write_file", "edit_file", "apply_patch", "replace_lines"}


@hookimpl
def before_tool_call(tool_name, input):
    path = str(input.get("path", ""))
    if tool_name in _WRITERS and PurePosixPath(path).name.startswith(".env"):
        return {"block": True, "reason": f"writing {path} is not allowed: .env files hold secrets"}
    if tool_name == "write_file" and _SECRET.search(input.get("content", "")):
        return {"input": {**input, "content": _SECRET.sub("[REDACTED]", input["content"])}}
    return None


@hookimpl
def after_tool_call(tool_name, tool_call_id, blocked, error, duration_ms):
    AUDIT_LOG.append(
        {
            "tool": tool_name,
            "call": tool_call_id,
            "blocked": blocked,
            "error": error.code if error else None,
            "ms": round(duration_ms, 1),
        }
    )


@hookimpl
def register_tools(register):
    from smoke_core.plugin import tool

    @tool(
        read_only=True,
        presentation={"label": "Word count", "icon": "🔢", "tone": "info", "group": "text"},
    )
    def word_count(text: str) -> str:
        """Count the words in text."""
        return str(len(text.split()))

    register(word_count, group="text")
