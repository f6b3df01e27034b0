"""The pure-Python side: file walking with .gitignore rules, and glob patterns.

The walk mirrors ``rg --files --hidden --no-require-git --sort path`` with the
skip list as ``--glob '!name'`` overrides: hidden files are included,
symlinks are never followed, ``.gitignore`` files in the search folder and
below apply (deeper files win), plus the workspace root's ``.gitignore``
when a sub-folder is searched.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Names never searched, at any depth (files or folders).
SKIP_NAMES: tuple[str, ...] = (".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".smoke")
#: Files bigger than this are not searched (rg: --max-filesize).
MAX_FILE_BYTES = 20 * 1024 * 1024


def display_name(raw: bytes) -> str:
    """A path as shown to the model (both engines use this)."""
    return raw.decode("utf-8", "replace")


class IgnoreLayer:
    """The rules of one ``.gitignore`` file, relative to its folder."""

    def __init__(self, base: str, lines: list[str]) -> None:
        import pathspec

        self.base = base  # folder relative to the search cwd, "" for the cwd itself
        self.spec: Any = pathspec.GitIgnoreSpec.from_lines(lines)

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a '!' rule; None: no rule matched."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        target = rel + "/" if is_dir else rel
        result = self.spec.check_file(target)
        include: bool | None = result.include
        return include


def _read_ignore(folder: Path) -> list[str] | None:
    path = folder / ".gitignore"
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        return path.read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return None


def _ignored(layers: list[IgnoreLayer], rel: str, is_dir: bool) -> bool:
    for layer in reversed(layers):
        decision = layer.decide(rel, is_dir)
        if decision is not None:
            return decision
    return False


def walk_files(
    cwd: Path,
    start: str,
    *,
    cancelled: Callable[[], bool] = lambda: False,
) -> Iterator[str]:
    """Yield files under ``cwd/start`` (``start`` relative to ``cwd``, "" for
    cwd itself) in sorted depth-first order, as paths relative to ``cwd``."""
    layers: list[IgnoreLayer] = []
    if start:
        root_rules = _read_ignore(cwd)
        if root_rules:
            layers.append(IgnoreLayer("", root_rules))
    top = cwd / start if start else cwd
    if top.is_file():
        yield start
        return
    yield from _walk(cwd, top, start, layers, cancelled)


def _walk(
    cwd: Path, folder: Path, rel: str, layers: list[IgnoreLayer], cancelled: Callable[[], bool]
) -> Iterator[str]:
    if cancelled():
        return
    rules = _read_ignore(folder)
    if rules:
        layers = [*layers, IgnoreLayer(rel, rules)]
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name in SKIP_NAMES:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        child = f"{rel}/{name}" if rel else name
        is_dir = stat.S_ISDIR(st.st_mode)
        if _ignored(layers, child, is_dir):
            continue
        if is_dir:
            yield from _walk(cwd, Path(entry.path), child, layers, cancelled)
        elif stat.S_ISREG(st.st_mode):
            yield child


# ---------------------------------------------------------------- globs


def _expand_braces(pattern: str) -> list[str]:
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1 : i]
                parts: list[str] = []
                level, last = 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for part in parts:
                    out.extend(_expand_braces(head + part + tail))
                return out
    return [pattern]


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2 : i + 3]
                if at_start and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if at_start and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A matcher for ``pattern``: without '/' it matches the file name at any
    depth; with '/' the path relative to the search folder. ``**`` crosses
    folders, ``{a,b}`` alternates."""
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.lstrip("/")
    alternatives = _expand_braces(text) or [text]
    by_name = [a for a in alternatives if "/" not in a]
    by_path = [a for a in alternatives if "/" in a]
    name_re = re.compile("|".join(f"(?:{_glob_to_regex(a)})" for a in by_name) + r"\Z", re.S) if by_name else None
    path_re = re.compile("|".join(f"(?:{_glob_to_regex(a)})" for a in by_path) + r"\Z", re.S) if by_path else None

    def match(rel: str) -> bool:
        if name_re is not None and name_re.match(rel.rsplit("/", 1)[-1]):
            return True
        return path_re is not None and bool(path_re.match(rel))

    return match
