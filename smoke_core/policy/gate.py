"""The permission gate: who may run what without asking a person.

Rules (:mod:`smoke_core.policy.rules`) decide first — managed deny > any deny
> ask > allow — then the mode (``ask-default``, ``allow-all``, ``deny-all`` or
a callable); secret-looking paths escalate to ask. A request that asks waits
for a person's answer through the run's pauses.
"""

from __future__ import annotations

import inspect
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .rules import (
    PERMISSION_MODES,
    Decision,
    PermissionRequest,
    PermissionRule,
    RequestView,
    RuleAction,
    ValueMode,
    looks_secret,
    parse_rule,
    path_forms,
    paths_in,
    precedence,
    rule_for,
    value_mode,
)


class PermissionGate:
    """Decides allow / deny / ask for each request.

    ``mode`` is ``"ask-default"`` (read-only auto-allowed, the rest asks),
    ``"allow-all"``, ``"deny-all"`` (read-only tools run, everything else is
    denied without asking: a read-only agent), or a callable ``(request) -> "allow" |
    "deny" | "ask" | None`` (sync or async; None falls back to
    ``ask-default``). ``auto_approve=True`` turns every *ask* of the mode into
    *allow* (an *ask* rule still asks).

    ``rules`` (:class:`PermissionRule` or rule strings, taken as allow rules)
    are checked first: managed deny > any deny > ask > allow > the mode. A
    call touching a secret-looking path (``.env``, keys, ``.ssh/``; checked
    on the path as written and with symlinks resolved inside ``workspace``)
    asks even when a wildcard allow rule, ``allow_run`` or the read-only
    default would allow it. ``tools`` looks a tool up by name (for its
    ``permission_key``).
    """

    def __init__(
        self,
        mode: str | Callable[..., Any] = "ask-default",
        *,
        auto_approve: bool = False,
        rules: Iterable[PermissionRule | str] = (),
        workspace: str | os.PathLike[str] | None = None,
        tools: Callable[[str], Any] | None = None,
    ) -> None:
        if isinstance(mode, str) and mode not in PERMISSION_MODES:
            raise ValueError(
                f"permission={mode!r} is not a mode; use one of {', '.join(PERMISSION_MODES)} or a callable"
            )
        if not isinstance(mode, str) and not callable(mode):
            raise ValueError(f"permission must be one of {', '.join(PERMISSION_MODES)} or a callable, got {mode!r}")
        if not isinstance(auto_approve, bool):
            raise ValueError(f"auto_approve must be True or False here (a list of rules is passed as rules=), got {auto_approve!r}")
        self.mode = mode
        self.auto_approve = auto_approve
        self.allowed_for_run: set[str] = set()
        self._workspace_arg = workspace
        self._workspace: Path | None = None
        self._tools = tools
        self.rules: list[PermissionRule] = []
        for rule in rules:
            self.add_rule(rule)
        #: requests that got *ask*, by tool_call_id (for "allow_always")
        self.pending: OrderedDict[str, PermissionRequest] = OrderedDict()
        self._rule_asks: set[str] = set()

    def add_rule(self, rule: PermissionRule | str, action: RuleAction = "allow", *, origin: str = "create_agent") -> PermissionRule:
        """Add a rule to this gate (and so to every later call of this agent)."""
        if not isinstance(rule, PermissionRule):
            rule = parse_rule(rule, action, origin=origin)
        self.rules.append(rule)
        return rule

    @property
    def workspace(self) -> Path | None:
        """The resolved workspace (resolved on first use: most gates never need it)."""
        if self._workspace is None and self._workspace_arg is not None:
            self._workspace = Path(self._workspace_arg).resolve()
        return self._workspace

    def permission_key(self, tool_name: str) -> str | None:
        if self._tools is None:
            return None
        tool = self._tools(tool_name)
        return getattr(tool, "permission_key", None)

    def value_mode(self, request: PermissionRequest) -> ValueMode:
        return value_mode(request.tool_kind, self.permission_key(request.tool_name))

    def rule_for(self, request: PermissionRequest, *, absolute: bool = False) -> str:
        """:func:`rule_for` with this gate's workspace and the tool's ``permission_key``."""
        return rule_for(request, workspace=self.workspace, permission_key=self.permission_key(request.tool_name),
                        absolute=absolute)

    def matching_rule(self, request: PermissionRequest) -> PermissionRule | None:
        """The rule that decides ``request`` by precedence, or None."""
        if request.kind != "tool" or not self.rules:
            return None
        view = RequestView(request, self.value_mode(request), self.workspace)
        best: PermissionRule | None = None
        for rule in self.rules:
            if best is not None and precedence(rule) <= precedence(best):
                continue
            if view.matches(rule):
                best = rule
        return best

    def rule_for_value(self, tool_name: str, value: str) -> PermissionRule | None:
        """The rule that decides a call of ``tool_name`` whose rule value
        (``permission_key`` argument) is ``value``, or None -- for a tool that meets a
        new value mid-call (``AgentOptions.match_rule``: web_fetch's redirects)."""
        tool = self._tools(tool_name) if self._tools is not None else None
        kind = getattr(tool, "kind", None)
        request = PermissionRequest(tool_call_id="", kind="tool", tool_name=tool_name, tool_kind=kind,
                                    permission_value=value)
        return self.matching_rule(request)

    def secret_path(self, request: PermissionRequest) -> str | None:
        """The first secret-looking path the call touches (as written or resolved), or None."""
        values = list(paths_in(request.input))
        if request.permission_value is not None and self.value_mode(request) == "path":
            values.append(request.permission_value)
        for value in values:
            if looks_secret(value):
                return value
            forms = path_forms(value, self.workspace)
            for form in forms.all_strings():
                if looks_secret(form):
                    return f"{value} (resolves to {form})" if form != value else value
        return None

    def allows_plainly(self, input: dict[str, Any]) -> bool:
        """True when :meth:`decide` would allow a read-only tool call (``kind="tool"``,
        no ``permission_value``) with this input, with nothing to check: there
        are no rules, the mode is one of ``PERMISSION_MODES`` (each allows a
        read-only call) and the input names no path (so no secret-looking one).
        False means: ask :meth:`decide`. Lets the tool pipeline skip building a
        :class:`PermissionRequest` on its common path."""
        return not self.rules and isinstance(self.mode, str) and not paths_in(input)

    def asked_by_rule(self, tool_call_id: str) -> bool:
        """True when the pending request asks because of an *ask* rule (``--yes`` does not answer those)."""
        return tool_call_id in self._rule_asks

    def take_pending(self, tool_call_id: str) -> PermissionRequest | None:
        self._rule_asks.discard(tool_call_id)
        return self.pending.pop(tool_call_id, None)

    async def decide(self, request: PermissionRequest) -> Decision:
        decision, by_rule = await self._decide(request)
        if request.hook_decision is not None:
            decision, by_rule = self._hook_answer(request, decision, by_rule)
        if decision == "ask":
            self.pending[request.tool_call_id] = request
            self.pending.move_to_end(request.tool_call_id)
            if by_rule:
                self._rule_asks.add(request.tool_call_id)
            while len(self.pending) > 1024:
                old, _ = self.pending.popitem(last=False)
                self._rule_asks.discard(old)
        return decision

    # ---- a hook's answer (issue 30) --------------------------------------------------------
    # The one place where a hook's permission answer meets the rules. A hook may always make a
    # call ask (like an ask rule: --yes does not answer it) and may always deny (it blocks before
    # the gate). Its *allow* may only answer an ask of the MODE: never a deny (final), an ask or
    # deny rule (managed or not: ``by_rule``), a secret-looking path -- and, with issue 28's
    # guarded control files, never one of those (their ask must count as ``by_rule`` here).

    def hook_may_allow(self, request: PermissionRequest, by_rule: bool) -> bool:
        """True when a hook's *allow* may answer ``request``'s *ask* for the person."""
        return not by_rule and self.secret_path(request) is None

    def _hook_answer(self, request: PermissionRequest, decision: Decision, by_rule: bool) -> tuple[Decision, bool]:
        if decision == "deny":
            return decision, by_rule
        if request.hook_decision == "ask":
            request.reason = request.hook_reason or request.reason or "a hook asks for this call"
            return "ask", True
        if request.hook_decision == "allow" and decision == "ask":
            if self.hook_may_allow(request, by_rule):
                return "allow", False
            secret = None if by_rule else self.secret_path(request)
            if secret and not request.reason:
                request.reason = f"touches a secret-looking path: {secret} (a hook's allow does not cover it)"
        return decision, by_rule

    def hook_allows_pending(self, request: PermissionRequest) -> bool:
        """A hook answering a pending *ask* with allow (``before_permission_prompt``):
        True, and the request is no longer pending, when :meth:`hook_may_allow` says so."""
        if not self.hook_may_allow(request, self.asked_by_rule(request.tool_call_id)):
            return False
        self.take_pending(request.tool_call_id)
        return True

    # -------------------------------------------------------------------------------------------

    async def _decide(self, request: PermissionRequest) -> tuple[Decision, bool]:
        rule = self.matching_rule(request)
        if rule is not None and rule.action == "deny":
            request.reason = f"denied by {rule.describe()}"
            return "deny", True
        if rule is not None and rule.action == "ask":
            request.reason = f"asks by {rule.describe()}"
            return "ask", True
        secret = self.secret_path(request) if request.kind == "tool" else None
        if rule is not None:  # allow
            if secret and not rule.exact:
                request.reason = f"touches a secret-looking path: {secret} (the wildcard {rule.describe()} does not cover secrets)"
                return self._auto(request), False
            return "allow", False
        if request.scope and request.scope in self.allowed_for_run:
            if secret:
                request.reason = f"touches a secret-looking path: {secret}"
                return self._auto(request), False
            return "allow", False
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
            decision = self._default(request, secret)
        if decision == "ask":
            return self._auto(request), False
        return decision, False

    def _auto(self, request: PermissionRequest) -> Decision:
        return "allow" if self.auto_approve else "ask"

    def _default(self, request: PermissionRequest, secret: str | None) -> Decision:
        if request.kind == "tool" and request.read_only:
            if secret:
                request.reason = f"reads a secret-looking path: {secret}"
                return "ask"
            return "allow"
        return "ask"
