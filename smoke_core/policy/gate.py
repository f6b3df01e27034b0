"""The permission gate: who may run what without asking a person.

Rules (:mod:`smoke_core.policy.rules`) decide first — managed deny > any deny
> ask > allow — then the mode (``ask-default``, ``accept-edits``, ``plan``,
``allow-all``, ``deny-all`` or a callable); secret-looking paths escalate to
ask. In ``plan`` mode nothing but a read-only tool runs, whatever the rules. A command tool's call is
decided on the parse of its command (:mod:`.command_rules`); a write to a
control file (:mod:`.control_files`) is never allowed without a person or an
exact rule. A request that asks waits for a person's answer through the
run's pauses.
"""

from __future__ import annotations

import inspect
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .commands.model import CommandParse

from .command_rules import ToolRules, Verdict, compile_rules
from .control_files import ControlFiles
from .rules import (
    PERMISSION_MODES,
    Decision,
    PermissionRequest,
    PermissionRule,
    RequestView,
    RuleAction,
    ValueMode,
    call_background,
    call_env,
    call_workdir,
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
    ``"accept-edits"`` (file edits inside the workspace allowed too, commands
    and the rest ask), ``"plan"`` (read-only tools run, every other tool call is
    refused whatever the rules say, until a person approves a plan:
    :mod:`smoke_core.run.plan`), ``"allow-all"``, ``"deny-all"`` (read-only
    tools run, everything else is denied without asking: a read-only agent), or a callable ``(request) -> "allow" |
    "deny" | "ask" | None`` (sync or async; None falls back to
    ``ask-default``). ``auto_approve=True`` turns every *ask* of the mode into
    *allow* (an *ask* rule still asks).

    ``rules`` (:class:`PermissionRule` or rule strings, taken as allow rules)
    are checked first: managed deny > any deny > ask > allow > the mode. A
    call touching a secret-looking path (``.env``, keys, ``.ssh/``; checked
    on the path as written and with symlinks resolved inside ``workspace``)
    asks even when a wildcard allow rule, ``allow_run`` or the read-only
    default would allow it. A write to a control file (``.smoke/``, ``.git/``,
    ``.mcp.json``, … and the managed ``control_files``) is never allowed but
    by a person or an exact allow rule. ``tools`` looks a tool up by name
    (for its ``permission_key``).
    """

    def __init__(
        self,
        mode: str | Callable[..., Any] = "ask-default",
        *,
        auto_approve: bool = False,
        rules: Iterable[PermissionRule | str] = (),
        workspace: str | os.PathLike[str] | None = None,
        tools: Callable[[str], Any] | None = None,
        control_files: Iterable[str] = (),
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
        #: which workspace paths are control files
        self.control_files = ControlFiles(control_files)
        self.rules: list[PermissionRule] = []
        self._command_rules: dict[str, ToolRules] = {}
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
        self._command_rules.clear()
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

    # ------------------------------------------------------------ commands

    def is_command(self, request: PermissionRequest) -> bool:
        """True for a command tool's call (its rules are matched on the parse of its command)."""
        return request.kind == "tool" and request.permission_value is not None and self.value_mode(request) == "command"

    def command_rules(self, tool_name: str) -> ToolRules:
        """``tool_name``'s rules compiled as command patterns (cached until a rule is added)."""
        compiled = self._command_rules.get(tool_name)
        if compiled is None:
            compiled = self._command_rules[tool_name] = compile_rules(self.rules, tool_name)
        return compiled

    def command_parse(self, request: PermissionRequest) -> CommandParse:
        """The parse of a command tool's call, made once per call (``request.command_parse``)."""
        if request.command_parse is None:
            from .commands.walker import parse_command

            assert request.permission_value is not None
            request.command_parse = parse_command(
                request.permission_value, self.workspace, workdir=call_workdir(request), control=self.control_files)
        return request.command_parse

    def input_problem(self, request: PermissionRequest) -> str | None:
        """Why a command tool's call is refused outright (before any rule or
        person sees it), or None: an ``env`` variable that changes how the
        shell, the loader or an interpreter starts, unless an allow or ask rule
        names it; a ``workdir`` outside the workspace."""
        if not self.is_command(request):
            return None
        from .commands.variables import is_dangerous_var, why_dangerous

        env = call_env(request)
        refused = [name for name, _ in env if is_dangerous_var(name)]
        if refused:
            tool = self.command_rules(request.tool_name)
            refused = [name for name in refused if not tool.names_variable(name)]
        if refused:
            whys = "; ".join(f"{name}: {why_dangerous(name)}" for name in refused)
            programs = [argv[0] for argv in self.command_parse(request).commands if argv]
            example = f"{refused[0]}=… {programs[0] if programs else 'cmd'} *"
            return (f"env {', '.join(refused)} refused ({whys}), so it could run what nobody approved. "
                    f"Leave it out of env (write the assignment in the command itself if it is needed: it is "
                    f"shown and checked there); a person can allow it with a rule that names it, such as "
                    f"{request.tool_name}({example})")
        workdir = call_workdir(request)
        if workdir is not None and self.workspace is not None:
            root = str(self.workspace)
            real = os.path.realpath(os.path.join(root, os.path.expanduser(workdir)))
            if real != root and not real.startswith(root.rstrip("/") + "/"):
                return (f"workdir {workdir!r} is outside the workspace {root} (it resolves to {real}); commands "
                        f"start only inside the workspace: give a folder inside it, relative to its root")
        return None

    def rule_problems(self, tool_names: Iterable[str]) -> list[str]:
        """Warnings for rules that cannot work: a command rule whose pattern is
        not one simple command (its deny / ask rules make every command ask)."""
        out: list[str] = []
        seen: set[str] = set()
        for name in tool_names:
            if value_mode(getattr(self._tools(name), "kind", None) if self._tools else None,
                          self.permission_key(name)) != "command":
                continue
            for rule, why in self.command_rules(name).broken:
                if rule.text in seen:
                    continue
                seen.add(rule.text)
                effect = ("it never allows anything" if rule.action == "allow"
                          else f"every {name} call asks until it is fixed")
                out.append(f"{rule.describe()} cannot match any command: {why}; {effect}")
            for pattern, rule in self.command_rules(name).allow.all:
                program = pattern.first if isinstance(pattern.first, str) else None
                if program in _LOOKED_THROUGH and len(pattern.tokens) > 2 and rule.text not in seen:
                    seen.add(rule.text)
                    out.append(f"{rule.describe()} names {program}, which is looked through to the command it "
                               f"runs: it allows nothing when {program} runs a command; allow that command "
                               f"instead (e.g. {name}(pytest *) covers `{program} … pytest -q`)")
        return out

    # ------------------------------------------------------------ "always"

    def rules_for(self, request: PermissionRequest, *, absolute: bool = False,
                  action: Literal["allow", "deny"] = "allow") -> list[str]:
        """The rules "always" writes for ``request``: for a command tool one
        per simple command not yet allowed (exact argv, the call's ``env`` in
        front, ``&`` for a background command; none when the parse cannot see
        through the command); otherwise :func:`rule_for`'s one rule."""
        if self.is_command(request):
            from .command_rules import rules_for

            return rules_for(self.command_parse(request), request.tool_name, self.command_rules(request.tool_name),
                             env=call_env(request), background=call_background(request), action=action)
        return [self.rule_for(request, absolute=absolute)]

    def rule_for(self, request: PermissionRequest, *, absolute: bool = False) -> str:
        """:func:`rule_for` with this gate's workspace and the tool's ``permission_key``
        (for a command tool: :meth:`rules_for`, ``", "``-joined)."""
        if self.is_command(request):
            return ", ".join(self.rules_for(request, absolute=absolute))
        return rule_for(request, workspace=self.workspace, permission_key=self.permission_key(request.tool_name),
                        absolute=absolute)

    # ------------------------------------------------------------ matching

    def matching_rule(self, request: PermissionRequest) -> PermissionRule | None:
        """The rule that decides ``request`` by precedence, or None (for a
        command tool: the first rule of the decision on its parse)."""
        if request.kind != "tool" or not self.rules:
            return None
        if self.is_command(request):
            return self._command_verdict(request).rule
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

    def _command_verdict(self, request: PermissionRequest) -> Verdict:
        from .command_rules import decide_command

        return decide_command(request, self.command_parse(request), self.command_rules(request.tool_name))

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

    def control_file(self, request: PermissionRequest) -> str | None:
        """``"<path>: <what it controls>"`` when a file tool's call writes, edits,
        deletes or moves a control file (as written or with symlinks resolved), else None."""
        if request.kind != "tool" or request.read_only or self.value_mode(request) != "path":
            return None
        values = [v for v in (request.permission_value, *paths_in(request.input), *_move_paths(request.input)) if v]
        for value in dict.fromkeys(values):
            for rel in path_forms(value, self.workspace).relative:
                what = self.control_files.what(rel) if rel is not None else None
                if what is not None:
                    shown = value if rel in (value, value.lstrip("./")) else f"{value} (resolves to {rel})"
                    return f"{shown}: {what}"
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
        """True when the pending request asks because of an *ask* rule, managed
        settings or a control file (``--yes`` does not answer those)."""
        return tool_call_id in self._rule_asks

    def take_pending(self, tool_call_id: str) -> PermissionRequest | None:
        self._rule_asks.discard(tool_call_id)
        return self.pending.pop(tool_call_id, None)

    # ------------------------------------------------------------ the decision

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
    # deny rule (managed or not: ``by_rule``), a secret-looking path, or a guarded control
    # file (``_decide`` returns its ask with ``by_rule`` True, so it is excluded here too).

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
        """``(decision, by_rule)``: by_rule is an ask no ``auto_approve`` answers."""
        if self.mode == "plan" and request.kind == "tool" and not request.read_only:
            request.reason = PLAN_REFUSAL  # before any rule: in plan mode nothing changes, allowed or not
            return "deny", True
        command = self.is_command(request)
        guard: str | None = None  # why this call may not be allowed without a person
        exact = False  # an exact allow rule decided (it may cover a secret path or a control file)
        rule_says: Decision | None = None
        if command:
            # a command's writes to control files are the sandbox's to stop (it keeps them read-only);
            # the parse only keeps allow rules from covering a redirection into one
            verdict = self._command_verdict(request)
            if verdict.action in ("deny", "ask") and verdict.by_rule:
                request.reason = verdict.reason
                return verdict.action, True
            if verdict.reason:
                request.reason = verdict.reason
            if verdict.action == "allow":
                rule_says, exact = "allow", verdict.exact
        elif request.kind == "tool":
            rule = self.matching_rule(request)
            if rule is not None and rule.action == "deny":
                request.reason = f"denied by {rule.describe()}"
                return "deny", True
            if rule is not None and rule.action == "ask":
                request.reason = f"asks by {rule.describe()}"
                return "ask", True
            if rule is not None:
                rule_says, exact = "allow", rule.exact
            control = self.control_file(request)
            if control is not None:
                guard = f"writes a control file: {control}"
        secret = self.secret_path(request) if request.kind == "tool" else None
        decision: Any = None
        if rule_says == "allow":
            if secret and not exact:
                request.reason = (f"touches a secret-looking path: {secret} (the wildcard allow rule does not "
                                  f"cover secrets)")
                decision = "ask"
            else:
                decision = "allow"
        elif request.scope and request.scope in self.allowed_for_run:
            if secret:
                request.reason = f"touches a secret-looking path: {secret}"
                decision = "ask"
            else:
                decision = "allow"
        else:
            decision = await self._mode(request, secret)
        if decision == "deny":
            return "deny", False
        # The one place where "never allowed without a person" is decided: a
        # control file is covered only by an exact allow rule, never by a
        # wildcard, "allow for this run", the mode, the callable or auto_approve.
        # (A command hook's allow belongs after this check, never before it.)
        if guard is not None and not (rule_says == "allow" and exact):
            request.reason = f"{guard}. Only a person, or an exact allow rule for this path, can allow it"
            return "ask", True
        if decision == "ask":
            return self._auto(request), False
        return decision, False

    async def _mode(self, request: PermissionRequest, secret: str | None) -> Decision:
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
        elif self.mode == "accept-edits" and self._edits_inside(request, secret):
            decision = "allow"  # a control file still asks (the guard in _decide)
        if decision is None:
            decision = self._default(request, secret)
        return decision  # type: ignore[no-any-return]

    def _edits_inside(self, request: PermissionRequest, secret: str | None) -> bool:
        """True for a file edit (``kind="edit"``) whose every path is inside the workspace, as
        written and with symlinks resolved, and none secret-looking (what ``accept-edits`` allows)."""
        if request.kind != "tool" or request.tool_kind != "edit" or secret or self.workspace is None:
            return False
        values = [v for v in (request.permission_value, *paths_in(request.input)) if v]
        if values:
            return all(None not in path_forms(v, self.workspace).relative for v in values)
        # no path the gate can see (a patch names its files inside its text): a secret-looking word still asks
        for value in request.input.values():
            if isinstance(value, str):
                for token in value.replace(":", " ").split():
                    if looks_secret(token) or looks_secret(os.path.normpath(token)):
                        return False
        return True

    def _auto(self, request: PermissionRequest) -> Decision:
        return "allow" if self.auto_approve else "ask"

    def _default(self, request: PermissionRequest, secret: str | None) -> Decision:
        if request.kind == "tool" and request.read_only:
            if secret:
                request.reason = f"reads a secret-looking path: {secret}"
                return "ask"
            return "allow"
        return "ask"


#: why plan mode refuses a call (the model reads it as the denial's reason)
PLAN_REFUSAL = ("plan mode is on: only read-only tools run until the person approves your plan; explore with "
                "read-only tools, then call exit_plan_mode with the plan (when that tool is not offered, end your "
                "turn with the plan as your answer)")

#: wrappers an allow rule never needs (the parse looks through them to what they run)
_LOOKED_THROUGH = frozenset(("env", "command", "builtin", "exec", "time", "nice", "nohup", "timeout", "stdbuf",
                             "xargs", "setsid", "sh", "bash", "zsh", "dash", "ksh"))

#: input keys of a move-like tool that name a path
_MOVE_KEYS = ("source", "destination", "dest", "new_path", "old_path", "to", "from")


def _move_paths(input: dict[str, Any]) -> list[str]:
    return [v for k in _MOVE_KEYS if isinstance(v := input.get(k), str)]
