"""The permission gate: who may run what without asking a person."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

Decision = Literal["allow", "deny", "ask"]
PERMISSION_MODES = ("ask-default", "allow-all", "deny-all")

#: Answers accepted by ``agent.resolve_permission``: ``allow`` (this call),
#: ``allow_run`` (this tool — or this MCP server — for the rest of the run), ``deny``.
ANSWERS = ("allow", "allow_run", "deny")

_SECRET_NAME = re.compile(
    r"(^|/)(\.env(\..*)?|\.netrc|\.pgpass|\.npmrc|\.pypirc|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|"
    r"credentials(\.json)?|secrets?\.(ya?ml|json|toml)|.*\.(pem|key|p12|pfx|keystore|jks))$",
    re.IGNORECASE,
)
_SECRET_DIR = re.compile(r"(^|/)(\.ssh|\.aws|\.gnupg|\.kube)(/|$)")


def looks_secret(path: str) -> bool:
    """True for paths that usually hold secrets (``.env``, private keys, cloud credentials)."""
    p = path.replace("\\", "/").strip()
    return bool(_SECRET_NAME.search(p) or _SECRET_DIR.search(p))


def _paths_in(value: Any) -> list[str]:
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and k in ("path", "file", "file_path", "filename", "workdir", "target"):
                out.append(v)
            elif isinstance(v, list) and k in ("paths", "files"):
                out.extend(x for x in v if isinstance(x, str))
    return out


@dataclass(slots=True)
class PermissionRequest:
    """What the gate is asked about. ``kind`` is ``"tool"`` or ``"mcp_server"``."""

    tool_call_id: str
    kind: str
    tool_name: str
    input: dict[str, Any] = field(default_factory=dict)
    read_only: bool = False
    reason: str | None = None
    scope: str | None = None  # "allow for this run" key: tool name or "mcp:<server>"
    #: the tool's declared kind (``read``, ``edit``, ``execute``...; see ToolAnnotations)
    tool_kind: str | None = None
    #: the value permission rules match (the tool's ``permission_key`` argument), if any
    permission_value: str | None = None
    destructive: bool | None = None


class PermissionGate:
    """Decides allow / deny / ask for each request.

    ``mode`` is ``"ask-default"`` (read-only auto-allowed, the rest asks),
    ``"allow-all"``, ``"deny-all"`` (read-only tools run, everything else is
    denied without asking: a read-only agent), or a callable ``(request) -> "allow" |
    "deny" | "ask" | None`` (sync or async; None falls back to
    ``ask-default``). ``auto_approve=True`` turns every *ask* into *allow*.
    In ask-default mode a read-only call that touches a secret-looking path
    (``.env``, keys, ``.ssh/``) asks too.
    """

    def __init__(self, mode: str | Callable[..., Any] = "ask-default", *, auto_approve: bool = False) -> None:
        if isinstance(mode, str) and mode not in PERMISSION_MODES:
            raise ValueError(
                f"permission={mode!r} is not a mode; use one of {', '.join(PERMISSION_MODES)} or a callable"
            )
        self.mode = mode
        self.auto_approve = auto_approve
        self.allowed_for_run: set[str] = set()

    async def decide(self, request: PermissionRequest) -> Decision:
        if request.scope and request.scope in self.allowed_for_run:
            return "allow"
        decision: Any = None
        if callable(self.mode):
            decision = self.mode(request)
            if inspect.isawaitable(decision):
                decision = await decision
            if decision not in (None, "allow", "deny", "ask"):
                raise ValueError(f"permission callable returned {decision!r}; return 'allow', 'deny', 'ask' or None")
        elif self.mode == "allow-all":
            decision = "allow"
        elif self.mode == "deny-all":
            # a read-only agent: looking around is allowed, changing anything is not
            decision = "allow" if request.kind == "tool" and request.read_only else "deny"
        if decision is None:
            decision = self._default(request)
        if decision == "ask" and self.auto_approve:
            return "allow"
        return cast(Decision, decision)

    def _default(self, request: PermissionRequest) -> Decision:
        if request.kind == "tool" and request.read_only:
            secret = [p for p in _paths_in(request.input) if looks_secret(p)]
            if secret:
                request.reason = f"reads a secret-looking path: {secret[0]}"
                return "ask"
            return "allow"
        return "ask"
