"""Configuration files: ``.smoke/config.yaml`` in the workspace and
``~/.config/smoke/config.yaml`` (workspace wins, key by key).

Keys: ``provider``, ``model``, ``base_url``, ``permission``, ``auto_approve``,
``max_steps``, ``mcp_servers`` (read by smoke-mcp), ``skills_dir`` (read by
smoke-skills). API keys do not belong here: use the provider's environment
variable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: When several keys are set, the first installed provider in this order wins.
PROVIDER_PREFERENCE = (
    "anthropic", "openai", "nvidia", "openrouter", "gemini", "groq", "mistral", "deepseek", "xai",
    "together", "fireworks", "cerebras", "huggingface",
)


class ConfigError(ValueError):
    pass


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "smoke" / "config.yaml"


def workspace_config_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.yaml"


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}. Fix the file or remove it.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of settings (provider: ..., model: ...), got {type(data).__name__}")
    return data


def load_config(workspace: str | os.PathLike[str]) -> dict[str, Any]:
    """The merged configuration (user file, then the workspace file over it)."""
    merged = _read(user_config_path())
    merged.update(_read(workspace_config_path(workspace)))
    return merged


def detect_provider(specs: list[Any]) -> tuple[str, str] | None:
    """``(provider name, env var)`` of the first installed provider whose key is set."""
    by_name = {s.name: s for s in specs}
    order = [n for n in PROVIDER_PREFERENCE if n in by_name] + sorted(n for n in by_name if n not in PROVIDER_PREFERENCE)
    for name in order:
        env_var = by_name[name].env_var
        if env_var and os.environ.get(env_var):
            return name, env_var
    return None
