"""What the sandbox refused, read from a failed command's output (a read-only
path, a masked secret, the network), so the model is told why and what the
person can change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .settings import SandboxPolicy

# ---------------------------------------------------------------- explaining a refusal

_EROFS_MARKERS = ("Read-only file system", "EROFS")
_EACCES_MARKERS = ("Permission denied", "EACCES")
_QUOTED = re.compile(r"'([^'\n]*/[^'\n]*)'|\"([^\"\n]*/[^\"\n]*)\"|\u2018([^\u2019\n]*/[^\u2019\n]*)\u2019|(?<![\w.])(/[^\s:'\"]+)")
_NETWORK_MARKERS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "getaddrinfo failed",
    "nodename nor servname provided",
    "No address associated with hostname",
    "Failed to establish a new connection",
    "Could not resolve hostname",
    "ENETUNREACH",
    "EAI_AGAIN",
    "ENOTFOUND",
)
_REFUSED = ("Connection refused", "ECONNREFUSED")


def _paths_on_lines(output: str, markers: tuple[str, ...]) -> tuple[bool, list[str]]:
    """Whether a marker appears, and the paths named on the lines that carry it."""
    seen = False
    paths: list[str] = []
    for line in output.splitlines():
        if any(m in line for m in markers):
            seen = True
            for groups in _QUOTED.findall(line):
                path = next((g for g in groups if g), None)
                if path and path not in paths:
                    paths.append(path)
    return seen, paths


def _inside(path: str, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        if path == str(root) or path.startswith(f"{root}/"):
            return root
    return None


def _protected(path: str, policy: SandboxPolicy) -> Path | None:
    """The protected folder ``path`` (absolute, or relative to the workspace) lies in."""
    hit = _inside(path, policy.read_only)
    if hit is not None:
        return hit
    for ro in policy.read_only:
        try:
            rel = str(ro.relative_to(policy.workspace))
        except ValueError:
            continue
        clean = path[2:] if path.startswith("./") else path
        if clean == rel or clean.startswith(f"{rel}/"):
            return ro
    return None


def explain_refusal(output: str, policy: SandboxPolicy, *, exit_code: int | None) -> list[dict[str, Any]]:
    """What in a failed sandboxed command's ``output`` shows the sandbox
    stopped it: a list of ``{"kind": "write" | "protected" | "secret" |
    "network", "path", "message"}``, each message saying how the person can
    allow it. Empty for a successful command and for errors the sandbox does
    not cause: only its own traces count (``Read-only file system``, a
    ``Permission denied`` on a masked path, name resolution or unreachable
    network while the network is off)."""
    if exit_code == 0:
        return []
    found: list[dict[str, Any]] = []
    erofs, paths = _paths_on_lines(output, _EROFS_MARKERS)
    if erofs:
        path = paths[0] if paths else None
        protected = next((r for r in (_protected(p, policy) for p in paths) if r), None)
        if protected is None:
            protected = next((ro for ro in policy.read_only if f"{ro}/" in output), None)
        if protected is not None:
            name = protected.name
            found.append({
                "kind": "protected",
                "path": path,
                "message": (
                    f"the sandbox stopped a write to {name} ({path or protected}): inside the sandbox the "
                    f"workspace's {name} is read-only, so that a command cannot plant hooks or settings that Smoke "
                    "or git later run outside it"
                    + (" (stage and commit with the git tools, git_add and git_commit)" if name == ".git" else "")
                    + f". The user can make it writable by adding `{name}` to `sandbox.allow_write` in their "
                    "trusted settings"
                ),
            })
        else:
            where = f" ({path})" if path else ""
            found.append({
                "kind": "write",
                "path": path,
                "message": (
                    f"the sandbox stopped a write outside the workspace{where}: everything but the workspace is "
                    "read-only for commands. If the command really needs to write there, the user can add the "
                    "folder to `sandbox.allow_write` in their trusted settings (~/.config/smoke/config.yaml or "
                    "create_agent(sandbox=...)); otherwise write inside the workspace (or /tmp, which is private "
                    "and discarded)"
                ),
            })
    _, denied = _paths_on_lines(output, _EACCES_MARKERS)
    secret = next((p for p in denied if _inside(p, policy.masked)), None)
    if secret:
        found.append({
            "kind": "secret",
            "path": secret,
            "message": (
                f"{secret} is hidden by the sandbox (credentials and Smoke's own settings are masked: folders "
                "look empty, files are empty and read-only). Do not try to reach it another way; if the task "
                "needs it, ask the user"
            ),
        })
    if not policy.network:
        hit = next((x for x in _NETWORK_MARKERS if x in output), None)
        if hit is None and any(x in output for x in _REFUSED):
            hit = "Connection refused"
        if hit:
            extra = (
                " (servers on this machine's 127.0.0.1 are not reachable either: the sandbox has its own loopback)"
                if hit == "Connection refused"
                else ""
            )
            found.append({
                "kind": "network",
                "path": None,
                "message": (
                    f"the sandbox has no network ('{hit}'){extra}. The user can allow it with "
                    "`sandbox.network: true` in their trusted settings (~/.config/smoke/config.yaml or "
                    "create_agent(sandbox={'network': True})); do not retry the same command until they do"
                ),
            })
    return found
