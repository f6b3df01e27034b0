"""Configuration files: ``.smoke/config.yaml`` in the workspace and
``~/.config/smoke/config.yaml`` (workspace wins, key by key).

Keys: ``provider``, ``model``, ``base_url``, ``permission``, ``auto_approve``,
``max_steps``, ``mcp_servers`` (read by smoke-mcp), ``skills_dir`` (read by
smoke-skills). API keys do not belong here: use the provider's environment
variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: When several keys are set, the first installed provider in this order wins.
PROVIDER_PREFERENCE = (
    "anthropic", "openai", "nvidia", "openrouter", "gemini", "groq", "mistral", "deepseek", "xai",
    "together", "fireworks", "cerebras", "huggingface",
)


class ConfigError(ValueError):
    pass


class NoProviderError(ConfigError):
    """No provider in the flags or config files, and no provider key in the environment."""

    def __init__(self, key_vars: list[str]) -> None:
        names = ", ".join(key_vars) or "none installed (pip install smoke-provider-openai smoke-provider-anthropic)"
        super().__init__(
            "no model provider is configured.\n"
            f"  Set an API key in the environment (one of: {names}),\n"
            "  or pass --provider/--model, or write provider/model in .smoke/config.yaml."
        )
        self.key_vars = key_vars


#: Config keys passed on to ``create_agent`` as they are.
AGENT_CONFIG_KEYS = ("permission", "auto_approve", "max_steps", "mcp_servers", "skills_dir")


@dataclass
class AgentSettings:
    """What ``smoke run`` and ``smoke serve`` pass to ``create_agent``."""

    provider: str | None
    model: str | None
    base_url: str | None
    options: dict[str, Any] = field(default_factory=dict)
    #: "using provider X (found ENV_VAR)" when the provider came from the environment
    note: str | None = None


def resolve_agent_settings(
    workspace: str | os.PathLike[str],
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
) -> AgentSettings:
    """Flags first, then the config files, then the first provider key found
    in the environment. Raises :class:`ConfigError` (bad file) or
    :class:`NoProviderError`."""
    config = load_config(workspace)
    settings = AgentSettings(
        provider=provider or config.get("provider"),
        model=model or config.get("model"),
        base_url=base_url or config.get("base_url"),
        options={k: config[k] for k in AGENT_CONFIG_KEYS if k in config},
    )
    if settings.provider is None and not (settings.model and ":" in settings.model):
        from .plugins import collect_providers, create_plugin_manager

        specs = collect_providers(create_plugin_manager()).specs()
        found = detect_provider(specs)
        if found is None:
            raise NoProviderError(sorted({s.env_var for s in specs if s.env_var}))
        settings.provider, env_var = found
        settings.note = f"using provider {settings.provider} (found {env_var})"
    return settings


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
