"""Settings keys declared by plugins (``register_settings``): :class:`SettingSpec`
and the names a plugin may not take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .files import (
    SettingsError,
)

if TYPE_CHECKING:
    pass
from .model import SETTING_KEYS

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



#: Names a plugin key may not take: core settings and ``create_agent``'s own arguments (``hooks``
#: is the exception: its command-hook part is the settings key ``hooks`` of plugin smoke-hooks).
RESERVED_KEYS = frozenset({
    *SETTING_KEYS, "workspace_path", "api_key", "tools", "plugins", "system_prompt", "session_id",
    "store", "user_id", "retry", "guards", "context_window", "model_settings", "max_tool_output_chars",
    "autoload_plugins", "provider_options", "trust_workspace", "setting_sources", "settings_origin",
})

def make_adapter(key: str, type_: Any, label: str) -> Any:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(type_)
    except Exception as exc:
        raise SettingsError(f"plugin {label} declared setting {key!r} with a type pydantic cannot use: {exc}") from None
