"""Permission rules: parsing (``tool`` or ``tool(pattern)``), matching a request
(path patterns with gitignore-like semantics, command patterns), the rule
written for "always", precedence, and secret-looking paths.

docs/security.md is the reference.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .domains import URL_KEYS, domain_matches, domain_rule_pattern

if TYPE_CHECKING:
    from .commands.model import CommandParse

Decision = Literal["allow", "deny", "ask"]
RuleAction = Literal["allow", "ask", "deny"]
PERMISSION_MODES = ("ask-default", "accept-edits", "plan", "allow-all", "deny-all")
#: Modes from the tightest to the loosest (an untrusted folder may only tighten). ``plan``
#: refuses every change until a person approves a plan; ``accept-edits`` lets file edits run.
MODE_STRICTNESS = {"deny-all": 0, "plan": 1, "ask-default": 2, "accept-edits": 3, "allow-all": 4}
RULE_ACTIONS: tuple[RuleAction, ...] = ("allow", "ask", "deny")

#: Answers accepted by ``agent.resolve_permission``: ``allow`` (this call),
#: ``allow_run`` (this tool — or this MCP server — for the rest of the run),
#: ``allow_always`` (write an allow rule for exactly this tool and argument
#: to the settings, so later runs do not ask), ``allow_network`` (this call,
#: and a sandboxed command may reach the network this once), ``deny``,
#: ``deny_always`` (write a deny rule for exactly this tool and argument).
ANSWERS = ("allow", "allow_run", "allow_always", "allow_network", "deny", "deny_always")

_SECRET_NAME = re.compile(
    r"(^|/)(\.env(\..*)?|\.netrc|\.pgpass|\.npmrc|\.pypirc|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|"
    r"credentials(\.json)?|secrets?\.(ya?ml|json|toml)|.*\.(pem|key|p12|pfx|keystore|jks))$",
    re.IGNORECASE,
)
_SECRET_DIR = re.compile(r"(^|/)(\.ssh|\.aws|\.gnupg|\.kube)(/|$)")

#: Input fields that hold a path (for the secret check and path rules).
_PATH_FIELDS = ("path", "file", "file_path", "filename", "workdir", "target")
#: ``permission_key`` names whose value is a path; tool kinds whose key is a path.
_PATH_KEYS = frozenset({*_PATH_FIELDS, "dir", "directory", "folder"})
_PATH_KINDS = frozenset({"read", "edit", "delete", "move"})
_COMMAND_KEYS = frozenset({"command", "cmd"})

#: ``domain``: the value is a URL and rules match its host (:mod:`.domains`)
ValueMode = Literal["path", "command", "plain", "domain"]


def looks_secret(path: str) -> bool:
    """True for paths that usually hold secrets (``.env``, private keys, cloud credentials)."""
    p = path.replace("\\", "/").strip()
    return bool(_SECRET_NAME.search(p) or _SECRET_DIR.search(p))


def paths_in(value: Any) -> list[str]:
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, str) and k in _PATH_FIELDS:
                out.append(v)
            elif isinstance(v, list) and k in ("paths", "files"):
                out.extend(x for x in v if isinstance(x, str))
    return out


@dataclass(slots=True)
class PermissionRequest:
    """What the gate is asked about. ``kind`` is ``"tool"`` or ``"mcp_server"``."""

    tool_call_id: str
    kind: str
    tool_name: str
    input: dict[str, Any] = field(default_factory=dict)
    read_only: bool = False
    reason: str | None = None
    scope: str | None = None  # "allow for this run" key: tool name or "mcp:<server>"
    #: the tool's declared kind (``read``, ``edit``, ``execute``...; see ToolAnnotations)
    tool_kind: str | None = None
    #: the value permission rules match (the tool's ``permission_key`` argument), if any
    permission_value: str | None = None
    destructive: bool | None = None
    #: a ``before_tool_call`` hook's answer (``"allow"`` or ``"ask"``) and its reason; the
    #: gate weighs it in one place (``PermissionGate._hook_answer``)
    hook_decision: str | None = None
    hook_reason: str | None = None
    #: the plugin that rewrote ``input`` (a person asked is told), or None
    rewritten_by: str | None = None
    #: a command tool's call: its command parsed (:func:`smoke_core.plugin.parse_command`),
    #: made by the gate once per call and shared by every rule (None before, and for other tools)
    command_parse: CommandParse | None = None

    @property
    def commands(self) -> list[list[str]] | None:
        """The simple commands of a command tool's call as argv lists, wrappers
        looked through (``["git", "push", "--force"]`` for ``env git -C . push --force``);
        None for other tools, and before the gate parsed the command."""
        return self.command_parse.commands if self.command_parse is not None else None


#: input keys of a command tool that reach the shell besides the command
ENV_KEY = "env"
BACKGROUND_KEY = "background"
WORKDIR_KEYS = ("workdir", "cwd")


def call_env(request: PermissionRequest) -> tuple[tuple[str, str], ...]:
    """The call's ``env`` entries, sorted by name (what a rule must name)."""
    env = request.input.get(ENV_KEY)
    if not isinstance(env, Mapping):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in env.items()))


def call_background(request: PermissionRequest) -> bool:
    return request.input.get(BACKGROUND_KEY) is True


def call_workdir(request: PermissionRequest) -> str | None:
    for key in WORKDIR_KEYS:
        value = request.input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None



# ---------------------------------------------------------------- rules


class RuleError(ValueError):
    """A permission rule that cannot be parsed. The message names the rule and where it came from."""


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One parsed rule: ``tool`` (a glob over tool names) and an optional
    ``pattern`` (a glob over the request's ``permission_value``)."""

    action: RuleAction
    text: str
    tool: str
    pattern: str | None
    origin: str = "create_agent"
    managed: bool = False

    @property
    def exact(self) -> bool:
        """True when neither part holds a wildcard (the rule names one tool and one value)."""
        return not _has_wildcard(self.tool) and (self.pattern is None or not _has_wildcard(self.pattern))

    def matches_tool(self, name: str) -> bool:
        return _compile(self.tool, "plain").fullmatch(name) is not None

    def describe(self) -> str:
        return f"{self.action} rule {self.text!r} ({'managed: ' if self.managed else ''}{self.origin})"


_RULE_SHAPE = re.compile(r"^([^()\s]+)(?:\((.*)\))?$", re.S)
_TOOL_PART = re.compile(r"^[A-Za-z0-9_\-*?\[\]!]+$")


def parse_rule(text: Any, action: RuleAction = "allow", *, origin: str = "create_agent",
               managed: bool = False) -> PermissionRule:
    """Parse ``tool_name`` or ``tool_name(pattern)``. Raises :class:`RuleError`
    naming the rule and ``origin``."""
    where = f" (in {origin})" if origin else ""
    if not isinstance(text, str):
        raise RuleError(
            f"permission rule {text!r}{where} must be a string such as 'run_command(pytest *)', "
            f"got {type(text).__name__}"
        )
    stripped = text.strip()
    match = _RULE_SHAPE.match(stripped)
    if not stripped or match is None or not _TOOL_PART.match(match.group(1)):
        hint = ""
        if stripped.count("(") != stripped.count(")") or ("(" in stripped and not stripped.endswith(")")):
            hint = " (unbalanced parentheses: write tool(pattern))"
        raise RuleError(
            f"cannot parse permission rule {text!r}{where}{hint}. A rule is a tool name or "
            f"tool(pattern), e.g. 'write_file(src/**)', 'run_command(pytest *)', 'mcp__github__*'."
        )
    tool, pattern = match.group(1), match.group(2)
    if pattern is not None:
        pattern = pattern.strip()
        if not pattern:
            raise RuleError(
                f"permission rule {text!r}{where} has an empty pattern; write {tool!r} to match every call"
            )
        try:
            for mode in ("path", "plain"):
                _compile(_expand_home(pattern), mode)
        except re.error as exc:
            raise RuleError(f"cannot parse the pattern of permission rule {text!r}{where}: {exc}") from None
    return PermissionRule(action, stripped, tool, pattern, origin, managed)


def _has_wildcard(text: str) -> bool:
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "*?[":
            return True
        i += 1
    return False


def escape_glob(text: str) -> str:
    """``text`` with every glob metacharacter escaped (matches only itself)."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


def _expand_home(pattern: str) -> str:
    if pattern == "~" or pattern.startswith("~/"):
        return escape_glob(str(Path.home())) + pattern[1:]
    return pattern


_compiled: dict[tuple[str, str], re.Pattern[str]] = {}


def _compile(pattern: str, mode: ValueMode) -> re.Pattern[str]:
    """Translate a glob to a regex. ``path``: ``*``/``?`` stop at ``/``,
    ``**`` spans folders. ``plain``: ``*`` spans anything. (Command patterns
    are compiled by :mod:`.commands.patterns`.)"""
    key = (pattern, mode)
    cached = _compiled.get(key)
    if cached is not None:
        return cached
    star = "[^/]*" if mode == "path" else ".*"
    one = "[^/]" if mode == "path" else "."
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 < n:
                out.append(re.escape(pattern[i + 1]))
                i += 2
            else:
                out.append(re.escape("\\"))
                i += 1
        elif ch == "*":
            if mode == "path" and pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2] if i + 2 < n else ""
                if at_start and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if at_start and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append(star)
                i += 2
                while i < n and pattern[i] == "*":
                    i += 1
                continue
            out.append(star)
            i += 1
        elif ch == "?":
            out.append(one)
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2 if i + 1 < n and pattern[i + 1] in "!^" else i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
                continue
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\")
            out.append(f"[{'^' if negate else ''}{'/' if negate and mode == 'path' else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    compiled = re.compile("".join(out), re.S)
    if len(_compiled) > 4096:
        _compiled.clear()
    _compiled[key] = compiled
    return compiled


@dataclass(frozen=True, slots=True)
class _PathForms:
    """A path argument as rules see it: workspace-relative (None when outside)
    and absolute, both lexically normalised and with symlinks resolved."""

    relative: tuple[str | None, ...]
    absolute: tuple[str, ...]

    def all_strings(self) -> list[str]:
        return [*(r for r in self.relative if r is not None), *self.absolute]


def path_forms(value: str, workspace: Path | None) -> _PathForms:
    raw = value.replace("\\", "/")
    base = workspace or Path.cwd()
    expanded = os.path.expanduser(raw)
    joined = expanded if os.path.isabs(expanded) else os.path.join(str(base), expanded)
    lexical = os.path.normpath(joined)
    try:
        resolved = os.path.realpath(joined)
    except (OSError, ValueError):
        resolved = lexical
    rels: list[str | None] = []
    abss: list[str] = []
    for form in dict.fromkeys((lexical, resolved)):
        abss.append(form)
        rels.append(_relative_to(form, workspace))
    return _PathForms(tuple(rels), tuple(abss))


def _relative_to(path: str, workspace: Path | None) -> str | None:
    if workspace is None:
        return None
    root = str(workspace)
    if path == root:
        return "."
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return None


def value_mode(tool_kind: str | None, permission_key: str | None) -> ValueMode:
    """How a tool's rule patterns match: paths, commands, or plain text."""
    if permission_key in _PATH_KEYS:
        return "path"
    if permission_key in _COMMAND_KEYS:
        return "command"
    if permission_key in URL_KEYS:
        return "domain"
    if tool_kind in _PATH_KINDS:
        return "path"
    if tool_kind == "execute":
        return "command"
    return "plain"


class RequestView:
    """What rules match for one request, computed once."""

    __slots__ = ("forms", "mode", "request", "value")

    def __init__(self, request: PermissionRequest, mode: ValueMode, workspace: Path | None) -> None:
        self.request = request
        self.mode = mode
        self.value = request.permission_value
        self.forms = path_forms(self.value, workspace) if (mode == "path" and self.value is not None) else None

    def matches(self, rule: PermissionRule) -> bool:
        if not rule.matches_tool(self.request.tool_name):
            return False
        if rule.pattern is None:
            return True
        if self.value is None:
            return False
        if self.mode == "domain":
            return domain_matches(rule.pattern, self.value)
        if self.mode == "path":
            return self._path_match(rule.pattern, rule.action == "allow")
        if self.mode == "command":  # decided on the parse (command_rules), never on the text
            raise ValueError("command rules are matched on the command's parse: use PermissionGate.decide")
        return _compile(rule.pattern, "plain").fullmatch(self.value) is not None

    def _path_match(self, pattern: str, loosening: bool) -> bool:
        assert self.forms is not None
        pattern = _expand_home(pattern)
        if pattern.startswith("/"):
            candidates: tuple[str | None, ...] = self.forms.absolute
            regex = _compile(pattern, "path")
        else:
            candidates = self.forms.relative
            body = pattern[2:] if pattern.startswith("./") else pattern
            if body.endswith("/"):
                body += "**"
            anchored = pattern.startswith("./") or "/" in body.rstrip("/")
            regex = _compile(body if anchored else f"**/{body}", "path")
        results = [c is not None and regex.fullmatch(c) is not None for c in candidates]
        # allow: every form (as written, symlinks resolved) must match; deny/ask: any form
        return all(results) if loosening else any(results)


def rule_for(request: PermissionRequest, *, workspace: str | os.PathLike[str] | None = None,
             permission_key: str | None = None, absolute: bool = False) -> str:
    """The rule that allows exactly this tool with exactly this argument
    (glob characters escaped): ``write_file(src/app.py)``,
    ``write_file(./setup.py)`` (a file at the root), or the bare tool name
    for a tool without ``permission_key``. For a command tool: the rules for
    its simple commands, ``", "``-joined (:meth:`PermissionGate.rules_for`
    gives the list; empty when none can cover the command).
    ``absolute=True`` anchors paths to the filesystem (for the user file,
    which applies to every folder)."""
    name = escape_glob(request.tool_name)
    value = request.permission_value
    if value is None:
        return name
    ws = Path(workspace).resolve() if workspace is not None else None
    mode = value_mode(request.tool_kind, permission_key)
    if mode == "command":
        from .commands.decide import exact_patterns
        from .commands.walker import parse_command

        parse = request.command_parse or parse_command(value, ws)
        patterns = exact_patterns(parse, env=call_env(request), background=call_background(request))
        return ", ".join(f"{name}({pattern})" for pattern in patterns)
    if mode == "domain":
        host = domain_rule_pattern(value)
        return f"{name}({host})" if host else name
    if mode == "path":
        forms = path_forms(value, ws)
        rel = forms.relative[0]
        if rel is not None and not absolute:
            text = escape_glob(rel)
            return f"{name}({text if '/' in rel else './' + text})"
        return f"{name}({escape_glob(forms.absolute[0])})"
    return f"{name}({escape_glob(value)})"


# ---------------------------------------------------------------- the gate


_RANK = {"allow": 0, "ask": 1, "deny": 2}


def precedence(rule: PermissionRule) -> tuple[int, bool, bool]:
    # deny > ask > allow; managed first within an action; an exact allow rule
    # before a wildcard one (only an exact rule may allow a secret path)
    return _RANK[rule.action], rule.managed, rule.exact
