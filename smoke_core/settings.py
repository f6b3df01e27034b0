"""Settings: one typed model, read from layers, limited by trust (DESIGN §9).

Layers, in increasing precedence:

- **user** — ``$XDG_CONFIG_HOME/smoke/config.yaml`` (``~/.config/smoke/config.yaml``);
- **project** — ``<workspace>/.smoke/config.yaml``;
- **local** — ``<workspace>/.smoke/config.local.yaml`` (meant to stay out of git);
- **environment** — ``SMOKE_PROVIDER``, ``SMOKE_MODEL``, ``SMOKE_BASE_URL``,
  ``SMOKE_PERMISSION``, ``SMOKE_MAX_STEPS``;
- **code** — ``create_agent(...)`` keyword arguments, or the CLI's flags;

and above all of them **managed** (``/etc/smoke/managed.yaml``, or the file
named by ``SMOKE_MANAGED_SETTINGS``): a key it sets is final, its deny / ask
rules always apply, and a managed file that cannot be read or is invalid
stops Smoke (fail closed).

Who may set each key is part of the key (:func:`field_policy`): the table in
docs/security.md is generated from it. A workspace is *untrusted* until the
person trusts it (``smoke trust``): then its project and local files may
only set what cannot hurt (model, a lower max_steps, a tighter permission
mode, instructions, deny / ask rules, plugin keys declared
``trusted_only=False``); everything else is ignored with one warning per file.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import functools
import json
import os
import re
import stat
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from .config import ConfigError
from .permissions import MODE_STRICTNESS, PERMISSION_MODES, PermissionRule, RuleError, parse_rule
from .sandbox import SandboxSettings

if TYPE_CHECKING:
    from .plugins import SmokePluginManager

Layer = Literal["managed", "user", "project", "local", "environment", "code"]
#: Every layer, lowest precedence first (managed is applied last: it is final).
LAYERS: tuple[Layer, ...] = ("user", "project", "local", "environment", "code", "managed")
#: What ``create_agent(setting_sources=...)`` may name (managed is always read).
SETTING_SOURCES: tuple[str, ...] = ("user", "project", "local", "environment")
#: Layers that come from the workspace itself, limited when it is not trusted.
WORKSPACE_LAYERS = frozenset({"project", "local"})

DEFAULT_MANAGED_PATH = "/etc/smoke/managed.yaml"
DEFAULT_MAX_STEPS = 50
DEFAULT_PERMISSION = "ask-default"

_ALL = ("managed", "user", "project", "local", "environment", "code")
_FILES_AND_CODE = ("managed", "user", "project", "local", "code")


class SettingsError(ConfigError):
    """A setting, file or ``create_agent`` argument that Smoke cannot accept.
    The message names where it came from, the key, what was expected and
    the value given."""


class UnknownSettingError(SettingsError, TypeError):
    """An unknown ``create_agent`` keyword argument (a ``TypeError``, as
    Python raises for unknown arguments) or an unknown settings key."""


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class FieldPolicy:
    """Who may set a key: ``layers`` that may set it at all, and what an
    untrusted workspace's project / local file may do with it: ``"yes"``,
    ``"no"``, ``"tighter"`` (only a stricter value than the layers below),
    ``"deny_ask"`` (only deny and ask rules)."""

    layers: tuple[str, ...]
    untrusted: Literal["yes", "no", "tighter", "deny_ask"]
    expected: str
    env: str | None = None
    description: str = ""


def _policy(expected: str, *, layers: tuple[str, ...] = _FILES_AND_CODE, untrusted: str = "no",
            env: str | None = None, description: str = "") -> dict[str, Any]:
    return {"smoke": {"layers": list(layers), "untrusted": untrusted, "expected": expected, "env": env,
                      "description": description}}


PositiveInt = Annotated[StrictInt, Field(gt=0)]


class PermissionRules(BaseModel):
    """``permissions: {allow: [...], ask: [...], deny: [...]}``."""

    model_config = ConfigDict(extra="forbid")

    allow: list[StrictStr] = Field(default_factory=list)
    ask: list[StrictStr] = Field(default_factory=list)
    deny: list[StrictStr] = Field(default_factory=list)


class Settings(BaseModel):
    """Every core settings key. ``None`` means "not set in this layer"."""

    model_config = ConfigDict(extra="forbid")

    provider: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a provider name such as 'openai'", layers=_ALL, env="SMOKE_PROVIDER",
        description="the model provider (`openai`, `anthropic`, `nvidia`, ...)"))
    model: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a model name, or provider:model", layers=_ALL, untrusted="yes", env="SMOKE_MODEL",
        description="the model, or `provider:model`"))
    base_url: StrictStr | None = Field(None, json_schema_extra=_policy(
        "an http:// or https:// URL", layers=_ALL, env="SMOKE_BASE_URL",
        description="the provider's endpoint (the API key is sent there)"))
    permission: Literal["ask-default", "allow-all", "deny-all"] | None = Field(None, json_schema_extra=_policy(
        f"one of {', '.join(PERMISSION_MODES)}", layers=_ALL, untrusted="tighter", env="SMOKE_PERMISSION",
        description="the permission mode"))
    auto_approve: StrictBool | list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "true, false, or a list of rules such as ['run_command(pytest *)']",
        description="`true` turns every ask of the mode into allow; a list is allow rules"))
    max_steps: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", layers=_ALL, untrusted="tighter", env="SMOKE_MAX_STEPS",
        description=f"stop a run after this many steps (default {DEFAULT_MAX_STEPS})"))
    permissions: PermissionRules | None = Field(None, json_schema_extra=_policy(
        "a mapping with allow / ask / deny lists of rules", untrusted="deny_ask",
        description="declarative rules `{allow, ask, deny}`"))
    sandbox: SandboxSettings | None = Field(None, json_schema_extra=_policy(
        "a mapping (mode, network, deny_read, allow_write, env, mcp)",
        description="the OS sandbox for commands (docs/sandbox.md)"))
    instructions: StrictStr | None = Field(None, json_schema_extra=_policy(
        "text", untrusted="yes", description="text added to the system prompt (text only: it runs nothing)"))
    trusted_folders: list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "a list of folder paths", layers=("managed", "user"),
        description="folders whose own settings are honoured (`smoke trust`)"))
    plugin_options: dict[StrictStr, dict[StrictStr, Any]] | None = Field(None, json_schema_extra=_policy(
        "a mapping {plugin: {option: value}}", description="options for plugins, by plugin name"))
    managed_rules_only: StrictBool | None = Field(None, json_schema_extra=_policy(
        "true or false", layers=("managed",),
        description="only managed allow rules apply (deny / ask rules from every layer still do)"))

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("provider", "model")
    @classmethod
    def _not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value


SETTING_KEYS: tuple[str, ...] = tuple(Settings.model_fields)


def field_policy(key: str) -> FieldPolicy:
    """Who may set the core key ``key`` (from the model's field metadata)."""
    extra = Settings.model_fields[key].json_schema_extra
    assert isinstance(extra, dict)
    data = extra["smoke"]
    assert isinstance(data, dict)
    return FieldPolicy(tuple(data["layers"]), data["untrusted"], data["expected"], data["env"],  # type: ignore[arg-type]
                       data["description"])  # type: ignore[arg-type]


ENV_VARS: dict[str, str] = {p.env: k for k in SETTING_KEYS if (p := field_policy(k)).env}


def render_trust_table() -> str:
    """The markdown table of who may set what (docs/security.md embeds it; a test checks)."""
    head = ("| key | user | project / local (trusted) | project / local (untrusted) | environment "
            "| `create_agent` / flags | managed |\n|---|---|---|---|---|---|---|")
    words = {"yes": "yes", "no": "ignored", "tighter": "only tighter", "deny_ask": "deny / ask rules only"}
    rows = [head]
    for key in SETTING_KEYS:
        p = field_policy(key)
        def may(layer: str, p: FieldPolicy = p) -> str:
            return "yes" if layer in p.layers else "—"
        untrusted = words[p.untrusted] if "project" in p.layers else "—"
        env = f"`{p.env}`" if p.env else "—"
        rows.append(f"| `{key}` | {may('user')} | {may('project')} | {untrusted} | {env} | {may('code')} "
                    f"| {may('managed')} |")
    rows.append("| plugin keys | yes | yes | only keys declared `trusted_only=False` | — | yes | yes |")
    return "\n".join(rows)


# ---------------------------------------------------------------- plugin keys


@dataclass(frozen=True)
class SettingSpec:
    """A settings key declared by a plugin (``register_settings``)."""

    key: str
    type: Any
    default: Any = None
    trusted_only: bool = True
    description: str = ""
    plugin: str = ""
    #: compatibility declarations only: the plugin reads this key from the
    #: files itself, so only ``create_agent``'s value is passed on.
    code_value_only: bool = False
    adapter: Any = None

    def validate(self, value: Any) -> Any:
        return self.adapter.validate_python(value)


_specs_cache: weakref.WeakKeyDictionary[Any, dict[str, SettingSpec]] = weakref.WeakKeyDictionary()

#: Names a plugin key may not take: core settings and ``create_agent``'s own arguments.
RESERVED_KEYS = frozenset({
    *SETTING_KEYS, "workspace_path", "api_key", "tools", "hooks", "plugins", "system_prompt", "session_id",
    "store", "user_id", "retry", "guards", "context_window", "model_settings", "max_tool_output_chars",
    "autoload_plugins", "provider_options", "trust_workspace", "setting_sources", "settings_origin",
})

def _make_adapter(key: str, type_: Any, label: str) -> Any:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(type_)
    except Exception as exc:
        raise SettingsError(f"plugin {label} declared setting {key!r} with a type pydantic cannot use: {exc}") from None


def collect_setting_specs(pm: SmokePluginManager) -> dict[str, SettingSpec]:
    """Every key declared through ``register_settings`` in ``pm`` (cached per manager)."""
    cached = _specs_cache.get(pm)
    if cached is not None:
        return cached
    from ._hooks import HookRunner

    specs: dict[str, SettingSpec] = {}

    def kwargs(label: str) -> dict[str, Any]:
        def register(key: str, type: Any = Any, *, default: Any = None, trusted_only: bool = True,
                     description: str = "", code_only: bool = False) -> None:
            if not isinstance(key, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
                raise SettingsError(f"plugin {label}: setting key {key!r} must be snake_case (a-z, 0-9, _)")
            if key in RESERVED_KEYS:
                raise SettingsError(f"plugin {label}: setting key {key!r} is reserved by Smoke's core; pick another name")
            if key in specs:
                raise SettingsError(
                    f"cannot declare setting {key!r} twice: already declared by {specs[key].plugin}, "
                    f"declared again by {label}"
                )
            specs[key] = SettingSpec(key, type, default, bool(trusted_only), description, label,
                                     bool(code_only), adapter=_make_adapter(key, type, label))

        return {"register": register}

    def failed(label: str, exc: BaseException) -> None:
        if isinstance(exc, SettingsError):
            raise exc
        raise SettingsError(f"register_settings in plugin {label} failed: {type(exc).__name__}: {exc}") from exc

    HookRunner(pm).collect("register_settings", kwargs, failed)
    _specs_cache[pm] = specs
    return specs


# ---------------------------------------------------------------- paths


def user_settings_path() -> Path:
    return Path(_user_settings_file())


def _user_settings_file() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "smoke", "config.yaml")


def project_settings_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.yaml"


def local_settings_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.local.yaml"


def managed_settings_path() -> Path:
    return Path(os.environ.get("SMOKE_MANAGED_SETTINGS") or DEFAULT_MANAGED_PATH)


def _state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "smoke" / "trust-offered.json"


# ---------------------------------------------------------------- reading files

_file_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def read_settings_file(path: str | os.PathLike[str], *, managed: bool = False) -> dict[str, Any] | None:
    """The mapping in ``path`` (None when the file does not exist). A file
    that cannot be read, is not YAML or does not hold a mapping raises
    :class:`SettingsError`."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SettingsError(_read_problem(path, f"cannot be read ({exc.strerror or exc})", managed)) from None
    if not stat.S_ISREG(st.st_mode):
        raise SettingsError(_read_problem(path, "is not a file", managed))
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _file_cache.get(str(path))
    if cached is not None and cached[0] == stamp:
        return copy.deepcopy(cached[1])
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(_read_problem(path, f"cannot be read ({exc})", managed)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(_read_problem(path, f"is not valid YAML: {exc}", managed)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SettingsError(_read_problem(
            path, f"must hold a mapping of settings (model: ..., permissions: ...), got {type(data).__name__}", managed))
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise SettingsError(_read_problem(path, f"has a key that is not text: {bad[0]!r}", managed))
    if len(_file_cache) > 256:
        _file_cache.clear()
    _file_cache[str(path)] = (stamp, copy.deepcopy(data))
    return data


def _read_problem(path: str | os.PathLike[str], what: str, managed: bool) -> str:
    if managed:
        return (f"managed settings {path} {what.rstrip()}. Smoke refuses to run until it is fixed: managed settings "
                f"are your organisation's policy (ask whoever manages this machine).")
    return f"{path} {what}. Fix the file or remove it."


# ---------------------------------------------------------------- trust store


def _norm_folder(path: str | os.PathLike[str]) -> Path:
    return Path(_realpath(os.fspath(path)))


@functools.lru_cache(maxsize=256)
def _realpath(path: str) -> str:
    # create_agent resolves the same workspace again and again
    return os.path.realpath(os.path.expanduser(path))


def trusted_folders(*, include_managed: bool = True) -> list[Path]:
    """Folders the person (or managed settings) trusted."""
    out: list[Path] = []
    sources = [user_settings_path()]
    if include_managed:
        sources.insert(0, managed_settings_path())
    for i, path in enumerate(sources):
        data = read_settings_file(path, managed=include_managed and i == 0) or {}
        folders = data.get("trusted_folders") or []
        if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
            raise SettingsError(f"{path}: trusted_folders: expected a list of folder paths, got {folders!r}")
        out.extend(_norm_folder(f) for f in folders)
    return out


def trusted_by(workspace: str | os.PathLike[str]) -> Path | None:
    """The trusted folder that covers ``workspace`` (itself or a parent), or None."""
    ws = _norm_folder(workspace)
    for folder in trusted_folders():
        if ws == folder or folder in ws.parents:
            return folder
    return None


def is_trusted(workspace: str | os.PathLike[str]) -> bool:
    return trusted_by(workspace) is not None


def trust_folder(workspace: str | os.PathLike[str]) -> Path:
    """Add ``workspace`` (resolved) to ``trusted_folders`` in the user settings; returns the file."""
    folder = _norm_folder(workspace)
    path = user_settings_path()
    add_to_list(path, ("trusted_folders",), str(folder))
    return path


def revoke_folder(workspace: str | os.PathLike[str]) -> bool:
    """Remove ``workspace`` from the user's ``trusted_folders``; False when it was not there."""
    folder = _norm_folder(workspace)
    path = user_settings_path()
    data = read_settings_file(path) or {}
    entries = [e for e in data.get("trusted_folders") or [] if isinstance(e, str)]
    matching = [e for e in entries if _norm_folder(e) == folder]
    for entry in matching:
        remove_from_list(path, ("trusted_folders",), entry)
    return bool(matching)


def trust_offered(workspace: str | os.PathLike[str]) -> bool:
    """True when the terminal already offered to trust this folder (it offers once)."""
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, list) and str(_norm_folder(workspace)) in data


def mark_trust_offered(workspace: str | os.PathLike[str]) -> None:
    path = _state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            data = []
    except (OSError, ValueError):
        data = []
    folder = str(_norm_folder(workspace))
    if folder not in data:
        data.append(folder)
    with contextlib.suppress(OSError):
        _atomic_write(path, json.dumps(data, indent=1) + "\n")


# ---------------------------------------------------------------- editing files


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    _file_cache.pop(str(path), None)


def _list_at(data: dict[str, Any], keys: tuple[str, ...], path: Path, create: bool) -> list[Any] | None:
    node: Any = data
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if not isinstance(node, dict):
            raise SettingsError(f"{path}: {'.'.join(keys[:i])} must be a mapping to hold {'.'.join(keys)}")
        if key not in node or node[key] is None:
            if not create:
                return None
            node[key] = [] if last else {}
        node = node[key]
    if not isinstance(node, list):
        raise SettingsError(f"{path}: {'.'.join(keys)} must be a list, got {node!r}; fix the file")
    return node


def add_to_list(path: Path, keys: tuple[str, ...], value: str) -> None:
    """Append ``value`` to the list at ``keys`` in the YAML file ``path``,
    keeping everything else (comments too, when the file's layout allows a
    plain text insertion; otherwise the file is rewritten from its data)."""
    data = read_settings_file(path) or {}
    expected = copy.deepcopy(data)
    target = _list_at(expected, keys, path, create=True)
    assert target is not None
    if value in target:
        return
    target.append(value)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    new_text = _text_append(text, keys, value)
    _write_checked(path, new_text, expected)


def remove_from_list(path: Path, keys: tuple[str, ...], value: str) -> None:
    """Remove ``value`` from the list at ``keys`` in ``path`` (keeping the rest)."""
    data = read_settings_file(path) or {}
    expected = copy.deepcopy(data)
    target = _list_at(expected, keys, path, create=False)
    if target is None or value not in target:
        return
    target.remove(value)
    text = path.read_text(encoding="utf-8")
    new_text = None
    import yaml

    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = re.match(r"^\s*-\s+(.*?)\s*$", line)
        if not m:
            continue
        try:
            if yaml.safe_load(m.group(1)) != value:
                continue
        except yaml.YAMLError:
            continue
        candidate = "".join(lines[:i] + lines[i + 1 :])
        if _parses_to(candidate, expected):
            new_text = candidate
            break
    _write_checked(path, new_text, expected)


def _parses_to(text: str, expected: dict[str, Any]) -> bool:
    import yaml

    try:
        return (yaml.safe_load(text) or {}) == expected
    except yaml.YAMLError:
        return False


def _write_checked(path: Path, new_text: str | None, expected: dict[str, Any]) -> None:
    if new_text is None or not _parses_to(new_text, expected):
        import yaml

        new_text = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True, default_flow_style=False)
    _atomic_write(path, new_text)


def _text_append(text: str, keys: tuple[str, ...], value: str) -> str | None:
    """``text`` with ``value`` appended to the block list at ``keys`` by
    inserting a line; None when the layout is not the plain block style."""
    item = json.dumps(value, ensure_ascii=False)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"

    def block_end(start: int, indent: int) -> int:
        # the first line after `start` that is neither blank, a comment, nor deeper than `indent`
        # (a "- item" at the same indent still belongs to a key's list)
        j = start + 1
        while j < len(lines):
            stripped = lines[j].strip()
            lead = len(lines[j]) - len(lines[j].lstrip(" "))
            if stripped and not stripped.startswith("#") and lead <= indent and not (
                lead == indent and stripped.startswith("- ") and indent > 0
            ):
                break
            j += 1
        return j

    def find_key(key: str, start: int, end: int, indent: int | None) -> tuple[int, int] | None:
        for j in range(start, end):
            m = re.match(r"^( *)" + re.escape(key) + r":\s*(#.*)?$", lines[j].rstrip("\n"))
            if m and (indent is None or len(m.group(1)) == indent):
                return j, len(m.group(1))
        return None

    def insert_item(key_line: int, key_indent: int) -> str | None:
        end = block_end(key_line, key_indent)
        items = [j for j in range(key_line + 1, end) if lines[j].lstrip().startswith("- ")]
        if items:
            last = items[-1]
            prefix = lines[last][: len(lines[last]) - len(lines[last].lstrip(" "))]
            insert_at = last + 1
            while insert_at < end and lines[insert_at].strip() and not lines[insert_at].lstrip().startswith(("- ", "#")):
                insert_at += 1  # continuation lines of a multi-line item
            lines.insert(insert_at, f"{prefix}- {item}\n")
        else:
            lines.insert(key_line + 1, f"{' ' * (key_indent + 2)}- {item}\n")
        return "".join(lines)

    top = find_key(keys[0], 0, len(lines), 0)
    if top is None:
        body = f"{keys[0]}:\n"
        if len(keys) == 2:
            body += f"  {keys[1]}:\n    - {item}\n"
        else:
            body += f"  - {item}\n"
        return "".join(lines) + body
    if len(keys) == 1:
        return insert_item(top[0], 0)
    end = block_end(top[0], 0)
    sub = find_key(keys[1], top[0] + 1, end, None)
    if sub is None:
        child_indent = 2
        for j in range(top[0] + 1, end):
            if lines[j].strip() and not lines[j].strip().startswith("#"):
                child_indent = len(lines[j]) - len(lines[j].lstrip(" "))
                break
        lines.insert(top[0] + 1, f"{' ' * child_indent}{keys[1]}:\n{' ' * (child_indent + 2)}- {item}\n")
        return "".join(lines)
    return insert_item(sub[0], sub[1])


# ---------------------------------------------------------------- resolving


@dataclass
class ResolvedSettings:
    """The effective settings of one workspace, and where each came from."""

    workspace: Path
    trusted: bool
    #: effective core values (defaults filled in): provider, model, base_url,
    #: permission (a mode or a callable from code), auto_approve (bool),
    #: max_steps, sandbox, instructions, plugin_options, managed_rules_only
    values: dict[str, Any]
    #: validated values of plugin-declared keys (what ``options.get(key)`` returns)
    plugin_values: dict[str, Any]
    #: key -> where its value came from: a file path, "create_agent", "flag",
    #: "environment (SMOKE_X)" or "default"
    origins: dict[str, str]
    #: every permission rule, each with its origin (auto_approve lists included, as allow rules)
    rules: list[PermissionRule]
    warnings: list[str] = field(default_factory=list)
    #: file -> keys ignored because the folder is not trusted
    ignored: dict[str, list[str]] = field(default_factory=dict)
    #: file -> keys ignored because managed settings set them
    overridden: dict[str, list[str]] = field(default_factory=dict)
    managed_path: str | None = None
    #: key -> the layer its value came from ("default", "user", ..., "managed")
    layer_of: dict[str, str] = field(default_factory=dict)
    #: (layer, provider) for every layer that set ``provider``, lowest first
    provider_history: list[tuple[str, str]] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.values[key] if key in self.values else self.plugin_values.get(key)

    @property
    def auto_approve_rules(self) -> list[PermissionRule]:
        return [r for r in self.rules if r.action == "allow" and r.text and r.origin.endswith("(auto_approve)")]


@dataclass
class _LayerData:
    layer: str
    origin: str  # a path, "create_agent", "flag", "environment"
    core: dict[str, Any]
    plugin: dict[str, Any]
    where: Callable[[str], str]  # key -> how an error names it


def _suggest(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _describe_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


def _format_validation(where: str, key: str, error: ValidationError, value: Any) -> str:
    policy = field_policy(key)
    lines = []
    for err in error.errors(include_url=False):
        loc = [str(p) for p in err["loc"][1:]]
        # drop pydantic's union branch names (e.g. "bool", "list[str]")
        loc = [p for p in loc if not re.match(r"^(bool|list\[.*\]|str|int|function-after\[.*\]|literal\[.*\])$", p)]
        if err["type"] == "extra_forbidden" and loc:
            parent = key
            inner = loc[:-1]
            if inner:
                parent += "." + ".".join(inner)
            known = _nested_fields(key, inner)
            lines.append(f"{where}: unknown key {loc[-1]!r} under {parent}{_suggest(loc[-1], known)}")
            continue
        if loc and not all(p.isdigit() for p in loc):
            sub = ".".join(loc)
            lines.append(f"{where}: {key}.{sub}: {err['msg'].lower()}, got {_describe_value(err.get('input'))}")
            continue
        if loc:  # a list item
            lines.append(f"{where}: {key}[{']['.join(loc)}]: expected {policy.expected}, got "
                         f"{_describe_value(err.get('input'))}")
            continue
        hint = ""
        if key == "permission" and isinstance(value, dict):
            hint = " (rules go under `permissions:` with allow / ask / deny lists)"
        elif err["type"] == "value_error" and key != "base_url":
            hint = f" ({err['msg'].removeprefix('Value error, ')})"
        named = where if where.startswith("option --") else f"{where}: {key}"
        lines.append(f"{named}: expected {policy.expected}, got {_describe_value(value)}{hint}")
        break
    # one message per key; several problems of one key on separate lines
    return "\n".join(dict.fromkeys(lines))


def _nested_fields(key: str, inner: list[str]) -> list[str]:
    model: Any = {"permissions": PermissionRules, "sandbox": SandboxSettings}.get(key)
    if model is None or inner:
        return []
    return list(model.model_fields)


def _validate_layer(
    raw: Mapping[str, Any], layer: str, origin: str, specs: Mapping[str, SettingSpec],
    where: Callable[[str], str], *, unknown_as_type_error: bool = False,
) -> _LayerData:
    core: dict[str, Any] = {}
    plugin: dict[str, Any] = {}
    problems: list[str] = []
    known = [*SETTING_KEYS, *specs]
    for key, value in raw.items():
        if key in Settings.model_fields:
            if value is None:
                continue
            try:
                model = Settings.model_validate({key: value})
            except ValidationError as exc:
                problems.append(_format_validation(where(key), key, exc, value))
                continue
            core[key] = getattr(model, key)
            if key == "permissions" or (key == "auto_approve" and isinstance(value, list)):
                rules = core[key].model_dump() if key == "permissions" else {"allow": list(value)}
                for action, texts in rules.items():
                    for text in texts:
                        try:
                            parse_rule(text, action, origin=where(key))  # type: ignore[arg-type]
                        except RuleError as exc:
                            problems.append(str(exc))
        elif key in specs:
            spec = specs[key]
            try:
                plugin[key] = spec.validate(value)
            except ValidationError as exc:
                problems.append(f"{where(key)}: {key}: expected {_type_name(spec.type)} (declared by plugin "
                                f"{spec.plugin}), got {_describe_value(value)} ({_plugin_detail(exc)})")
        else:
            hint = _suggest(key, known)
            if not hint:
                hint = (". Known keys: " + ", ".join(sorted(known))
                        + ". If a plugin declares it, that plugin is not installed or not loaded (SMOKE_LOAD_PLUGINS)")
            msg = f"{where(key)}: unknown setting {key!r}{hint}"
            if unknown_as_type_error:
                raise UnknownSettingError(msg)
            problems.append(msg)
    if problems:
        raise SettingsError("\n".join(problems))
    return _LayerData(layer, origin, core, plugin, where)


_TYPE_TAG = re.compile(r"[\[\](=<>,]|^(str|int|float|bool|bytes|list|dict|set|tuple|none|path|any)$", re.I)


def _plugin_detail(exc: ValidationError) -> str:
    """pydantic's errors without its internal union-branch labels."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if isinstance(p, int) or not _TYPE_TAG.search(str(p))]
        msg = err["msg"][:1].lower() + err["msg"][1:]
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "; ".join(dict.fromkeys(parts))


def _type_name(type_: Any) -> str:
    if isinstance(type_, type) and not getattr(type_, "__args__", None):
        return type_.__name__
    return re.sub(r"\b(typing|pathlib|builtins|collections\.abc)\.", "", str(type_))


def _file_where(path: str | os.PathLike[str]) -> Callable[[str], str]:
    return lambda key: str(path)


def _code_where(code_origin: str) -> Callable[[str], str]:
    if code_origin == "flag":
        return lambda key: f"option --{key.replace('_', '-')}"
    return lambda key: f"{code_origin}()"


def _env_layer(environ: Mapping[str, str], specs: Mapping[str, SettingSpec]) -> _LayerData:
    raw: dict[str, Any] = {}
    names: dict[str, str] = {}
    for var, key in ENV_VARS.items():
        value = environ.get(var)
        if value is None or value.strip() == "":
            continue
        names[key] = var
        if key == "max_steps":
            try:
                raw[key] = int(value.strip())
            except ValueError:
                raise SettingsError(
                    f"environment variable {var}: expected {field_policy(key).expected}, got {value!r}"
                ) from None
        else:
            raw[key] = value.strip()
    data = _validate_layer(raw, "environment", "environment", specs,
                           lambda key: f"environment variable {names.get(key, key)}")
    data.origin = "environment"
    return data


def _layer_origin(data: _LayerData, key: str) -> str:
    if data.layer == "environment":
        var = next((v for v, k in ENV_VARS.items() if k == key), None)
        return f"environment ({var})" if var else "environment"
    return data.origin


def resolve_settings(
    workspace: str | os.PathLike[str],
    *,
    code: Mapping[str, Any] | None = None,
    code_origin: str = "create_agent",
    sources: Iterable[str] | None = None,
    trust: bool | None = None,
    specs: Mapping[str, SettingSpec] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResolvedSettings:
    """Read every layer and return the effective settings.

    ``code`` holds the code layer (``create_agent`` arguments or CLI flags;
    ``code_origin`` names it: ``"create_agent"`` or ``"flag"``; a callable
    ``permission`` is accepted there). ``sources`` limits the layers read
    (default: user, project, local, environment; managed is always read).
    ``trust``: True honours the workspace's files, False applies the
    untrusted rules, None looks the folder up in the trust store. ``specs``
    are the plugin-declared keys. Raises :class:`SettingsError`.
    """
    ws_text = _realpath(os.fspath(workspace))
    ws = Path(ws_text)
    env = os.environ if environ is None else environ
    specs = dict(specs or {})
    chosen = _check_sources(sources)
    managed_path = os.environ.get("SMOKE_MANAGED_SETTINGS") or DEFAULT_MANAGED_PATH
    managed_raw = read_settings_file(managed_path, managed=True)
    managed = None
    if managed_raw is not None:
        try:
            managed = _validate_layer(managed_raw, "managed", str(managed_path), specs, _file_where(managed_path))
        except SettingsError as exc:
            raise SettingsError(_read_problem(managed_path, f"are invalid:\n{exc}\n", True)) from None
    trusted = is_trusted(ws) if trust is None else bool(trust)

    layers: list[_LayerData] = []
    if "user" in chosen:
        path = _user_settings_file()
        raw = read_settings_file(path)
        if raw is not None:
            layers.append(_validate_layer(raw, "user", str(path), specs, _file_where(path)))
    smoke_dir = os.path.join(ws_text, ".smoke")
    for layer, path in (("project", os.path.join(smoke_dir, "config.yaml")),
                        ("local", os.path.join(smoke_dir, "config.local.yaml"))):
        if layer in chosen:
            raw = read_settings_file(path)
            if raw is not None:
                layers.append(_validate_layer(raw, layer, str(path), specs, _file_where(path)))
    if "environment" in chosen:
        layers.append(_env_layer(env, specs))

    permission_callable = None
    if code:
        code = dict(code)
        if callable(code.get("permission")):
            permission_callable = code.pop("permission")
        layers.append(_validate_layer(code, "code", code_origin, specs, _code_where(code_origin),
                                      unknown_as_type_error=True))

    return _merge(ws, trusted, layers, managed, permission_callable, specs)


def _check_sources(sources: Iterable[str] | None) -> set[str]:
    if sources is None:
        return set(SETTING_SOURCES)
    if isinstance(sources, str):
        raise SettingsError(
            f"setting_sources must be a list of layer names such as ['user', 'project'], got the string {sources!r}"
        )
    chosen = set()
    for s in sources:
        if s not in SETTING_SOURCES:
            hint = _suggest(str(s), SETTING_SOURCES)
            extra = " (managed settings are always read)" if s == "managed" else ""
            raise SettingsError(
                f"setting_sources: unknown source {s!r}{hint}{extra}; use any of {', '.join(SETTING_SOURCES)}"
            )
        chosen.add(s)
    return chosen


def _merge(ws: Path, trusted: bool, layers: list[_LayerData], managed: _LayerData | None,
           permission_callable: Any, specs: Mapping[str, SettingSpec]) -> ResolvedSettings:
    values: dict[str, Any] = {
        "provider": None, "model": None, "base_url": None, "permission": DEFAULT_PERMISSION,
        "auto_approve": False, "max_steps": DEFAULT_MAX_STEPS, "sandbox": {}, "instructions": None,
        "plugin_options": {}, "managed_rules_only": False, "trusted_folders": [],
    }
    origins: dict[str, str] = {k: "default" for k in values}
    layer_of: dict[str, str] = {k: "default" for k in values}
    provider_history: list[tuple[str, str]] = []
    plugin_values: dict[str, Any] = {}
    rules: list[tuple[str, str, str, bool]] = []  # (action, text, origin, managed)
    warnings: list[str] = []
    ignored: dict[str, list[str]] = {}
    overridden: dict[str, list[str]] = {}
    instructions: list[str] = []
    managed_keys = set(managed.core) | set(managed.plugin) if managed is not None else set()
    managed_keys.discard("permissions")  # rules add up; managed ones always apply

    for data in layers:
        untrusted = data.layer in WORKSPACE_LAYERS and not trusted
        skipped: list[str] = []
        not_here: list[str] = []
        final: list[str] = []
        for key, value in data.core.items():
            policy = field_policy(key)
            if data.layer not in policy.layers:
                not_here.append(key)
                continue
            if key in managed_keys:
                final.append(key)
                continue
            origin = _layer_origin(data, key)
            if untrusted and policy.untrusted == "no":
                skipped.append(key)
                continue
            if untrusted and policy.untrusted == "tighter":
                if key == "max_steps" and value > values["max_steps"]:
                    skipped.append(f"max_steps (above the limit of {values['max_steps']})")
                    continue
                if key == "permission" and MODE_STRICTNESS[value] > MODE_STRICTNESS.get(values["permission"], 1):
                    skipped.append(f"permission (looser than {values['permission']})")
                    continue
            if key == "permissions":
                for action in ("deny", "ask", "allow"):
                    texts = getattr(value, action)
                    if untrusted and action == "allow" and texts:
                        skipped.append("permissions.allow")
                        continue
                    rules.extend((action, t, origin, False) for t in texts)
                continue
            layer_of[key] = data.layer
            if key == "provider":
                provider_history.append((data.layer, value))
            if key == "sandbox":
                values["sandbox"] = {**values["sandbox"], **value.model_dump(exclude_unset=True)}
            elif key == "plugin_options":
                values["plugin_options"] = {**values["plugin_options"], **value}
            elif key == "instructions":
                instructions.append(value)
                origin = origin if origins[key] == "default" else f"{origins[key]}, {origin}"
            else:
                values[key] = value
            origins[key] = origin
        for key, value in data.plugin.items():
            if key in managed_keys:
                final.append(key)
                continue
            spec = specs[key]
            if untrusted and spec.trusted_only:
                skipped.append(key)
                continue
            if spec.code_value_only and data.layer != "code":
                continue  # the plugin reads its files itself
            plugin_values[key] = value
            origins[key] = _layer_origin(data, key)
            layer_of[key] = data.layer
        if data.layer == "code" and permission_callable is not None:
            if "permission" in managed_keys:
                final.append("permission")
            else:
                values["permission"] = permission_callable
                origins["permission"] = data.origin
                layer_of["permission"] = "code"
        if skipped or not_here:
            listed = [*skipped, *(
                f"{k} (read only from {' and '.join(field_policy(k).layers).replace('code', 'create_agent')} settings)"
                for k in not_here
            )]
            message = f"ignored settings in {data.origin}: {', '.join(listed)}"
            if skipped:
                ignored[data.origin] = skipped
                message += (f" — this folder ({ws}) is not trusted, so its own files may only tighten policy. "
                            f"If you trust it, run `smoke trust {_shell_quote(ws)}`.")
            warnings.append(message)
        if final:
            overridden[data.origin] = final
            if data.origin == "flag":
                what = ", ".join(_FLAG_NAMES.get(k, "--" + k.replace("_", "-")) for k in final)
                source = "the command line"
            else:
                what, source = ", ".join(final), data.origin
            warnings.append(
                f"ignored {what} from {source}: managed settings ({managed.origin if managed else '?'}) set "
                f"{'it' if len(final) == 1 else 'them'}, and managed settings are final"
            )

    if managed is not None:
        for key, value in managed.core.items():
            if key == "permissions":
                for action in ("deny", "ask", "allow"):
                    rules.extend((action, t, managed.origin, True) for t in getattr(value, action))
                continue
            if key == "sandbox":
                values["sandbox"] = value.model_dump(exclude_unset=True)
            elif key == "instructions":
                instructions = [value]
            else:
                values[key] = value
            if key == "provider":
                provider_history.append(("managed", value))
            origins[key] = managed.origin
            layer_of[key] = "managed"
        for key, value in managed.plugin.items():
            if not specs[key].code_value_only:
                plugin_values[key] = value
                origins[key] = managed.origin
                layer_of[key] = "managed"
    for key, spec in specs.items():
        if key not in plugin_values and spec.default is not None:
            plugin_values[key] = spec.default
            origins.setdefault(key, "default")

    values["instructions"] = "\n\n".join(instructions) if instructions else None
    values["sandbox"] = SandboxSettings.model_validate(values["sandbox"])
    auto = values["auto_approve"]
    if isinstance(auto, list):
        origin = origins["auto_approve"]
        managed_auto = origin == (managed.origin if managed else None)
        rules.extend(("allow", t, f"{origin} (auto_approve)", managed_auto) for t in auto)
        values["auto_approve"] = False
    if values["managed_rules_only"]:
        dropped = [r for r in rules if r[0] == "allow" and not r[3]]
        if dropped:
            warnings.append(
                f"ignored {len(dropped)} allow rule(s) outside managed settings: managed_rules_only is set in "
                f"{origins['managed_rules_only']}"
            )
        rules = [r for r in rules if not (r[0] == "allow" and not r[3])]
    parsed = [parse_rule(text, action, origin=origin, managed=is_managed)  # type: ignore[arg-type]
              for action, text, origin, is_managed in rules]
    return ResolvedSettings(
        workspace=ws, trusted=trusted, values=values,
        plugin_values=plugin_values,
        origins=origins, rules=parsed, warnings=warnings, ignored=ignored, overridden=overridden,
        managed_path=managed.origin if managed is not None else None,
        layer_of=layer_of, provider_history=provider_history,
    )


#: how the CLI spells a setting it passes as a flag
_FLAG_NAMES = {"auto_approve": "--yes"}

_RANK = {"default": 0, "user": 1, "project": 2, "local": 3, "environment": 4, "code": 5, "managed": 6}


def choose_provider(resolved: ResolvedSettings, provider_names: Iterable[str]) -> tuple[str | None, str | None, str | None]:
    """``(provider, model, base_url)`` from the effective settings.

    ``model: "nvidia:meta/llama..."`` names the provider too when it comes
    from a higher layer than ``provider``; a ``base_url`` set for another
    provider in a lower layer is not used (with a warning added to
    ``resolved.warnings``): the key of one provider never goes to the
    endpoint configured for another."""
    names = set(provider_names)
    values, layer_of = resolved.values, resolved.layer_of
    provider, model, base_url = values["provider"], values["model"], values["base_url"]
    rank_p = _RANK[layer_of.get("provider", "default")] if provider is not None else -1
    if model and ":" in model:
        prefix, rest = model.split(":", 1)
        if prefix in names and (provider is None or _RANK[layer_of.get("model", "default")] > rank_p):
            provider, model = prefix, rest
    if base_url is not None and provider is not None:
        rank_b = _RANK[layer_of.get("base_url", "default")]
        below = [p for layer, p in resolved.provider_history if _RANK[layer] <= rank_b]
        if below and below[-1] != provider:
            resolved.warnings.append(
                f"base_url from {resolved.origins['base_url']} is set for provider {below[-1]!r}; "
                f"not used with provider {provider!r}"
            )
            base_url = None
    return provider, model, base_url


def _shell_quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))
