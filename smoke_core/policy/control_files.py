"""Control files: files in a workspace that decide what Smoke, git, an MCP
client, another agent or an editor *runs* or *allows* next time. A file
tool's write, edit, delete or move of one always asks a person, with the path
and what the file controls; only an exact allow rule for that path covers it
(never a wildcard, "allow for this run", ``auto_approve``, ``--yes`` or
``allow-all``). Managed settings add paths (``control_files``).

Names match at any depth (a sub-folder can be opened as a workspace of its
own) and without regard to case (macOS and Windows file systems).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: (a folder or file name, what it controls), matched as a path component
CONTROL_FOLDERS: tuple[tuple[str, str], ...] = (
    (".smoke", "Smoke's settings, permission rules, subagents and instructions for this folder"),
    (".git", "git's config (core.fsmonitor, core.pager and aliases run commands), hooks, info and modules"),
    (".claude", "Claude Code's settings, hooks, commands, agents and skills (Smoke reads skills and agents there)"),
    (".codex", "Codex's config and rules"),
)
CONTROL_NAMES: tuple[tuple[str, str], ...] = (
    (".mcp.json", "the MCP servers started for this folder (each one a program that runs)"),
    (".gitattributes", "git filters and diff drivers, which run commands named in git's config"),
    (".gitmodules", "git submodules: their URLs and update commands"),
    ("AGENTS.md", "instructions every agent here follows"),
    ("AGENTS.override.md", "instructions Codex follows here"),
    ("CLAUDE.md", "instructions Claude Code and Smoke follow here"),
    ("CLAUDE.local.md", "instructions Claude Code follows here"),
)
#: (a relative path, what it controls), matched at the end of a path
CONTROL_PATHS: tuple[tuple[str, str], ...] = (
    (".vscode/settings.json", "VS Code's settings for this folder (terminal, interpreter and tool paths)"),
    (".vscode/tasks.json", "VS Code's tasks (commands it runs)"),
    (".vscode/launch.json", "VS Code's launch configurations (programs it runs)"),
)

_FOLDERS = {name.lower(): what for name, what in CONTROL_FOLDERS}
_NAMES = {name.lower(): what for name, what in CONTROL_NAMES}
_PATHS = {path.lower(): what for path, what in CONTROL_PATHS}


class ControlFiles:
    """Which workspace paths are control files: the built-in list plus
    ``extra`` globs from managed settings (gitignore-like: a pattern without
    ``/`` matches a name at any depth; ``dir/**`` matches what is below)."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.extra = tuple(extra)
        self._extra = [(_glob_regex(p), p) for p in self.extra]

    def __call__(self, rel: str) -> str | None:
        """What the workspace-relative path ``rel`` controls, or None for an ordinary file."""
        return self.what(rel)

    def what(self, rel: str) -> str | None:
        path = rel.replace("\\", "/").strip("/")
        while path.startswith("./"):
            path = path[2:]
        if not path or path == ".":
            return None
        lowered = path.lower()
        parts = lowered.split("/")
        for part in parts[:-1]:
            if part in _FOLDERS:
                return f"{_FOLDERS[part]} ({part}/)"
        last = parts[-1]
        if last in _FOLDERS:
            return f"{_FOLDERS[last]} ({last})"
        if last in _NAMES:
            return _NAMES[last]
        for tail, what in _PATHS.items():
            if lowered == tail or lowered.endswith("/" + tail):
                return what
        for regex, pattern in self._extra:
            if regex.fullmatch(path):
                return f"a control file by the managed setting control_files ({pattern})"
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ControlFiles) and other.extra == self.extra

    def __hash__(self) -> int:
        return hash(self.extra)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    body = pattern.strip().lstrip("/")
    anchored = "/" in body.rstrip("/")
    if body.endswith("/"):
        body += "**"
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    regex = "".join(out)
    if not anchored:
        regex = "(?:.*/)?" + regex
    return re.compile(regex + "(?:/.*)?", re.IGNORECASE | re.S)

