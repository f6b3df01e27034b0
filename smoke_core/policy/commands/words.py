"""Words as bash sees them: quotes and backslashes removed (``'…'``,
``"…"``, ``$'…'``, ``\\x``, line continuations), brace expansion
(``{a,b}``, ``{1..3}``), and which words stay unknown until run time.

A word is built from *parts* ``(text, kind)``: unquoted literal text (where
globs and braces are live), quoted literal text, or a dynamic part (an
expansion, shown by its source text).
"""

from __future__ import annotations

import re

from .model import DynamicWord, GlobWord

Part = tuple[str, int]
UNQUOTED, QUOTED, DYNAMIC = 0, 1, 2
GLOB_CHARS = frozenset("*?[")
#: brace expansion makes at most this many words (bash has no limit; a rule check must)
MAX_BRACE = 256

_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c_decode(s: str) -> str:
    """The value of ``$'…'`` (without the quotes)."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(chr(int(s[i + 1:j], 8) & 0xFF))
            i = j
        elif e in "xuU":
            most = {"x": 2, "u": 4, "U": 8}[e]
            j = i + 2
            while j < n and j < i + 2 + most and s[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 2:
                out.append("\\" + e)
            else:
                try:
                    out.append(chr(int(s[i + 2:j], 16)))
                except (ValueError, OverflowError):
                    out.append("\ufffd")
            i = j
        elif e == "c" and i + 2 < n:
            out.append(chr(ord(s[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


def dq_unescape(s: str) -> str:
    """Backslashes inside double quotes: only ``\\$ \\` \\" \\\\ \\<newline>`` are escapes."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
            if s[i + 1] != "\n":
                out.append(s[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unquoted_parts(s: str, out: list[Part]) -> None:
    """An unquoted word: ``\\x`` is a quoted x, ``\\<newline>`` vanishes."""
    if "\\" not in s:
        out.append((s, UNQUOTED))
        return
    buf: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            if buf:
                out.append(("".join(buf), UNQUOTED))
                buf = []
            if s[i + 1] != "\n":
                out.append((s[i + 1], QUOTED))
            i += 2
        else:
            buf.append(c)
            i += 1
    if buf:
        out.append(("".join(buf), UNQUOTED))


# ---------------------------------------------------------------- brace expansion over (char, kind) atoms


def atoms_of(parts: list[Part]) -> list[Part]:
    atoms: list[Part] = []
    for text, kind in parts:
        if kind == DYNAMIC:
            atoms.append((text, DYNAMIC))
        else:
            atoms.extend((ch, kind) for ch in text)
    return atoms


def _sequence(inner: list[Part]) -> list[str] | None:
    if any(k != UNQUOTED for _, k in inner):
        return None
    s = "".join(c for c, _ in inner)
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", s)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        if abs(b - a) // step > MAX_BRACE:
            return None
        padded = m.group(1).lstrip("-").startswith("0") or m.group(2).lstrip("-").startswith("0")
        width = max(len(m.group(1)), len(m.group(2))) if padded else 0
        numbers = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
        return [str(v).zfill(width) if width else str(v) for v in numbers]
    m = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?", s)
    if m:
        a, b = ord(m.group(1)), ord(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        return [chr(v) for v in range(a, b + (1 if b >= a else -1), step if b >= a else -step)]
    return None


def brace_expand(atoms: list[Part], budget: list[int]) -> list[list[Part]]:
    """Every word ``atoms`` expands to (bash's order), within ``budget[0]`` words."""
    n = len(atoms)
    for i in range(n):
        if atoms[i] != ("{", UNQUOTED):
            continue
        depth, commas, close = 0, [], None
        for j in range(i + 1, n):
            c, k = atoms[j]
            if k != UNQUOTED:
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    close = j
                    break
                depth -= 1
            elif c == "," and depth == 0:
                commas.append(j)
        if close is None:
            continue
        prefix, suffix = atoms[:i], atoms[close + 1:]
        alternatives: list[list[Part]] | None = None
        if commas:
            bounds = [i, *commas, close]
            alternatives = [atoms[bounds[x] + 1:bounds[x + 1]] for x in range(len(bounds) - 1)]
        else:
            seq = _sequence(atoms[i + 1:close])
            if seq is not None:
                alternatives = [[(ch, QUOTED) for ch in item] for item in seq]
        if alternatives is None:
            continue
        budget[0] -= len(alternatives)
        if budget[0] < 0:
            return [atoms]
        out: list[list[Part]] = []
        for alt in alternatives:
            out.extend(brace_expand(prefix + alt + suffix, budget))
        return out
    return [atoms]


def _token_from_atoms(atoms: list[Part]) -> str | None:
    text = "".join(c for c, _ in atoms)
    if any(k == DYNAMIC for _, k in atoms):
        return DynamicWord(text)
    if not atoms:
        return None  # an unquoted empty word vanishes
    if any(k == UNQUOTED and c in GLOB_CHARS for c, k in atoms):
        return GlobWord(text)
    return text


def tokens_from_parts(parts: list[Part], want_brace: bool = True) -> tuple[list[str], bool]:
    """The argv words ``parts`` make, and whether brace expansion made them."""
    if not parts:
        return [], False
    if len(parts) == 1:
        text, kind = parts[0]
        if kind == DYNAMIC:
            return [DynamicWord(text)], False
        if kind == QUOTED:
            return [text], False
        if not (want_brace and "{" in text):
            if GLOB_CHARS.intersection(text):
                return [GlobWord(text)], False
            return ([text] if text else []), False
    dynamic = quoted = brace = glob = False
    for text, kind in parts:
        if kind == DYNAMIC:
            dynamic = True
        elif kind == QUOTED:
            quoted = True
        else:
            if "{" in text:
                brace = True
            if not glob and GLOB_CHARS.intersection(text):
                glob = True
    if want_brace and brace:
        expanded = brace_expand(atoms_of(parts), [MAX_BRACE])
        if len(expanded) > 1:
            return [t for t in (_token_from_atoms(a) for a in expanded) if t is not None], True
    text = "".join(t for t, _ in parts)
    if dynamic:
        return [DynamicWord(text)], False
    if glob:
        return [GlobWord(text)], False
    if not text and not quoted:
        return [], False
    return [text], False
