"""Glob patterns, matched in bounded time.

A pattern is normalised (``./`` and leading ``/`` dropped, runs of ``**``
segments collapsed into one), its ``{a,b}`` groups are expanded up to
:data:`MAX_BRACE_EXPANSIONS` alternatives, and each alternative becomes a
matcher whose cost grows with the length of the path, never exponentially:

- inside one path segment, ``*`` is matched the way ``fnmatch`` does it since
  Python 3.11 (each ``*literal`` run is an atomic, shortest match), so a
  pattern such as ``*a*a*a*a*b`` cannot backtrack;
- across segments, a ``**`` segment matches any number of folders; the
  blocks of segments between ``**`` are placed left to right at the first
  position where they fit (which is optimal, as for ``*`` within a name),
  so ``**/a/**/b/**/c`` costs a few passes over the path, not a search.

A pattern without ``/`` matches the file name at any depth; with ``/`` it
matches the path relative to the search folder. ``**`` crosses folders,
``{a,b}`` alternates, ``[...]`` is a class (``[!...]`` or ``[^...]``
negated, POSIX classes such as ``[[:alpha:]]`` understood), ``\\`` escapes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from smoke_core.plugin import ToolError

#: Longest glob pattern accepted (characters).
MAX_GLOB_CHARS = 1000
#: Most alternatives ``{a,b}`` groups may expand to (they multiply: ``{a,b}`` ten times is 1,024).
MAX_BRACE_EXPANSIONS = 256

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "\\x21-\\x7e",
    "lower": "a-z",
    "print": "\\x20-\\x7e",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "a-zA-Z0-9_",
    "xdigit": "0-9A-Fa-f",
}
# characters that would start a set operation or a nested set inside a Python class
_CLASS_ESCAPE = set("\\[]&~|^")


class GlobPatternError(ToolError):
    """A glob pattern was refused (too long, too many alternatives, or malformed)."""


# ---------------------------------------------------------------- braces


def expand_braces(pattern: str, limit: int = MAX_BRACE_EXPANSIONS) -> list[str]:
    """``a{b,c}d`` -> ``[abd, acd]``, nested groups included. Raises
    :class:`GlobPatternError` as soon as more than ``limit`` alternatives
    would be produced (the expansion is never built beyond that)."""
    out: list[str] = []
    _expand(pattern, out, limit)
    return out


def _expand(pattern: str, out: list[str], limit: int) -> None:
    group = _first_group(pattern)
    if group is None:
        out.append(pattern)
        if len(out) > limit:
            raise GlobPatternError(
                f"the pattern expands to more than {limit} alternatives ({{a,b}} groups multiply); "
                f"use fewer or smaller brace groups, or run several narrower globs"
            )
        return
    start, end, parts = group
    head, tail = pattern[:start], pattern[end + 1 :]
    for part in parts:
        _expand(head + part + tail, out, limit)


def _first_group(pattern: str) -> tuple[int, int, list[str]] | None:
    """(start, end, alternatives) of the first top-level ``{...}`` holding a comma."""
    depth = 0
    start = -1
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                return start, i, _split_alternatives(pattern[start + 1 : i])
        i += 1
    return None


def _split_alternatives(inner: str) -> list[str]:
    parts: list[str] = []
    level, last, i = 0, 0, 0
    while i < len(inner):
        c = inner[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            level += 1
        elif c == "}":
            level -= 1
        elif c == "," and level == 0:
            parts.append(inner[last:i])
            last = i + 1
        i += 1
    parts.append(inner[last:])
    return parts


# ---------------------------------------------------------------- one segment


_STAR = object()


def segment_regex(segment: str, any_char: str = ".") -> str:
    """The regex (no anchors) for one path segment of a glob. ``any_char`` is
    what ``?`` and ``*`` may consume (``.`` for a lone name, ``[^/]`` inside
    a path regex)."""
    parts: list[object] = []
    i, n = 0, len(segment)
    while i < n:
        ch = segment[i]
        i += 1
        if ch == "*":
            if not parts or parts[-1] is not _STAR:
                parts.append(_STAR)
        elif ch == "?":
            parts.append(any_char)
        elif ch == "[":
            cls, i = _char_class(segment, i)
            parts.append(cls)
        elif ch == "\\" and i < n:
            parts.append(re.escape(segment[i]))
            i += 1
        else:
            parts.append(re.escape(ch))
    # fnmatch's trick: between stars, match each fixed run atomically and as
    # early as possible; no backtracking into an earlier star is ever needed
    out: list[str] = []
    k = 0
    while k < len(parts) and parts[k] is not _STAR:
        out.append(parts[k])  # type: ignore[arg-type]
        k += 1
    while k < len(parts):
        k += 1  # the star
        fixed: list[str] = []
        while k < len(parts) and parts[k] is not _STAR:
            fixed.append(parts[k])  # type: ignore[arg-type]
            k += 1
        if k == len(parts):
            out.append(f"{any_char}*" + "".join(fixed))
        else:
            out.append(f"(?>{any_char}*?{''.join(fixed)})")
    return "".join(out)


def _char_class(segment: str, i: int) -> tuple[str, int]:
    """Translate the class starting after the ``[`` at ``i - 1``; returns
    (regex, index after the class). An unclosed ``[`` is a literal."""
    n = len(segment)
    j = i
    negate = False
    if j < n and segment[j] in "!^":
        negate = True
        j += 1
    body: list[str] = []
    first = True
    prev_literal = False  # the last item was one plain character (a range may start there)
    while j < n:
        ch = segment[j]
        if ch == "]" and not first:
            break
        first = False
        if ch == "[" and segment.startswith(":", j + 1):
            end = segment.find(":]", j + 2)
            if end != -1:
                name = segment[j + 2 : end]
                negated_class = name.startswith("^")
                key = name.lstrip("^")
                if key not in _POSIX_CLASSES:
                    raise GlobPatternError(
                        f"unknown character class [:{name}:] in the glob; use one of "
                        + ", ".join(f"[:{k}:]" for k in sorted(_POSIX_CLASSES))
                    )
                if negated_class:
                    raise GlobPatternError(
                        f"negated character class [:{name}:] is not supported in globs; use [![:{key}:]]"
                    )
                body.append(_POSIX_CLASSES[key])
                prev_literal = False
                j = end + 2
                continue
        if ch == "\\" and j + 1 < n:
            body.append(re.escape(segment[j + 1]))
            prev_literal = True
            j += 2
            continue
        if ch == "-" and prev_literal and j + 1 < n and segment[j + 1] not in "]-":
            body.append("-")
            prev_literal = False
        elif ch in _CLASS_ESCAPE or ch == "-":
            body.append("\\" + ch)
            prev_literal = True
        else:
            body.append(ch)
            prev_literal = True
        j += 1
    if j >= n:
        return re.escape("["), i  # no closing bracket: a literal '['
    text = "".join(body)
    if not text:
        return ("." if negate else "(?!)"), j + 1
    return f"[{'^' if negate else ''}{text}]", j + 1


# ---------------------------------------------------------------- whole paths


def normalise(pattern: str) -> str:
    """Strip ``./`` and leading ``/``, fold ``//``, and collapse repeated
    ``**`` segments (``**/**/x`` is ``**/x``): they change nothing but cost."""
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.lstrip("/")
    segments: list[str] = []
    for seg in text.split("/"):
        if seg == "" and segments:
            continue
        if seg == "**" and segments and segments[-1] == "**":
            continue
        segments.append(seg)
    return "/".join(segments)


class _PathMatcher:
    """One alternative with ``/``: blocks of segments separated by ``**``."""

    def __init__(self, segments: list[str]) -> None:
        blocks: list[list[re.Pattern[str]]] = [[]]
        for seg in segments:
            if seg == "**":
                blocks.append([])
            else:
                blocks[-1].append(re.compile(segment_regex(seg) + r"\Z", re.S))
        self.blocks = blocks
        self.trailing_star = segments[-1] == "**"

    def __call__(self, parts: list[str]) -> bool:
        blocks = self.blocks
        n = len(parts)
        if len(blocks) == 1:
            only = blocks[0]
            return len(only) == n and all(r.match(p) for r, p in zip(only, parts, strict=True))
        head, tail, middle = blocks[0], blocks[-1], blocks[1:-1]
        need = len(head) + len(tail) + sum(len(b) for b in middle) + (1 if self.trailing_star else 0)
        if n < need:
            return False
        if not all(r.match(p) for r, p in zip(head, parts, strict=False)):
            return False
        end = n - len(tail)
        if self.trailing_star:
            end = n - 1  # a final ``**`` stands for at least one more name
        if tail and not all(r.match(p) for r, p in zip(tail, parts[end:], strict=True)):
            return False
        pos = len(head)
        for block in middle:
            size = len(block)
            while pos + size <= end:
                if all(r.match(parts[pos + k]) for k, r in enumerate(block)):
                    break
                pos += 1
            else:
                return False
            pos += size
        return True


class GlobMatcher:
    """``matcher(path) -> bool`` for a path relative to the search folder."""

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_GLOB_CHARS:
            raise GlobPatternError(
                f"the glob pattern is {len(pattern):,} characters long; the limit is {MAX_GLOB_CHARS:,}. "
                f"Use a shorter pattern (or several)"
            )
        names: list[str] = []
        paths: list[_PathMatcher] = []
        try:
            for alternative in expand_braces(normalise(pattern)):
                alt = _name_only(normalise(alternative))
                if "/" not in alt:
                    names.append(alt)
                else:
                    paths.append(_PathMatcher(alt.split("/")))
            self._name = (
                re.compile("(?:" + "|".join(segment_regex(a) for a in names) + r")\Z", re.S) if names else None
            )
        except re.error as exc:
            raise GlobPatternError(f"invalid glob pattern {pattern!r} ({exc}); check its [...] classes") from None
        self._paths = paths
        self.pattern = pattern

    def __call__(self, rel: str) -> bool:
        if self._name is not None and self._name.match(rel.rsplit("/", 1)[-1]):
            return True
        if self._paths:
            parts = rel.split("/")
            return any(m(parts) for m in self._paths)
        return False

    def matches_any_part(self, rel: str) -> bool:
        """True when the pattern matches the path or one of its folders
        (how ripgrep applies an exclusion ``!glob``: a matching folder is skipped whole)."""
        parts = rel.split("/")
        return any(self("/".join(parts[: k + 1])) for k in range(len(parts)))


def _name_only(alt: str) -> str:
    """``**/x`` is ``x`` at any depth: the fast, name-only form."""
    if alt.startswith("**/") and "/" not in alt[3:] and alt[3:] not in ("", "**"):
        return alt[3:]
    return alt


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A cached :class:`GlobMatcher`; raises :class:`GlobPatternError` for a refused pattern."""
    return GlobMatcher(pattern)


_PLAIN = re.compile(r"[A-Za-z0-9_.*?+@%=~#-]+\Z")


def plain_globs(pattern: str) -> list[str] | None:
    """The alternatives of a name-only pattern when every one is in the
    dialect ripgrep and this module read alike (letters, digits, ``*``,
    ``?`` and ``._+@%=~#-``); None otherwise, and the pattern is then matched
    here only."""
    try:
        alternatives = [_name_only(normalise(a)) for a in expand_braces(normalise(pattern), limit=64)]
    except GlobPatternError:
        return None
    if all(_PLAIN.match(a) for a in alternatives):
        return alternatives
    return None


def strip_wildcards(pattern: str) -> list[str]:
    """The literal text of each alternative (wildcards and classes removed):
    what a pattern names outright. ``**/.env*`` -> ``["/.env"]``."""
    out: list[str] = []
    try:
        alternatives = expand_braces(normalise(pattern))
    except GlobPatternError:
        return []
    for alt in alternatives:
        out.append(re.sub(r"\[[^\]]*\]|[*?]", "", alt))
    return out
