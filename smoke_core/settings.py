"""The settings door: settings layers, trust, who may set what (DESIGN §9).

The implementation is in :mod:`smoke_core.policy.settings`; this module is
what plugins and applications import (docs/compatibility.md).
"""

from __future__ import annotations

from .policy.settings.files import (
    DEFAULT_MANAGED_PATH,
    SettingsError,
    UnknownSettingError,
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
from .policy.settings.layers import ResolvedSettings, choose_provider, resolve_settings
from .policy.settings.model import (
    DEFAULT_MAX_STEPS,
    DEFAULT_PERMISSION,
    ENV_VARS,
    LAYERS,
    SETTING_KEYS,
    SETTING_SOURCES,
    WORKSPACE_LAYERS,
    FieldPolicy,
    Layer,
    PermissionRules,
    PositiveInt,
    Settings,
    field_policy,
    render_trust_table,
)
from .policy.settings.specs import RESERVED_KEYS, SettingSpec

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
