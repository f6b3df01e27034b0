"""Merging the settings layers under trust (:func:`resolve_settings`): which
layer's value wins, what an untrusted folder may not set (ignored, with one
warning per file), what managed settings make final; and the provider a run
uses (:func:`choose_provider`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..rules import MODE_STRICTNESS, PermissionRule, parse_rule
from ..sandbox.settings import SandboxSettings
from .files import (
    DEFAULT_MANAGED_PATH,
    SettingsError,
    is_trusted,
    read_problem,
    read_settings_file,
    realpath,
    user_settings_file,
)

if TYPE_CHECKING:
    pass
from .model import (
    BUDGET_KEYS,
    DEFAULT_MAX_STEPS,
    DEFAULT_PERMISSION,
    ENV_VARS,
    SETTING_SOURCES,
    WORKSPACE_LAYERS,
    field_policy,
)
from .specs import SettingSpec
from .validation import LayerData, suggest, validate_layer

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


def _file_where(path: str | os.PathLike[str]) -> Callable[[str], str]:
    return lambda key: str(path)


def _code_where(code_origin: str) -> Callable[[str], str]:
    if code_origin == "flag":
        return lambda key: f"option --{key.replace('_', '-')}"
    return lambda key: f"{code_origin}()"


def _env_layer(environ: Mapping[str, str], specs: Mapping[str, SettingSpec]) -> LayerData:
    raw: dict[str, Any] = {}
    names: dict[str, str] = {}
    for var, key in ENV_VARS.items():
        value = environ.get(var)
        if value is None or value.strip() == "":
            continue
        names[key] = var
        if key in ("max_steps", "max_input_tokens", "max_output_tokens", "max_cost_usd"):
            try:
                raw[key] = float(value.strip()) if key == "max_cost_usd" else int(value.strip())
            except ValueError:
                raise SettingsError(
                    f"environment variable {var}: expected {field_policy(key).expected}, got {value!r}"
                ) from None
        else:
            raw[key] = value.strip()
    data = validate_layer(raw, "environment", "environment", specs,
                           lambda key: f"environment variable {names.get(key, key)}")
    data.origin = "environment"
    return data


def _layer_origin(data: LayerData, key: str) -> str:
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
    ws_text = realpath(os.fspath(workspace))
    ws = Path(ws_text)
    env = os.environ if environ is None else environ
    specs = dict(specs or {})
    chosen = _check_sources(sources)
    managed_path = os.environ.get("SMOKE_MANAGED_SETTINGS") or DEFAULT_MANAGED_PATH
    managed_raw = read_settings_file(managed_path, managed=True)
    managed = None
    if managed_raw is not None:
        try:
            managed = validate_layer(managed_raw, "managed", str(managed_path), specs, _file_where(managed_path))
        except SettingsError as exc:
            raise SettingsError(read_problem(managed_path, f"are invalid:\n{exc}\n", True)) from None
    trusted = is_trusted(ws) if trust is None else bool(trust)

    layers: list[LayerData] = []
    if "user" in chosen:
        path = user_settings_file()
        raw = read_settings_file(path)
        if raw is not None:
            layers.append(validate_layer(raw, "user", str(path), specs, _file_where(path)))
    smoke_dir = os.path.join(ws_text, ".smoke")
    for layer, path in (("project", os.path.join(smoke_dir, "config.yaml")),
                        ("local", os.path.join(smoke_dir, "config.local.yaml"))):
        if layer in chosen:
            raw = read_settings_file(path)
            if raw is not None:
                layers.append(validate_layer(raw, layer, str(path), specs, _file_where(path)))
    if "environment" in chosen:
        layers.append(_env_layer(env, specs))

    permission_callable = None
    if code:
        code = dict(code)
        if callable(code.get("permission")):
            permission_callable = code.pop("permission")
        layers.append(validate_layer(code, "code", code_origin, specs, _code_where(code_origin),
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
            hint = suggest(str(s), SETTING_SOURCES)
            extra = " (managed settings are always read)" if s == "managed" else ""
            raise SettingsError(
                f"setting_sources: unknown source {s!r}{hint}{extra}; use any of {', '.join(SETTING_SOURCES)}"
            )
        chosen.add(s)
    return chosen


def _merge(ws: Path, trusted: bool, layers: list[LayerData], managed: LayerData | None,
           permission_callable: Any, specs: Mapping[str, SettingSpec]) -> ResolvedSettings:
    values: dict[str, Any] = {
        "provider": None, "model": None, "base_url": None, "permission": DEFAULT_PERMISSION,
        "auto_approve": False, "max_steps": DEFAULT_MAX_STEPS, "sandbox": {}, "instructions": None,
        "plugin_options": {}, "managed_rules_only": False, "trusted_folders": [], "control_files": [],
        "max_cost_usd": None, "max_input_tokens": None, "max_output_tokens": None, "fallback_models": [],
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
    # a plugin that reads its files itself (code_only) merges its layers itself (command hooks add up)
    managed_keys -= {k for k in managed_keys if k in specs and specs[k].code_value_only}

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
                if key in BUDGET_KEYS and values[key] is not None and value > values[key]:
                    skipped.append(f"{key} (above the limit of {values[key]})")
                    continue
                if key == "permission" and MODE_STRICTNESS[value] > MODE_STRICTNESS.get(values["permission"], MODE_STRICTNESS["ask-default"]):
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
    from a higher layer than ``provider`` — never from an untrusted folder's
    own files (the prefix is dropped, with a warning); a ``base_url`` set for another
    provider in a lower layer is not used (with a warning added to
    ``resolved.warnings``): the key of one provider never goes to the
    endpoint configured for another."""
    names = set(provider_names)
    values, layer_of = resolved.values, resolved.layer_of
    provider, model, base_url = values["provider"], values["model"], values["base_url"]
    rank_p = _RANK[layer_of.get("provider", "default")] if provider is not None else -1
    if model and ":" in model:
        prefix, rest = model.split(":", 1)
        if prefix in names and layer_of.get("model") in WORKSPACE_LAYERS and not resolved.trusted:
            # an untrusted folder may pick the model, never the provider (its key and endpoint)
            message = (f"ignored settings in {resolved.origins.get('model', '?')}: the provider prefix of model "
                       f"({prefix}:) — this folder ({resolved.workspace}) is not trusted, so its own files may only "
                       f"tighten policy; the model {rest!r} is used with the provider chosen elsewhere. If you trust "
                       f"it, run `smoke trust {_shell_quote(resolved.workspace)}`.")
            if message not in resolved.warnings:
                resolved.warnings.append(message)
            model = rest
        elif prefix in names and (provider is None or _RANK[layer_of.get("model", "default")] > rank_p):
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
