"""Where command hooks come from and what each entry says.

Smoke's own settings layers (managed, user, project, local, ``create_agent``)
hold ``hooks:`` in Claude Code's shape; with ``hooks_compat`` (a user or
managed setting) Claude Code's ``settings.json`` files and Codex's hooks
files are read too. Entries of every layer are added together (never
replaced), as both originals do. Trust decides which files count: the
workspace's own files (``.smoke/``, ``.claude/``, ``.codex/``) only when the
folder is trusted; managed ``allow_managed_hooks_only`` leaves only the
managed file's hooks.

Parsing never raises: a bad file or entry becomes a problem message naming
the file, the entry and what is wrong, and the other hooks still load.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: The events Smoke fires, Claude Code's names.
EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit", "Stop",
    "SubagentStop", "SessionStart", "SessionEnd", "PreCompact", "Notification",
)
#: Events Claude Code or Codex have and Smoke never fires (their hooks load and never run).
OTHER_EVENTS = (
    "PostToolBatch", "PermissionDenied", "UserPromptExpansion", "SubagentStart", "StopFailure", "PostCompact",
    "Setup", "InstructionsLoaded", "TaskCreated", "TaskCompleted", "TeammateIdle", "ConfigChange", "CwdChanged",
    "DirectoryAdded", "FileChanged", "WorktreeCreate", "WorktreeRemove", "Elicitation", "ElicitationResult",
    "MessageDisplay", "Interrupt",
)
#: Seconds a handler may run unless it sets ``timeout`` (Claude Code and Codex: 10 minutes;
#: Claude Code gives UserPromptSubmit 30 s and SessionEnd 1.5 s).
DEFAULT_TIMEOUT = 600.0
EVENT_TIMEOUTS = {"UserPromptSubmit": 30.0, "SessionEnd": 1.5}
#: what a matcher is tested against, per event (tool events: the tool's names)
MATCHED_FIELD = {"SessionStart": "source", "SessionEnd": "reason", "PreCompact": "trigger",
                 "Notification": "notification_type", "SubagentStop": "agent_type"}
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})

Layer = Literal["managed", "user", "project", "local", "code"]
Dialect = Literal["smoke", "claude"]
COMPAT = ("claude", "codex")


# ---------------------------------------------------------------- matchers

_EXACT = re.compile(r"^[A-Za-z0-9_ ,|-]*$")


@dataclass(frozen=True, slots=True)
class Matcher:
    """Claude Code's matcher rules: empty, ``*`` or none match everything; a
    matcher of letters, digits, ``_ - , |`` and spaces is a list of exact
    names; anything else is a regular expression searched (unanchored) in
    the name. ``pattern`` is None for a matcher that matches everything."""

    text: str | None
    exact: frozenset[str] | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, names: Iterable[str]) -> bool:
        if self.exact is not None:
            return any(n in self.exact for n in names)
        if self.pattern is None:
            return True
        return any(self.pattern.search(n) for n in names)


def compile_matcher(text: Any) -> tuple[Matcher | None, str | None]:
    """``(matcher, None)``, or ``(None, problem)`` for a matcher that cannot work."""
    if text is None or text == "" or text == "*":
        return Matcher(None if text is None else str(text)), None
    if not isinstance(text, str):
        return None, f"matcher must be text, got {type(text).__name__}"
    if _EXACT.match(text):
        names = frozenset(p.strip() for p in re.split(r"[|,]", text) if p.strip())
        return Matcher(text, exact=names), None
    try:
        # JavaScript's named groups, as Claude Code's matchers are JavaScript regular expressions
        return Matcher(text, pattern=re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", text))), None
    except re.error as exc:
        return None, f"matcher {text!r} is not a valid regular expression ({exc})"


# ---------------------------------------------------------------- hooks


@dataclass(frozen=True, slots=True)
class CommandHook:
    """One handler: run ``command`` (``sh -c``, or ``command`` with ``args``
    directly) when ``event`` fires and ``matcher`` matches."""

    event: str
    matcher: Matcher
    command: str
    args: tuple[str, ...] | None
    timeout: float
    #: what a failure of this hook does where the event can block: ``block`` (fail-closed) or ``allow``
    on_error: Literal["block", "allow"]
    source: str
    layer: Layer
    #: ``claude``: the hook was written for Claude Code or Codex and sees tools in that shape
    dialect: Dialect
    where: str

    @property
    def label(self) -> str:
        return f"{self.source} {self.where}"

    @property
    def shown(self) -> str:
        text = " ".join([self.command, *self.args]) if self.args is not None else self.command
        return text if len(text) <= 80 else text[:77] + "..."

    def key(self) -> tuple[Any, ...]:
        """What makes two entries the same handler (run once)."""
        return (self.event, self.command, self.args)


@dataclass
class LoadedHooks:
    hooks: list[CommandHook] = field(default_factory=list)
    #: one message per bad file or entry, naming it
    problems: list[str] = field(default_factory=list)
    #: files holding hooks that are not read, and why (for ``smoke hooks``)
    unread: list[tuple[str, str]] = field(default_factory=list)
    #: the files that were read, with their layer
    read: list[tuple[str, str]] = field(default_factory=list)
    compat: tuple[str, ...] = ()
    managed_only: bool = False

    def for_event(self, event: str) -> list[CommandHook]:
        return [h for h in self.hooks if h.event == event]


def parse_hooks(block: Any, *, source: str, layer: Layer, dialect: Dialect) -> tuple[list[CommandHook], list[str]]:
    """The handlers of one ``hooks`` mapping, and a problem per bad entry."""
    hooks: list[CommandHook] = []
    problems: list[str] = []
    if block is None:
        return hooks, problems
    if not isinstance(block, Mapping):
        return hooks, [f"{source}: hooks must be a mapping of event names (PreToolUse: [...]), got "
                       f"{type(block).__name__}; none of its hooks run"]
    for event, groups in block.items():
        if event not in EVENTS:
            if event in OTHER_EVENTS:
                problems.append(f"{source}: hooks for {event} never run: Smoke has no {event} event")
            else:
                close = difflib.get_close_matches(str(event), EVENTS, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; events: {', '.join(EVENTS)}"
                problems.append(f"{source}: unknown hook event {event!r}{hint}; its hooks are skipped")
            continue
        if not isinstance(groups, list):
            problems.append(f"{source}: hooks.{event} must be a list of {{matcher, hooks}} groups; skipped")
            continue
        for gi, group in enumerate(groups):
            where = f"{event}[{gi}]"
            if not isinstance(group, Mapping):
                problems.append(f"{source}: {where} must be a mapping with matcher and hooks; skipped")
                continue
            matcher, problem = compile_matcher(group.get("matcher"))
            if matcher is None:
                problems.append(f"{source}: {where}: {problem}; its hooks never run")
                continue
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                problems.append(f"{source}: {where}.hooks must be a list of handlers; skipped")
                continue
            for hi, raw in enumerate(handlers):
                hook, problem = _handler(raw, event, matcher, source, layer, dialect, f"{where}.hooks[{hi}]")
                if hook is not None:
                    hooks.append(hook)
                if problem:
                    problems.append(problem)
    return hooks, problems


def _handler(raw: Any, event: str, matcher: Matcher, source: str, layer: Layer, dialect: Dialect,
             where: str) -> tuple[CommandHook | None, str | None]:
    here = f"{source}: {where}"
    if not isinstance(raw, Mapping):
        return None, f"{here} must be a mapping such as {{type: command, command: ...}}; skipped"
    kind = raw.get("type", "command")
    if kind != "command":
        return None, f"{here}: hooks of type {kind!r} are not supported (only type: command); skipped"
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        return None, f"{here}: command must be non-empty text; skipped"
    for unsupported in ("if", "async", "asyncRewake"):
        if raw.get(unsupported):
            return None, f"{here}: {unsupported!r} is not supported by Smoke; this hook is skipped"
    args = raw.get("args")
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        return None, f"{here}: args must be a list of text; skipped"
    timeout = raw.get("timeout", EVENT_TIMEOUTS.get(event, DEFAULT_TIMEOUT))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        return None, f"{here}: timeout must be a positive number of seconds, got {timeout!r}; skipped"
    on_error = raw.get("on_error", "block" if layer == "managed" else "allow")
    if on_error not in ("block", "allow"):
        return None, f"{here}: on_error must be block or allow, got {on_error!r}; skipped"
    return CommandHook(event, matcher, command, tuple(args) if args is not None else None, float(timeout),
                       on_error, source, layer, dialect, where), None


# ---------------------------------------------------------------- files


def claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot be read ({exc}); its hooks do not run"
    except ValueError as exc:
        return None, f"{path}: is not valid JSON ({exc}); its hooks do not run"


def _read_toml_hooks(path: Path) -> tuple[Any, str | None]:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot be read ({exc}); its hooks do not run"
    except tomllib.TOMLDecodeError as exc:
        return None, f"{path}: is not valid TOML ({exc}); its hooks do not run"
    return data.get("hooks"), None


def _read_yaml_hooks(path: Path, *, managed: bool = False) -> tuple[Any, str | None]:
    from smoke_core.settings import SettingsError, read_settings_file

    try:
        data = read_settings_file(path, managed=managed)
    except SettingsError as exc:
        return None, str(exc)
    return (data or {}).get("hooks"), None


def compat_files(workspace: Path) -> list[tuple[str, Path, Layer, str]]:
    """``(kind, path, layer, format)`` of every Claude Code and Codex file that may hold hooks."""
    claude, codex = claude_home(), codex_home()
    return [
        ("claude", claude / "settings.json", "user", "json"),
        ("claude", workspace / ".claude" / "settings.json", "project", "json"),
        ("claude", workspace / ".claude" / "settings.local.json", "local", "json"),
        ("codex", codex / "hooks.json", "user", "json"),
        ("codex", codex / "config.toml", "user", "toml"),
        ("codex", workspace / ".codex" / "hooks.json", "project", "json"),
        ("codex", workspace / ".codex" / "config.toml", "project", "toml"),
    ]


def _compat_value(values: Mapping[str, Any], origins: Mapping[str, str], workspace: Path,
                  problems: list[str]) -> tuple[str, ...]:
    """``hooks_compat`` as the person (user settings, flags, code) or managed settings set it;
    a workspace's own file may not turn it on."""
    from smoke_core.settings import managed_settings_path, read_settings_file, user_settings_path

    value = values.get("hooks_compat") or []
    origin = str(origins.get("hooks_compat", "default"))
    if value and Path(origin).is_absolute() and Path(origin).resolve().is_relative_to(workspace.resolve()):
        problems.append(f"{origin}: hooks_compat is read only from your user settings or managed settings "
                        f"(a repository may not turn on other programs' hooks); ignored")
        value = []
        for path, managed in ((user_settings_path(), False), (managed_settings_path(), True)):
            try:
                value = list((read_settings_file(path, managed=managed) or {}).get("hooks_compat") or value)
            except Exception:  # the settings layers already reported a bad file
                pass
    return tuple(v for v in COMPAT if v in value)


def load_hooks(workspace: Path, *, trusted: bool, values: Mapping[str, Any], origins: Mapping[str, str],
               code_hooks: Any = None) -> LoadedHooks:
    """Every command hook that applies to ``workspace``. ``values`` and
    ``origins`` are the resolved plugin settings and where each came from;
    ``code_hooks`` is ``create_agent(hooks=...)``'s command part."""
    from smoke_core.settings import (
        local_settings_path,
        managed_settings_path,
        project_settings_path,
        user_settings_path,
    )

    out = LoadedHooks()
    managed_path = managed_settings_path()
    out.managed_only = bool(values.get("allow_managed_hooks_only")) and (
        str(origins.get("allow_managed_hooks_only")) == str(managed_path))
    if values.get("allow_managed_hooks_only") and not out.managed_only:
        out.problems.append(f"{origins.get('allow_managed_hooks_only')}: allow_managed_hooks_only is honoured "
                            f"only in managed settings ({managed_path}); ignored")
    out.compat = _compat_value(values, origins, workspace, out.problems)

    sources: list[tuple[str, Any, Layer, Dialect]] = []
    block, problem = _read_yaml_hooks(managed_path, managed=True)
    if problem:
        out.problems.append(problem)
    sources.append((str(managed_path), block, "managed", "smoke"))
    for path, layer in ((user_settings_path(), "user"), (project_settings_path(workspace), "project"),
                        (local_settings_path(workspace), "local")):
        block, problem = _read_yaml_hooks(path)
        if problem:
            out.problems.append(problem)
        sources.append((str(path), block, layer, "smoke"))  # type: ignore[arg-type]
    sources.append(("create_agent(hooks=...)", code_hooks, "code", "smoke"))
    for kind, path, layer, fmt in compat_files(workspace):
        if kind not in out.compat:
            if path.is_file() and _has_hooks(path, fmt):
                out.unread.append((str(path), f"{kind} hooks are read only with hooks_compat: [{kind}] "
                                              f"in your user settings"))
            continue
        block, problem = _read_json(path) if fmt == "json" else _read_toml_hooks(path)
        if fmt == "json" and isinstance(block, Mapping):
            block = block.get("hooks")
        if problem:
            out.problems.append(problem)
        sources.append((str(path), block, layer, "claude"))

    untrusted_files: list[str] = []
    silenced: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    for source, block, layer, dialect in sources:
        if block is None:
            continue
        if layer in ("project", "local") and not trusted:
            if dialect == "claude":  # Smoke's own files: the settings layers already said so, once
                untrusted_files.append(source)
            out.unread.append((source, "this folder is not trusted (smoke trust)"))
            continue
        if out.managed_only and layer != "managed":
            silenced.append(source)
            out.unread.append((source, f"managed settings ({managed_path}) allow only managed hooks"))
            continue
        hooks, problems = parse_hooks(block, source=source, layer=layer, dialect=dialect)
        out.problems.extend(problems)
        out.read.append((source, layer))
        for hook in hooks:
            if hook.key() in seen:
                continue
            seen.add(hook.key())
            out.hooks.append(hook)
    if untrusted_files:
        out.problems.append(
            f"hooks in {', '.join(untrusted_files)} do not run: this folder ({workspace}) is not trusted, and "
            f"hooks run commands. If you trust it, run `smoke trust {workspace}`.")
    if silenced:
        out.problems.append(f"hooks in {', '.join(silenced)} do not run: managed settings ({managed_path}) "
                            f"set allow_managed_hooks_only")
    return out


def _has_hooks(path: Path, fmt: str) -> bool:
    block, _ = _read_json(path) if fmt == "json" else _read_toml_hooks(path)
    if fmt == "json" and isinstance(block, Mapping):
        block = block.get("hooks")
    return bool(block)
