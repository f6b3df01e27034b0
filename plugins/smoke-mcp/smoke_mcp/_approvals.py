"""Which of a workspace's own MCP servers a person approved, by content.

A server entry from a file inside the workspace (``.mcp.json``,
``.smoke/config*.yaml``) starts only after a person approved *that entry*:
what it runs — transport, command, args, env, cwd, URL, headers, sandbox,
OAuth settings — is hashed (:func:`smoke_mcp._config.entry_digest`), and the
hash is remembered for that folder and server name in
``$XDG_STATE_HOME/smoke/mcp-approvals.json`` (``~/.local/state``), outside
every workspace, so a repository cannot approve its own servers. A new
entry, or one whose content changed, asks again whatever ``--yes``,
``permission="allow-all"`` or folder trust say. Claude Code's
``enabledMcpjsonServers`` is the model; ``smoke mcp approve NAME`` approves
one from the command line, ``smoke mcp list`` shows each entry's state.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Literal

State = Literal["approved", "new", "changed"]


def approvals_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "smoke" / "mcp-approvals.json"


def _read() -> dict[str, Any]:
    try:
        data = json.loads(approvals_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _folder(workspace: Path) -> str:
    return str(Path(workspace).resolve())


def approval_state(workspace: Path, name: str, digest: str) -> State:
    """``approved`` (this exact entry), ``changed`` (the name was approved
    with other content) or ``new``."""
    entry = (_read().get(_folder(workspace)) or {}).get(name)
    if not isinstance(entry, dict):
        return "new"
    return "approved" if entry.get("digest") == digest else "changed"


def approve(workspace: Path, name: str, digest: str, *, what: str) -> None:
    """Remember that a person approved server ``name`` of ``workspace`` with this content."""
    data = _read()
    data.setdefault(_folder(workspace), {})[name] = {"digest": digest, "what": what, "approved_at": time.time()}
    path = approvals_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def revoke(workspace: Path, name: str) -> bool:
    data = _read()
    folder = data.get(_folder(workspace)) or {}
    if name not in folder:
        return False
    del folder[name]
    path = approvals_file()
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return True


def describe_state(state: State, name: str) -> str:
    if state == "approved":
        return "approved"
    if state == "changed":
        return f"changed since you approved it: asks again (smoke mcp approve {name})"
    return f"not approved yet: asks before it starts (smoke mcp approve {name})"
