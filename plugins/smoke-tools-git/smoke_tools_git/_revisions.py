"""Reading the revisions the model passes (pure functions, no git).

git reads ``<rev>:<path>`` with the path relative to the *repository* root
(or to the current folder when it starts with ``./`` or ``../``), and
``:<path>`` / ``:<n>:<path>`` from the index. When the workspace is a
sub-folder of a larger repository, those paths can name files outside the
workspace; so the git tools split such revisions here, normalise the path
and check it before git sees it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


class RevisionError(ValueError):
    """A revision the git tools will not pass to git; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class BlobSpec:
    """``<commit>:<path>`` or ``:<stage>:<path>``: a file or folder at a revision
    or in the index. ``path`` is relative to the repository root, normalised
    (``""`` = the root folder)."""

    commit: str | None  # None = the index
    stage: str
    path: str

    def spec(self) -> str:
        """The revision to give git: rebuilt from the checked parts, never the raw text."""
        if self.commit is None:
            return f":{self.stage}:{self.path}"
        return f"{self.commit}:{self.path}"


def split_path(rev: str) -> tuple[str, str | None]:
    """``"HEAD:src/a.py"`` → ``("HEAD", "src/a.py")``; ``"HEAD~2"`` → ``("HEAD~2", None)``.

    Splits at the first ``:`` outside ``{...}`` as git does (``HEAD^{/fix: x}``
    has no path). ``:/text`` (the newest commit whose message matches) has
    no path either; ``:path`` and ``:2:path`` give ``(":0", path)`` and
    ``(":2", path)``.
    """
    if rev.startswith(":/"):
        return rev, None
    if rev.startswith(":"):
        rest = rev[1:]
        if len(rest) >= 2 and rest[0] in "0123" and rest[1] == ":":
            return f":{rest[0]}", rest[2:]
        return ":0", rest
    depth = 0
    for i, ch in enumerate(rev):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == ":" and not depth:
            return rev[:i], rev[i + 1 :]
    return rev, None


def repository_path(path: str, prefix: str) -> str:
    """A path from a revision → normalised and relative to the repository root.

    ``prefix`` is the workspace's folder inside the repository (``git
    rev-parse --show-prefix``: ``""`` or ``"sub/dir/"``). Like git, a path
    starting with ``./`` or ``../`` is taken from the workspace folder, any
    other from the repository root. Raises :class:`RevisionError` for
    absolute paths and paths that leave the repository.
    """
    if "\x00" in path:
        raise RevisionError("the path in the revision contains a NUL byte")
    if path.startswith("/"):
        raise RevisionError(
            f"the path {path!r} in the revision is absolute; give it relative to the workspace "
            f"(e.g. HEAD:./src/app.py)"
        )
    joined = prefix + path if path in (".", "..") or path.startswith(("./", "../")) else path
    normal = posixpath.normpath(joined) if joined else "."
    if normal == ".." or normal.startswith("../"):
        raise RevisionError(f"the path {path!r} in the revision leaves the repository")
    return "" if normal == "." else normal


def inside_prefix(repo_path: str, prefix: str) -> bool:
    """True when ``repo_path`` (relative to the repository root) is the
    workspace folder ``prefix`` or below it."""
    if not prefix:
        return True
    folder = prefix.rstrip("/")
    return repo_path == folder or repo_path.startswith(folder + "/")


def split_range(rev: str) -> list[str] | None:
    """``"A..B"`` / ``"A...B"`` → ``["A", "B"]`` (an empty end means HEAD, as
    in git); None when ``rev`` is not a range."""
    depth = 0
    for i, ch in enumerate(rev):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == "." and not depth and rev.startswith("..", i):
            width = 3 if rev.startswith("...", i) else 2
            left, right = rev[:i], rev[i + width :]
            return [left or "HEAD", right or "HEAD"]
    return None
