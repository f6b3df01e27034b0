"""The decision over one parse: deny > ask > allow > the mode.

- **deny**: a deny rule matches some simple command anywhere in the parse
  (wrapper layers included). A rule that only *may* match (a word known only at
  run time, a guess behind an option a wrapper could not read) asks instead.
- **ask**: an ask rule matches or may match some simple command; a parse with a
  syntax error asks too (after the deny rules saw what it could).
- **allow**: nothing is opaque and every simple command (wrapper layers that
  only pass a command on excepted) is matched by some allow rule that also
  names each of the call's ``env`` variables and agrees on ``&`` (background).
- otherwise **default**: the permission mode decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from .model import Argv, CommandParse
from .patterns import CommandPattern, assignments_match, compile_pattern, level

T = TypeVar("T")
Action = Literal["deny", "ask", "allow", "default"]


class RuleSet(Generic[T]):
    """Compiled patterns, each with what it stands for (a permission rule),
    indexed by their literal program so each command is tried only against
    the rules that name its program (and those that do not name one)."""

    __slots__ = ("_memo", "all", "by_program", "generic")

    def __init__(self, entries: Iterable[tuple[CommandPattern | str, T]] = ()) -> None:
        self.all: list[tuple[CommandPattern, T]] = [
            (p if isinstance(p, CommandPattern) else compile_pattern(p), payload) for p, payload in entries
        ]
        self.by_program: dict[str, list[tuple[CommandPattern, T]]] = {}
        #: patterns whose program is not a literal word (a glob such as ``mkfs*``, or ``*``)
        self.generic: list[tuple[CommandPattern, T]] = []
        for entry in self.all:
            program = entry[0].first
            if isinstance(program, str):
                self.by_program.setdefault(program, []).append(entry)
            else:
                self.generic.append(entry)
        self._memo: dict[str, Sequence[tuple[CommandPattern, T]]] = {}

    def __bool__(self) -> bool:
        return bool(self.all)

    def candidates(self, form: Argv) -> Sequence[tuple[CommandPattern, T]]:
        """The rules that may match ``form``: those naming its program, and the generic ones
        whose glob could (``mkfs*`` is not tried against ``ls``)."""
        if not form:
            return ()
        program = form[0]
        if type(program) is not str:
            return self.all
        hit = self._memo.get(program)
        if hit is None:
            hit = [*self.by_program.get(program, ()),
                   *(e for e in self.generic if program.startswith(e[0].prefix))]
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[program] = hit
        return hit


@dataclass(frozen=True, slots=True)
class CommandDecision(Generic[T]):
    action: Action
    reason: str
    #: the rule that decided (deny / ask)
    rule: T | None = None
    #: the simple command it decided on
    command: Argv | None = None
    #: allow: the rules that covered the commands, one per command
    covering: tuple[T, ...] = ()
    #: ask: because the parse could not see everything (a syntax error) or a
    #: deny rule only may match, not because an ask rule matched
    blind: bool = False


def decide(
    parse: CommandParse,
    *,
    deny: RuleSet[T] | None = None,
    ask: RuleSet[T] | None = None,
    allow: RuleSet[T] | None = None,
    env: Sequence[tuple[str, str]] = (),
    background: bool = False,
) -> CommandDecision[T]:
    details = parse.details
    if deny:
        maybe: tuple[T, Argv] | None = None
        for sc in details:
            assigned = (*env, *sc.assignments) if env or sc.assignments else ()
            for form in sc.deny_forms:
                for pat, rule in deny.candidates(form):
                    found = level(pat, form)
                    if not found or (pat.background and not background) or (
                            pat.assigns and not assignments_match(pat, assigned)):
                        continue
                    if found == 2 and not sc.speculative:
                        return CommandDecision("deny", f"{_show(form)} matches the deny rule", rule, form)
                    if found and maybe is None:
                        maybe = (rule, form)
        if maybe is not None:
            return CommandDecision("ask", f"{_show(maybe[1])} may match the deny rule", maybe[0], maybe[1],
                                   blind=True)
    if ask:
        for sc in details:
            assigned = (*env, *sc.assignments) if env or sc.assignments else ()
            for form in sc.deny_forms:
                for pat, rule in ask.candidates(form):
                    if not level(pat, form) or (pat.background and not background) or (
                            pat.assigns and not assignments_match(pat, assigned)):
                        continue
                    return CommandDecision("ask", f"{_show(form)} matches the ask rule", rule, form)
    if parse.error:
        return CommandDecision("ask", f"the command could not be parsed ({parse.error})", blind=True)
    if not allow:
        return CommandDecision("default", "no allow rule")
    if parse.opaque:
        return CommandDecision("default", "no allow rule can cover it: " + "; ".join(parse.opaque))
    covering: list[T] = []
    for sc in details:
        if sc.container or sc.speculative:
            continue
        assigned = (*env, *sc.assignments) if env or sc.assignments else ()
        found_rule = covering_rule(sc.allow_forms, assigned, env, background, allow)
        if found_rule is None:
            why = f"no allow rule matches {_show(sc.argv)}"
            if env:
                why += " with env " + ", ".join(name for name, _ in env)
            if background:
                why += " in the background"
            if sc.argv not in sc.allow_forms:
                program = sc.allow_forms[0][0] if sc.allow_forms else sc.argv[0]
                why += f" (run from {program}, not a system folder: a rule must name that path)"
            return CommandDecision("default", why, None, sc.argv)
        covering.append(found_rule)
    return CommandDecision("allow", "every command matches an allow rule", covering=tuple(covering))


def covering_rule(forms: Sequence[Argv], assigned: Sequence[tuple[str, str]], env: Sequence[tuple[str, str]],
              background: bool, allow: RuleSet[T]) -> T | None:
    for form in forms:
        for pat, rule in allow.candidates(form):
            if pat.background != background or level(pat, form) != 2:
                continue
            if (pat.assigns or env) and not assignments_match(pat, assigned, env):
                continue
            return rule
    return None


def _show(argv: Argv) -> str:
    from .patterns import exact_pattern

    return exact_pattern(argv)


def exact_patterns(
    parse: CommandParse,
    allow: RuleSet[T] | None = None,
    *,
    env: Sequence[tuple[str, str]] = (),
    background: bool = False,
    action: Literal["allow", "deny"] = "allow",
) -> list[str]:
    """The patterns "always" writes for a call: one per simple command that
    runs (wrapper layers that only pass a command on are left out), each
    exactly that argv; for an allow rule with the call's ``env`` entries in
    front and `` &`` after a background command. Commands ``allow`` covers
    already are left out (unless all are). Empty when no rule can cover the
    command (a syntax error, or something the parse cannot see through)."""
    import shlex

    from .patterns import exact_pattern

    if parse.error or (action == "allow" and parse.opaque):
        return []
    prefix = " ".join(f"{name}={shlex.quote(value)}" for name, value in env) if action == "allow" else ""
    suffix = " &" if background and action == "allow" else ""
    wanted: list[str] = []
    uncovered: list[str] = []
    for sc in parse.details:
        if sc.container or sc.speculative:
            continue
        form = max(sc.allow_forms, key=len) if (action == "allow" and sc.allow_forms) else sc.argv
        pattern = " ".join(p for p in (prefix, exact_pattern(form)) if p) + suffix
        if pattern in wanted:
            continue
        wanted.append(pattern)
        if not allow or covering_rule(sc.allow_forms, (*env, *sc.assignments), env, background, allow) is None:
            uncovered.append(pattern)
    return uncovered or wanted
