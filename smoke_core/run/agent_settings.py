"""Provider detection and the errors of configuration.

The settings layers themselves (user, project, local, environment, code,
managed; trust) are in :mod:`smoke_core.settings`. API keys do not belong in
settings files: use the provider's environment variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ConfigError, NoProviderError

#: When several keys are set, the first installed provider in this order wins.
PROVIDER_PREFERENCE = (
    "anthropic", "openai", "nvidia", "openrouter", "gemini", "groq", "mistral", "deepseek", "xai",
    "together", "fireworks", "cerebras", "huggingface",
)


@dataclass
class AgentSettings:
    """What ``smoke serve`` passes to ``create_agent`` (kept for its callers;
    ``smoke_core.settings`` does the work)."""

    provider: str | None
    model: str | None
    base_url: str | None
    options: dict[str, Any] = field(default_factory=dict)
    #: "using provider X (found ENV_VAR)" when the provider came from the environment
    note: str | None = None
    #: the full resolution (origins, rules, warnings)
    resolved: Any = None


def resolve_agent_settings(
    workspace: str | os.PathLike[str],
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
) -> AgentSettings:
    """Flags first, then the settings layers (``smoke_core.settings``; the
    workspace's own files only when the folder is trusted), then the first
    provider key found in the environment. ``options`` carries
    ``trust_workspace`` for ``create_agent``. Raises :class:`ConfigError`
    (bad settings) or :class:`NoProviderError`."""
    from ..hooks.collect import collect_setting_specs
    from ..hooks.manager import collect_providers, create_plugin_manager
    from ..policy.settings.layers import choose_provider, resolve_settings

    pm = create_plugin_manager()
    flags = {k: v for k, v in {"provider": provider, "model": model, "base_url": base_url}.items() if v is not None}
    resolved = resolve_settings(workspace, code=flags, code_origin="flag", trust=None,
                                specs=collect_setting_specs(pm))
    registry = collect_providers(pm)
    chosen_provider, chosen_model, chosen_url = choose_provider(resolved, registry.names())
    problem = unknown_provider(resolved, registry.names(), chosen_provider, chosen_model)
    if problem:
        raise ConfigError(problem)
    settings = AgentSettings(
        provider=chosen_provider, model=chosen_model, base_url=chosen_url,
        options={"trust_workspace": resolved.trusted}, resolved=resolved,
    )
    if settings.provider is None:
        specs = registry.specs()
        found = detect_provider(specs)
        if found is None:
            raise NoProviderError(sorted({s.env_var for s in specs if s.env_var}))
        settings.provider, env_var = found
        settings.note = f"using provider {settings.provider} (found {env_var})"
    return settings


def unknown_provider(resolved: Any, installed: list[str], chosen: str | None, chosen_model: str | None) -> str | None:
    """Why the chosen provider cannot be used (it is not installed, or the
    model names an unknown ``provider:`` prefix), saying where the name came
    from; None when it is fine. One wording for ``smoke run``, ``chat``,
    ``serve`` and ``acp``."""
    names = ", ".join(installed) or "none (pip install smoke-provider-openai smoke-provider-anthropic)"
    if chosen is not None and chosen not in installed:
        import difflib

        close = difflib.get_close_matches(chosen, installed, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return (f"unknown provider {chosen!r} ({_where(resolved, 'provider')}).{hint} Installed providers: {names}. "
                f"`smoke providers` lists them with their key variables.")
    if chosen is None and chosen_model and ":" in chosen_model:
        prefix = chosen_model.split(":", 1)[0]
        return (f"provider {prefix!r} (from {_where(resolved, 'model')} {chosen_model}) is unknown. "
                f"Installed providers: {names}. If {chosen_model!r} is the model's own name, name the "
                f"provider with --provider.")
    return None


def _where(resolved: Any, key: str) -> str:
    origin = str(resolved.origins.get(key, "default"))
    if origin == "flag":
        return f"--{key.replace('_', '-')}"
    return origin


def user_config_path() -> Path:
    """The user settings file (``$XDG_CONFIG_HOME/smoke/config.yaml``)."""
    from ..policy.settings.files import user_settings_path

    return user_settings_path()


def workspace_config_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.yaml"


def detect_provider(specs: list[Any]) -> tuple[str, str] | None:
    """``(provider name, env var)`` of the first installed provider whose key is set."""
    by_name = {s.name: s for s in specs}
    order = [n for n in PROVIDER_PREFERENCE if n in by_name] + sorted(n for n in by_name if n not in PROVIDER_PREFERENCE)
    for name in order:
        env_var = by_name[name].env_var
        if env_var and os.environ.get(env_var):
            return name, env_var
    return None
