"""Rule patterns over argv: ``run_command(git push *)``.

A pattern is tokenised like a command (quotes group words and make glob
characters literal) and compared with a simple command's argv word by word:

- a whole unquoted ``*`` matches any number of words, none included
  (``rm *`` matches ``rm`` too); ``*`` ending the last word lets any words
  follow (``git push*`` matches ``git push origin main`` and ``git pushx``);
- another word with unquoted ``* ? [`` is a glob over exactly one word;
- no ``*`` at the end means exactly that many words;
- leading ``NAME=value`` words name variables (the call's ``env`` and the
  command's own assignments; the value may be a glob);
- a trailing ``&`` names a background command.

Matching is three-valued for deny and ask rules: a word known only at run
time (``$X``, a glob) may make a rule *possibly* match.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Sequence
from functools import lru_cache

from . import grammar
from .base import State
from .model import DynamicWord, GlobWord
from .walker import Walker
from .words import DYNAMIC, GLOB_CHARS, UNQUOTED, Part

STAR, LITERAL, GLOB, EXPANSION = 0, 1, 2, 3  # EXPANSION: `$X` written in a rule
Token = tuple[int, object]


class PatternError(ValueError):
    """A command pattern that is not one simple command."""


class CommandPattern:
    """A compiled command pattern (see the module docstring)."""

    __slots__ = ("assigns", "background", "first", "n_fixed", "prefix", "simple", "text", "tokens", "trailing")

    def __init__(self, text: str, tokens: tuple[Token, ...], assigns: tuple[tuple[str, ValueMatch], ...],
                 background: bool) -> None:
        self.text = text
        #: the command part, word by word
        self.tokens = tokens
        #: the leading NAME=value words: (name, does this value match)
        self.assigns = assigns
        self.background = background
        stars = [i for i, (k, _) in enumerate(tokens) if k == STAR]
        self.trailing = bool(stars) and stars == [len(tokens) - 1]
        self.simple = not stars or self.trailing  # no `*` word except a last one
        self.n_fixed = len(tokens) - (1 if self.trailing else 0)
        #: the program, when the pattern names it literally (rules are indexed by it)
        self.first = tokens[0][1] if tokens and tokens[0][0] == LITERAL else None
        #: what the program starts with when it is a glob (``mkfs*``: ``mkfs``), else ""
        self.prefix = ""

    @property
    def env_names(self) -> frozenset[str]:
        """The variables the pattern names."""
        return frozenset(name for name, _ in self.assigns)

    def __repr__(self) -> str:
        return f"CommandPattern({self.text!r})"


ValueMatch = Callable[[str], bool]


def _value_match(atoms: list[Part]) -> ValueMatch:
    if not any(kind == UNQUOTED and c in GLOB_CHARS for c, kind in atoms):
        literal = "".join(c for c, _ in atoms)
        return lambda value: value == literal
    glob = "".join(c if kind == UNQUOTED else ("[" + c + "]" if c in "*?[" else c) for c, kind in atoms)
    regex = re.compile(fnmatch.translate(glob), re.S)
    return lambda value: regex.match(value) is not None


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> CommandPattern:
    """Compile a rule pattern; raises :class:`PatternError` saying what is wrong."""
    text = pattern.strip()
    if not text:
        raise PatternError("the pattern is empty")
    words, background = _pattern_words(text)
    assigns: list[tuple[str, ValueMatch]] = []
    while words and words[0][1] is not None:
        atoms, name = words.pop(0)
        assert name is not None
        assigns.append((name, _value_match(atoms)))
    if not words:
        raise PatternError("the pattern only assigns variables; name the command too (e.g. `CI=1 pytest *`)")
    tokens: list[Token] = []
    for k, (atoms, _name) in enumerate(words):
        if atoms == [("*", UNQUOTED)]:
            if not (tokens and tokens[-1][0] == STAR):
                tokens.append((STAR, None))
            continue
        word = "".join(c for c, _ in atoms)
        if any(kind == DYNAMIC for _, kind in atoms):
            tokens.append((EXPANSION, word))  # matches the same unexpanded word only
        elif not any(kind == UNQUOTED and c in GLOB_CHARS for c, kind in atoms):
            tokens.append((LITERAL, word))
        else:
            glob = "".join(c if kind == UNQUOTED else ("[" + c + "]" if c in "*?[" else c) for c, kind in atoms)
            tokens.append((GLOB, re.compile(fnmatch.translate(glob), re.S).match))
            if k == len(words) - 1 and atoms[-1] == ("*", UNQUOTED):
                tokens.append((STAR, None))
    compiled = CommandPattern(text, tuple(tokens), tuple(assigns), background)
    if tokens and tokens[0][0] == GLOB:
        atoms = words[0][0]
        prefix = []
        for c, kind in atoms:
            if kind == UNQUOTED and c in GLOB_CHARS:
                break
            prefix.append(c)
        compiled.prefix = "".join(prefix)
    return compiled


def _pattern_words(pattern: str) -> tuple[list[tuple[list[Part], str | None]], bool]:
    """The pattern's words as atoms, each with the variable it assigns (or None), and the trailing ``&``."""
    kind = grammar.KIND
    src = pattern.encode("utf-8", "surrogateescape")
    root = grammar.parser().parse(src).root_node
    named = root.named_children
    background = False
    cmd = None
    if not root.has_error and len(named) == 1 and kind[named[0].kind_id] == "command":
        cmd = named[0]
        tail = [kind[c.kind_id] for c in root.children if c != cmd]
        if tail == ["&"]:
            background = True
        elif tail or any(kind[c.kind_id] not in ("command_name", "variable_assignment")
                         and kind[c.kind_id] not in grammar.WORD_TYPES and c.is_named for c in cmd.children):
            cmd = None
    if cmd is None:
        if re.search(r"[;&|<>()`\n]|\$\(", pattern) or (root.has_error and re.search("['\"\\\\]", pattern)):
            raise PatternError(
                "a command rule matches one simple command: no `;`, `&&`, `|`, redirections, "
                "substitutions or unbalanced quotes (write one rule per command: `cd *` and `pytest *`)"
            )
        return [([(c, UNQUOTED) for c in w], None) for w in pattern.split()], False
    walker = Walker(src, State(pattern, None))
    out: list[tuple[list[Part], str | None]] = []
    nodes = [c for c in cmd.children if kind[c.kind_id] in ("command_name", "variable_assignment")
             or kind[c.kind_id] in grammar.WORD_TYPES]
    for group in walker.group_words(nodes):
        parts: list[Part] = []
        assigned = None
        for n in group:
            if kind[n.kind_id] == "variable_assignment":
                name_node = n.child_by_field_name("name")
                assigned = walker.text(name_node) if name_node is not None else ""
                for c in n.children:
                    if c.is_named and c != name_node:
                        walker.word_parts(c, parts)
                continue
            walker.word_parts(n, parts)
        atoms: list[Part] = []
        for text, k in parts:
            if k == DYNAMIC:
                atoms.append((text, k))
            else:
                atoms.extend((ch, k) for ch in text)
        out.append((atoms, assigned))
    return out, background


def assignments_match(pat: CommandPattern, assignments: Sequence[tuple[str, str]],
                      required: Sequence[tuple[str, str]] = ()) -> bool:
    """Each variable the pattern names is among ``assignments`` with a matching
    value, and each of ``required`` (the call's ``env``) is named by the pattern."""
    for name, ok in pat.assigns:
        if not any(n == name and ok(v) for n, v in assignments):
            return False
    return all(any(n == name and ok(v) for n, ok in pat.assigns) for name, v in required)


# ---------------------------------------------------------------- matching one argv


def _token_ok(token: Token, a: str) -> bool:
    kind, value = token
    if kind == EXPANSION:
        return type(a) is DynamicWord and a == value
    if type(a) is DynamicWord:
        return False
    if kind == LITERAL:
        return a == value
    return value(a) is not None  # type: ignore[operator]


def _loose_ok(token: Token, a: str) -> bool:
    """Could the run-time value(s) of ``a`` give a word matching ``token``?"""
    ta = type(a)
    if ta is DynamicWord:
        return True
    if ta is GlobWord:
        kind, value = token
        if kind == LITERAL:
            return a == value or fnmatch.fnmatchcase(str(value), a)
        return kind != EXPANSION
    return _token_ok(token, a)


def _match(pat: CommandPattern, argv: Sequence[str], loose: bool) -> bool:
    tokens = pat.tokens
    if not loose and pat.simple:  # linear fast path
        na = len(argv)
        if na < pat.n_fixed or (na != pat.n_fixed and not pat.trailing):
            return False
        return all(_token_ok(tokens[i], argv[i]) for i in range(pat.n_fixed))
    np_, na = len(tokens), len(argv)
    memo: dict[tuple[int, int], bool] = {}

    def m(i: int, j: int) -> bool:
        key = (i, j)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if i == np_:
            # leftover words could all expand to nothing
            r = j == na or (loose and j > 0 and all(type(a) is not str for a in argv[j:]))
        elif tokens[i][0] == STAR:
            r = i + 1 == np_ or any(m(i + 1, k) for k in range(j, na + 1))
        elif j == na:
            r = False
        else:
            a = argv[j]
            if loose and j > 0 and type(a) is not str:
                # an expansion or a glob may give zero, one or several words
                r = m(i, j + 1) or (_loose_ok(tokens[i], a) and (m(i + 1, j + 1) or m(i + 1, j)))
            elif loose:
                r = _loose_ok(tokens[i], a) and m(i + 1, j + 1)
            else:
                r = _token_ok(tokens[i], a) and m(i + 1, j + 1)
        memo[key] = r
        return r

    return m(0, 0)


def level(pat: CommandPattern, argv: Sequence[str]) -> int:
    """2: ``pat`` matches ``argv``; 1: it may match (a word known only at run
    time could make it); 0: it does not."""
    if not argv:
        return 0
    first = pat.first
    if first is not None and type(argv[0]) is str and argv[0] != first:
        return 0
    if pat.simple:  # the common shape, inlined: no `*` word but a last one
        na, nf = len(argv), pat.n_fixed
        if na >= nf and (na == nf or pat.trailing):
            tokens = pat.tokens
            for i in range(nf):
                a = argv[i]
                kind, value = tokens[i]
                if kind == EXPANSION:
                    if type(a) is not DynamicWord or a != value:
                        break
                elif type(a) is DynamicWord or (a != value if kind == LITERAL else value(a) is None):  # type: ignore[operator]
                    break
            else:
                return 2
    elif _match(pat, argv, False):
        return 2
    for a in argv:
        if type(a) is not str:
            return 1 if _match(pat, argv, True) else 0
    return 0


def matches(pattern: str, argv: Sequence[str]) -> bool:
    """True when ``pattern`` matches ``argv`` for certain."""
    return level(compile_pattern(pattern), argv) == 2


def match_level(pattern: str, argv: Sequence[str]) -> str:
    """``"yes"``, ``"maybe"`` (a word known only at run time could make it match) or ``"no"``."""
    return ("no", "maybe", "yes")[level(compile_pattern(pattern), argv)]


def exact_pattern(argv: Sequence[str]) -> str:
    """A pattern that matches exactly ``argv`` (for "always"): each word
    shell-quoted, so glob characters are literal; a word known only at run
    time keeps its source spelling."""
    out = []
    for a in argv:
        if type(a) is DynamicWord:
            out.append('"' + a.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"')
        else:
            out.append(shlex.quote(a))
    return " ".join(out)

