"""Command rules in the permission gate: a command tool's call (``run_command``,
``run_test``, any tool whose ``permission_key`` is a command) is decided on
the parse of its command (:mod:`.commands`), with the call's ``env`` and
``background`` part of what a rule must name, and the rules "always" writes
for it (one per simple command).

docs/security.md ("How command rules are matched") is the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .rules import call_background, call_env

if TYPE_CHECKING:
    from .commands.decide import CommandDecision, RuleSet
    from .commands.model import CommandParse
    from .rules import PermissionRequest, PermissionRule

@dataclass(slots=True)
class ToolRules:
    """One tool's rules, compiled: pattern rules by action, rules without a
    pattern, and rules whose pattern is not a command pattern (with why)."""

    deny: RuleSet[PermissionRule]
    ask: RuleSet[PermissionRule]
    allow: RuleSet[PermissionRule]
    bare: dict[str, list[PermissionRule]]
    broken: list[tuple[PermissionRule, str]]

    def names_variable(self, name: str) -> bool:
        """True when an allow or ask rule names ``name`` (``BASH_ENV=… pytest *``)."""
        return any(name in pat.env_names for rs in (self.allow, self.ask) for pat, _ in rs.all)


def compile_rules(rules: Sequence[PermissionRule], tool_name: str) -> ToolRules:
    from .commands.decide import RuleSet
    from .commands.patterns import PatternError, compile_pattern

    entries: dict[str, list[Any]] = {"deny": [], "ask": [], "allow": []}
    bare: dict[str, list[PermissionRule]] = {"deny": [], "ask": [], "allow": []}
    broken: list[tuple[PermissionRule, str]] = []
    for rule in sorted(rules, key=lambda r: not r.managed):  # managed first: it is named when both match
        if not rule.matches_tool(tool_name):
            continue
        if rule.pattern is None:
            bare[rule.action].append(rule)
            continue
        try:
            entries[rule.action].append((compile_pattern(rule.pattern), rule))
        except PatternError as exc:
            broken.append((rule, str(exc)))
    return ToolRules(RuleSet(entries["deny"]), RuleSet(entries["ask"]), RuleSet(entries["allow"]), bare, broken)


Action = Literal["deny", "ask", "allow"]


@dataclass(slots=True)
class Verdict:
    """What the rules say about a command call. ``action`` None: the mode decides."""

    action: Action | None
    reason: str | None = None
    #: an ask a person must answer (``auto_approve`` / ``--yes`` do not)
    by_rule: bool = False
    #: allow: only exact rules allowed it (an exact rule may cover a secret path)
    exact: bool = False
    #: a control file the command redirects into (no allow rule covers it; the sandbox keeps it read-only)
    control: str | None = None
    #: the rule that decided (deny or ask), if one did
    rule: PermissionRule | None = None


def decide_command(request: PermissionRequest, parse: CommandParse, tool: ToolRules) -> Verdict:
    from .commands.decide import decide

    env = call_env(request)
    background = call_background(request)
    broken = [rule for rule, _ in tool.broken if rule.action != "allow"]
    if tool.bare["deny"]:
        return Verdict("deny", f"denied by {tool.bare['deny'][0].describe()}", by_rule=True,
                       rule=tool.bare["deny"][0])
    decision: CommandDecision[PermissionRule] = decide(
        parse, deny=tool.deny, ask=tool.ask, allow=tool.allow, env=env, background=background)
    control = next((o for o in parse.opaque if o.startswith("redirection writes a control file")), None)
    if decision.action == "deny":
        assert decision.rule is not None
        return Verdict("deny", f"denied by {decision.rule.describe()}: {decision.reason}", by_rule=True,
                       rule=decision.rule)
    if tool.bare["ask"]:
        return Verdict("ask", f"asks by {tool.bare['ask'][0].describe()}", by_rule=True, control=control,
                       rule=tool.bare["ask"][0])
    if broken:
        broken_why = next(w for r, w in tool.broken if r is broken[0])
        return Verdict("ask", f"{broken[0].describe()} cannot be read as a command pattern ({broken_why}), so every "
                              f"command asks until it is fixed", by_rule=True, control=control)
    if decision.action == "ask":
        if decision.rule is not None and not decision.blind:
            return Verdict("ask", f"asks by {decision.rule.describe()}: {decision.reason}", by_rule=True,
                           control=control, rule=decision.rule)
        if decision.rule is not None:  # a deny rule may match: a person decides
            return Verdict("ask", f"{decision.reason} {decision.rule.describe()} (the command holds words known "
                                  f"only when it runs)", by_rule=True, control=control)
        # the parse is blind (a syntax error): when deny or ask rules exist, they could not
        # see everything, so a person decides; without such rules the mode decides
        guarded = bool(tool.deny or tool.ask)
        blind = decision.reason + ("; deny and ask rules could not see all of it" if guarded else "")
        return Verdict("ask" if guarded else None, blind, by_rule=guarded, control=control)
    if decision.action == "allow":
        return Verdict("allow", exact=all(r.exact for r in decision.covering), control=control)
    if tool.bare["allow"]:
        return Verdict("allow", exact=all(r.exact for r in tool.bare["allow"]), control=control)
    why: str | None = None
    if tool.allow or parse.error or control:
        why = decision.reason if not control else f"the command writes a control file: {control}"
    return Verdict(None, why, control=control)


def rules_for(
    parse: CommandParse,
    tool_name: str,
    tool: ToolRules | None = None,
    *,
    env: Sequence[tuple[str, str]] = (),
    background: bool = False,
    action: Literal["allow", "deny"] = "allow",
) -> list[str]:
    """The rules "always" writes for this call (:func:`.commands.decide.exact_patterns`
    as ``tool_name(pattern)`` rules); commands the ``tool``'s allow rules
    cover already are left out (unless all are)."""
    from .commands.decide import exact_patterns
    from .rules import escape_glob

    patterns = exact_patterns(parse, tool.allow if tool is not None else None, env=env, background=background,
                              action=action)
    return [f"{escape_glob(tool_name)}({pattern})" for pattern in patterns]
