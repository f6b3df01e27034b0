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

Why this module is long: it is the settings door and the one place the trust
table is enforced: the typed model with who-may-set-what, the per-layer
validation with its error wording and the merge (files, paths and the trust
store are in ``_settings_files``).
"""

from __future__ import annotations

import difflib
import os
import re
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

from ._permissions import MODE_STRICTNESS, PERMISSION_MODES, PermissionRule, RuleError, parse_rule
from ._settings_files import (  # re-exported: this module is the settings door
    DEFAULT_MANAGED_PATH,
    SettingsError,
    UnknownSettingError,
    _read_problem,
    _realpath,
    _user_settings_file,
    add_to_list,
    is_trusted,
    local_settings_path,
    managed_settings_path,
    mark_trust_offered,
    project_settings_path,
    read_settings_file,
    remove_from_list,
    revoke_folder,
    trust_folder,
    trust_offered,
    trusted_by,
    trusted_folders,
    user_settings_path,
)
from .sandbox import SandboxSettings

if TYPE_CHECKING:
    from ._plugins import SmokePluginManager

__all__ = [
    "DEFAULT_MANAGED_PATH",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_PERMISSION",
    "ENV_VARS",
    "LAYERS",
    "RESERVED_KEYS",
    "SETTING_KEYS",
    "SETTING_SOURCES",
    "WORKSPACE_LAYERS",
    "FieldPolicy",
    "Layer",
    "PermissionRules",
    "PositiveInt",
    "ResolvedSettings",
    "SettingSpec",
    "Settings",
    "SettingsError",
    "UnknownSettingError",
    "add_to_list",
    "choose_provider",
    "collect_setting_specs",
    "field_policy",
    "is_trusted",
    "local_settings_path",
    "managed_settings_path",
    "mark_trust_offered",
    "project_settings_path",
    "read_settings_file",
    "remove_from_list",
    "render_trust_table",
    "resolve_settings",
    "revoke_folder",
    "trust_folder",
    "trust_offered",
    "trusted_by",
    "trusted_folders",
    "user_settings_path",
]

Layer = Literal["managed", "user", "project", "local", "environment", "code"]
#: Every layer, lowest precedence first (managed is applied last: it is final).
LAYERS: tuple[Layer, ...] = ("user", "project", "local", "environment", "code", "managed")
#: What ``create_agent(setting_sources=...)`` may name (managed is always read).
SETTING_SOURCES: tuple[str, ...] = ("user", "project", "local", "environment")
#: Layers that come from the workspace itself, limited when it is not trusted.
WORKSPACE_LAYERS = frozenset({"project", "local"})

DEFAULT_MAX_STEPS = 50
DEFAULT_PERMISSION = "ask-default"

_ALL = ("managed", "user", "project", "local", "environment", "code")
_FILES_AND_CODE = ("managed", "user", "project", "local", "code")


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
    store: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a store URL", layers=_FILES_AND_CODE,
        description="where sessions are kept: a SQLite path, `sqlite:///path.db` or `postgresql://...` "
                    "(plugin smoke-store-postgres); `SMOKE_STORE_URL` wins over the files"))
    stream: StrictBool | None = Field(None, json_schema_extra=_policy(
        "true or false", layers=_ALL, untrusted="yes",
        description="`false` asks the provider for whole replies instead of a stream (default true)"))
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
#: ``<class 'pathlib.Path'>`` in pydantic's messages: the class's own name
_CLASS_REPR = re.compile(r"<class '(?:\w+\.)*(\w+)'>")
#: a quoted literal (kept), or the modules in front of a name (dropped)
_QUALIFIED = re.compile(r"""('[^']*'|"[^"]*")|\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])""")


def _plugin_detail(exc: ValidationError) -> str:
    """pydantic's errors without its internal union-branch labels."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if isinstance(p, int) or not _TYPE_TAG.search(str(p))]
        msg = _CLASS_REPR.sub(r"\1", err["msg"][:1].lower() + err["msg"][1:])
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "; ".join(dict.fromkeys(parts))


def _type_name(type_: Any) -> str:
    """A declared type as a person reads it: ``dict[str, MCPServerEntry] | None``,
    not ``dict[str, smoke_mcp._settings.MCPServerEntry] | NoneType``."""
    if isinstance(type_, type) and not getattr(type_, "__args__", None):
        return type_.__name__
    text = _CLASS_REPR.sub(r"\1", str(type_))
    return _QUALIFIED.sub(lambda m: m.group(1) or "", text)


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
