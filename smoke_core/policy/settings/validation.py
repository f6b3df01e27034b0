"""Reading one settings layer: every key checked against the model (or a
plugin's declaration), with messages that name the file, the key, what was
expected and what was found, and a "did you mean" for typos.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import (
    ValidationError,
)

from ..rules import RuleError, parse_rule
from ..sandbox.settings import SandboxSettings
from .files import (
    SettingsError,
    UnknownSettingError,
)

if TYPE_CHECKING:
    pass
from .model import SETTING_KEYS, PermissionRules, Settings, field_policy
from .specs import SettingSpec


@dataclass
class LayerData:
    layer: str
    origin: str  # a path, "create_agent", "flag", "environment"
    core: dict[str, Any]
    plugin: dict[str, Any]
    where: Callable[[str], str]  # key -> how an error names it


def suggest(key: str, known: Iterable[str]) -> str:
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
            lines.append(f"{where}: unknown key {loc[-1]!r} under {parent}{suggest(loc[-1], known)}")
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


def validate_layer(
    raw: Mapping[str, Any], layer: str, origin: str, specs: Mapping[str, SettingSpec],
    where: Callable[[str], str], *, unknown_as_type_error: bool = False,
) -> LayerData:
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
            hint = suggest(key, known)
            if not hint:
                hint = (". Known keys: " + ", ".join(sorted(known))
                        + ". If a plugin declares it, that plugin is not installed or not loaded (SMOKE_LOAD_PLUGINS)")
            msg = f"{where(key)}: unknown setting {key!r}{hint}"
            if unknown_as_type_error:
                raise UnknownSettingError(msg)
            problems.append(msg)
    if problems:
        raise SettingsError("\n".join(problems))
    return LayerData(layer, origin, core, plugin, where)


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
