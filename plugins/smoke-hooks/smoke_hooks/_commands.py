"""Custom slash commands from Markdown files: ``~/.claude/commands/*.md``
(yours), ``.smoke/commands/*.md`` and ``.claude/commands/*.md`` (the
workspace's), each ``/name`` with YAML front matter (``description``,
``argument-hint``, ``allowed-tools``, ``model``) and a body that becomes the
person's next message.

What the files cannot do, whoever wrote them: ``!`cmd``` is never run and
``@path`` is never read while the command is expanded — both become words
asking the model to do it with its tools, so each goes through the
permission gate, the rules and the sandbox like any other call.
``allowed-tools`` only narrows the turn the command starts (the other tools
are hidden and refused); it never pre-approves a call.
"""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._config import claude_home

log = logging.getLogger("smoke")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_SHELL = re.compile(r"(^|(?<=\s))!`([^`\n]+)`")
_FILE = re.compile(r"(?<![\w@`])@([\w./~-][^\s@`]*)")
_POSITIONAL = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$([1-9])")
_MAX_BYTES = 256 * 1024


@dataclass
class CommandFile:
    """One command file: ``/name`` and what its front matter says."""

    name: str
    path: Path
    scope: str  # "user" or "project"
    body: str
    description: str = ""
    argument_hint: str = ""
    allowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    namespace: str | None = None
    #: where it came from, for the person: ``~/.claude/commands``, ``.claude/commands``, ``.smoke/commands``
    folder: str = ""


def command_dirs(workspace: Path) -> list[tuple[Path, str]]:
    """Where command files are looked for, first wins on a name clash (yours over the workspace's)."""
    return [(claude_home() / "commands", "user"), (workspace / ".smoke" / "commands", "project"),
            (workspace / ".claude" / "commands", "project")]


def _front_matter(text: str, path: Path) -> tuple[dict[str, Any], str, str | None]:
    if not text.startswith("---"):
        return {}, text, None
    lines = text.split("\n")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            import yaml

            try:
                data = yaml.safe_load("\n".join(lines[1:i])) or {}
            except yaml.YAMLError as exc:
                return {}, text, f"{path}: its front matter is not valid YAML ({exc}); skipped"
            if not isinstance(data, dict):
                return {}, text, f"{path}: its front matter must be a mapping; skipped"
            return data, "\n".join(lines[i + 1:]).lstrip("\n"), None
    return {}, text, None


def _tools_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    if isinstance(value, str):
        # "Bash(git add:*), Bash(git status:*)" or "Read Grep": split outside parentheses
        parts, depth, current = [], 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and ch in ", ":
                if current.strip():
                    parts.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            parts.append(current.strip())
        return parts
    return []


def discover(workspace: Path) -> tuple[dict[str, CommandFile], list[str]]:
    """``{name: command}`` for every command file that applies (a file in a
    subfolder is ``/sub:name``, and ``/name`` too when no other file takes
    it), and a problem per file that cannot be used."""
    found: dict[str, CommandFile] = {}
    aliases: dict[str, list[CommandFile]] = {}
    problems: list[str] = []
    for folder, scope in command_dirs(workspace):
        if not folder.is_dir():
            continue
        root = folder.resolve()
        for path in sorted(folder.rglob("*.md")):
            if scope == "project" and not path.resolve().is_relative_to(root):
                problems.append(f"{path}: a symlink out of {folder}; skipped (a repository's command may not "
                                f"send your other files to the model)")
                continue
            try:
                if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{path}: cannot be read ({exc}); skipped")
                continue
            meta, body, problem = _front_matter(text, path)
            if problem:
                problems.append(problem)
                continue
            rel = path.relative_to(folder).with_suffix("")
            namespace = ":".join(rel.parts[:-1]) or None
            name = ":".join(rel.parts)
            if not _NAME.match(name):
                problems.append(f"{path}: /{name} is not a command name (letters, digits, _ - . :); skipped")
                continue
            first = next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")
            command = CommandFile(
                name=name, path=path, scope=scope, body=body,
                description=str(meta.get("description") or first)[:200],
                argument_hint=str(meta.get("argument-hint") or ""),
                allowed_tools=_tools_list(meta.get("allowed-tools")),
                model=str(meta["model"]) if meta.get("model") else None, namespace=namespace,
                folder="~/.claude/commands" if scope == "user" else f"{folder.parent.name}/commands",
            )
            if name in found:
                problems.append(f"{path}: /{name} is also {found[name].path}, which wins; skipped")
                continue
            found[name] = command
            if namespace:
                aliases.setdefault(rel.parts[-1], []).append(command)
    for alias, owners in aliases.items():
        if alias not in found and len(owners) == 1:
            found[alias] = owners[0]
    return found, problems


def expand(command: CommandFile, args: str) -> str:
    """The command's body with its arguments: ``$ARGUMENTS`` (all of it),
    ``$1``..``$9`` (1-based, as the 2025 docs and Codex have it),
    ``$ARGUMENTS[N]`` (0-based, as Claude Code has it now); when the body
    names none and arguments were given, they are appended."""
    body = command.body
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    named = "$ARGUMENTS" in body or bool(_POSITIONAL.search(body))

    def positional(m: re.Match[str]) -> str:
        index = int(m.group(1)) if m.group(1) is not None else int(m.group(2)) - 1
        return words[index] if index < len(words) else ""

    text = _POSITIONAL.sub(positional, body).replace("$ARGUMENTS", args.strip())
    text = _SHELL.sub(lambda m: f"(the output of `{m.group(2)}`: run it yourself to see it)", text)
    text = _FILE.sub(lambda m: f"`{m.group(1).rstrip('.,;:!?)')}` (read that file yourself)"
                     + m.group(1)[len(m.group(1).rstrip(".,;:!?)")):], text)
    if not named and args.strip():
        text = f"{text.rstrip()}\n\nARGUMENTS: {args.strip()}"
    return text.strip()


def narrowing_for(command: CommandFile, agent: Any) -> Any:
    """``allowed-tools`` as a :class:`~smoke_hooks._hooks.Narrowing` over the agent's tools (None when it names none)."""
    from ._dialect import match_names
    from ._hooks import Narrowing

    if not command.allowed_tools:
        return None
    allowed: list[tuple[frozenset[str], str | None]] = []
    shown: list[str] = []
    tools = agent.tools
    for entry in command.allowed_tools:
        m = re.match(r"^([A-Za-z0-9_*.-]+)(?:\((.*)\))?$", entry.strip())
        if m is None:
            continue
        name, pattern = m.group(1), m.group(2)
        if pattern is not None:
            pattern = pattern.strip()
            pattern = pattern[:-2] + "*" if pattern.endswith(":*") else pattern  # Claude's prefix form
            pattern = pattern or None
        names = frozenset(t for t, tool in tools.items() if name in match_names(tool, t) or name == "*")
        if names:
            allowed.append((names, pattern))
            shown.append(", ".join(sorted(names)) + (f" ({pattern})" if pattern else ""))
    return Narrowing(command.name, allowed, "; ".join(shown) or "no tool of this agent")


def register_file_commands(register: Any, agent: Any) -> None:
    from ._hooks import pending_narrowing

    commands, problems = discover(agent.workspace.root)
    for problem in problems:
        log.warning("smoke-hooks: %s", problem)
    for name, command in commands.items():

        def handler(args: str, chat: Any, command: CommandFile = command) -> str:
            narrowing = narrowing_for(command, chat.agent)
            if narrowing is not None:
                pending_narrowing[chat.agent] = narrowing
            return expand(command, args)

        suffix = f" ({command.folder}{':' + command.namespace if command.namespace else ''})"
        register(name, handler, description=(command.description or f"/{name}") + suffix,
                 usage=f"/{name} {command.argument_hint}".strip())
