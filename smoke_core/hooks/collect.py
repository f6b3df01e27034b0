"""The settings keys plugins declare (``register_settings``), collected from
a plugin manager and checked (snake_case, not reserved, declared once)."""

from __future__ import annotations

import re
import weakref
from typing import Any

from ..policy.settings.files import SettingsError
from ..policy.settings.specs import RESERVED_KEYS, SettingSpec, make_adapter
from .manager import SmokePluginManager
from .runner import HookRunner

_specs_cache: weakref.WeakKeyDictionary[Any, dict[str, SettingSpec]] = weakref.WeakKeyDictionary()


def collect_setting_specs(pm: SmokePluginManager) -> dict[str, SettingSpec]:
    """Every key declared through ``register_settings`` in ``pm`` (cached per manager)."""
    cached = _specs_cache.get(pm)
    if cached is not None:
        return cached
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
                                     bool(code_only), adapter=make_adapter(key, type, label))

        return {"register": register}

    def failed(label: str, exc: BaseException) -> None:
        if isinstance(exc, SettingsError):
            raise exc
        raise SettingsError(f"register_settings in plugin {label} failed: {type(exc).__name__}: {exc}") from exc

    HookRunner(pm).collect("register_settings", kwargs, failed)
    _specs_cache[pm] = specs
    return specs
