"""``create_agent``: settings layers, plugins, provider and tools in, an
:class:`~smoke_core.Agent` out."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from ..base.errors import AgentError
from ..base.prompts import DEFAULT_SYSTEM_PROMPT
from ..hooks.manager import collect_providers, create_plugin_manager
from ..hooks.runner import AsyncRegistration, HookRunner
from ..policy.gate import PermissionGate
from ..policy.options import AgentOptions, Budget, Guards
from ..policy.sandbox.settings import SandboxSettings
from ..policy.secrets import declare_secret_names
from ..store.protocol import MemoryStore, Store
from ..tools.definitions import TOOL_GROUPS, ToolDefinition, ToolRegistry
from ..tools.workspace import Workspace
from ..wire.types import ApiKey, Provider, ProviderRegistry, RetryPolicy
from .agent import Agent
from .compaction import Compactor

log = logging.getLogger("smoke")


# ---------------------------------------------------------------- factory

#: ``create_agent``'s own keyword arguments (plugin keys come on top, from ``register_settings``).
_CREATE_AGENT_ARGS = (
    "provider", "model", "api_key", "base_url", "tools", "hooks", "plugins", "permission", "auto_approve",
    "permissions", "system_prompt", "instructions", "session_id", "store", "user_id", "max_steps", "retry",
    "guards", "context_window", "model_settings", "max_tool_output_chars", "autoload_plugins",
    "provider_options", "sandbox", "trust_workspace", "setting_sources", "plugin_options",
    "tool_calls", "max_tokens", "temperature", "top_p", "seed",
    "fallback_models", "max_cost_usd", "max_input_tokens", "max_output_tokens", "checkpoints",
)
#: settings keys that go into every model request (``model_settings``), unless it names them itself
MODEL_SETTING_KEYS = ("max_tokens", "temperature", "top_p", "seed")
_settings_log_seen: set[str] = set()


def warn_once(message: str) -> None:
    # an application creating many agents in one folder hears each warning once
    if message not in _settings_log_seen:
        _settings_log_seen.add(message)
        log.warning("smoke: %s", message)


def split_hooks(hooks: dict[str, Any] | None) -> tuple[dict[str, Callable[..., Any]], dict[str, Any]]:
    """``create_agent(hooks=...)`` in its two forms: Python hooks by hook name
    (snake_case) and command hooks by event name (``PreToolUse``...)."""
    python_hooks: dict[str, Callable[..., Any]] = {}
    command_hooks: dict[str, Any] = {}
    for name, value in (hooks or {}).items():
        if isinstance(name, str) and name[:1].isupper():
            command_hooks[name] = value
        else:
            python_hooks[name] = value
    return python_hooks, command_hooks


def create_agent(
    workspace_path: str | os.PathLike[str] = ".",
    *,
    provider: str | Provider | None = None,
    model: str | None = None,
    api_key: ApiKey = None,
    base_url: str | None = None,
    tools: Iterable[str | ToolDefinition] | None = None,
    hooks: dict[str, Any] | None = None,
    plugins: Iterable[object] | None = None,
    permission: str | Callable[..., Any] | None = None,
    auto_approve: bool | list[str] | None = None,
    permissions: dict[str, list[str]] | None = None,
    system_prompt: str | None = None,
    instructions: str | bool | None = None,
    session_id: str | None = None,
    store: Store | None = None,
    user_id: str | None = None,
    max_steps: int | None = None,
    retry: RetryPolicy | None = None,
    guards: Guards | None = None,
    context_window: int | None = None,
    model_settings: dict[str, Any] | None = None,
    max_tool_output_chars: int = 30_000,
    autoload_plugins: bool = True,
    provider_options: dict[str, Any] | None = None,
    sandbox: SandboxSettings | dict[str, Any] | None = None,
    trust_workspace: bool | None = True,
    setting_sources: Iterable[str] | None = None,
    plugin_options: dict[str, dict[str, Any]] | None = None,
    tool_calls: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    fallback_models: list[str] | None = None,
    max_cost_usd: float | None = None,
    max_input_tokens: int | None = None,
    max_output_tokens: int | None = None,
    checkpoints: bool | None = None,
    **plugin_settings: Any,
) -> Agent:
    """Create an :class:`Agent`.

    ``provider`` is a registered provider name (``"openai"``, ``"nvidia"``,
    ``"anthropic"``...) or a provider instance; ``model="nvidia:meta/llama-3.3-70b-instruct"``
    names both. ``tools`` restricts the exposed groups when it holds group
    names (``["search", "git"]``) and adds tools when it holds
    ``ToolDefinition``s. ``hooks`` maps hook names to callables
    (``{"before_tool_call": fn}``) and, with plugin smoke-hooks, event names
    to command hooks in Claude Code's shape (``{"PreToolUse": [{"matcher":
    "Bash", "hooks": [{"type": "command", "command": "./check.py"}]}]}``:
    the code layer of the settings key ``hooks``); ``plugins`` are plugin
    objects for this agent only. ``provider_options`` go to the
    provider factory (``{"idle_timeout": 30}``).

    Settings (docs/security.md): the keyword arguments ``provider``,
    ``model``, ``base_url``, ``permission``, ``auto_approve``,
    ``permissions``, ``max_steps``, ``sandbox``, ``instructions``,
    ``plugin_options``, ``checkpoints`` (False: no checkpoints for ``agent.rewind``), the model call's
    ``tool_calls``, ``context_window``, ``max_tokens``, ``temperature``, ``top_p`` and ``seed`` (the last four go
    into every request unless ``model_settings`` names them) and the keys plugins declare (``mcp_servers=``,
    ``skills_dir=``...) are the *code* layer, above the user, project, local
    and environment layers (``setting_sources`` limits which are read;
    ``setting_sources=()`` reads none) and below managed settings, which are
    always read and final. ``trust_workspace=False`` applies the untrusted
    rules to the workspace's own files; ``None`` looks the folder up in the
    trust store (``smoke trust``). ``auto_approve`` is True, False or a list
    of allow rules (``["run_command(pytest *)"]``). Unknown keyword
    arguments are a ``TypeError``; a value of the wrong type is a
    :class:`~smoke_core.settings.SettingsError` naming the argument.
    """
    from ..hooks.collect import collect_setting_specs
    from ..policy.settings.files import SettingsError, UnknownSettingError
    from ..policy.settings.layers import choose_provider, resolve_settings

    workspace = Workspace(workspace_path)
    if trust_workspace is not None and not isinstance(trust_workspace, bool):
        raise SettingsError(f"create_agent(trust_workspace=...): expected True, False or None, got {trust_workspace!r}")
    python_hooks, command_hooks = split_hooks(hooks)
    pm = create_plugin_manager(list(plugins or []), python_hooks, autoload=autoload_plugins)
    specs = collect_setting_specs(pm)
    if command_hooks and "hooks" not in specs:
        raise SettingsError(
            f"create_agent(hooks=...): {', '.join(sorted(command_hooks))} are command hooks (Claude Code's shape), "
            f"which the smoke-hooks plugin runs: pip install smoke-hooks (or pass Python hooks by hook name)"
        )
    for key in plugin_settings:
        if key not in specs:
            import difflib

            candidates = [*_CREATE_AGENT_ARGS, *specs]
            close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else (
                "; if a plugin declares it, that plugin is not installed or not loaded (SMOKE_LOAD_PLUGINS)"
            )
            raise UnknownSettingError(f"create_agent() got an unexpected keyword argument {key!r}{hint}")

    project_instructions = instructions is not False
    code: dict[str, Any] = {
        "provider": provider if isinstance(provider, str) else None,
        "model": model, "base_url": base_url, "permission": permission, "auto_approve": auto_approve,
        "permissions": permissions, "max_steps": max_steps,
        "instructions": instructions if not isinstance(instructions, bool) else None,
        "plugin_options": plugin_options,
        "sandbox": sandbox.model_dump(exclude_unset=True) if isinstance(sandbox, SandboxSettings) else sandbox,
        "tool_calls": tool_calls, "context_window": context_window, "max_tokens": max_tokens,
        "temperature": temperature, "top_p": top_p, "seed": seed,
        "hooks": command_hooks or None,
        "fallback_models": fallback_models, "max_cost_usd": max_cost_usd, "max_input_tokens": max_input_tokens,
        "max_output_tokens": max_output_tokens,
        "checkpoints": checkpoints,
        **plugin_settings,
    }
    code = {k: v for k, v in code.items() if v is not None}
    resolved = resolve_settings(workspace.root, code=code, code_origin="create_agent", sources=setting_sources,
                                trust=trust_workspace, specs=specs)

    providers = collect_providers(pm)
    declare_secret_names(s.env_var for s in providers.specs() if s.env_var)
    if provider is not None and not isinstance(provider, str):
        chosen: str | Provider | None = provider
        chosen_model, chosen_url = resolved.values["model"], resolved.values["base_url"]
    else:
        chosen, chosen_model, chosen_url = choose_provider(resolved, providers.names())
    for warning in resolved.warnings:
        warn_once(warning)

    values = resolved.values
    if system_prompt is None:
        system_prompt = DEFAULT_SYSTEM_PROMPT
    if project_instructions:
        from ..base.instructions import load_instructions
        from .agent_settings import user_config_path

        chosen_sources = set(setting_sources) if setting_sources is not None else {"user", "project"}
        loaded = load_instructions(
            workspace.root, user_dir=user_config_path().parent if "user" in chosen_sources else None,
            trusted=resolved.trusted, workspace_files="project" in chosen_sources,
        )
        for warning in loaded.warnings:
            resolved.warnings.append(warning)
            warn_once(warning)
        if loaded.text:
            system_prompt = f"{system_prompt}\n\n{loaded.text}".strip()
    if values["instructions"]:
        system_prompt = f"{system_prompt}\n\n{values['instructions']}".strip()
    extra = dict(resolved.plugin_values)
    extra["plugin_options"] = dict(values["plugin_options"])
    extra["settings_origin"] = dict(resolved.origins)
    options = AgentOptions(
        workspace=workspace,
        provider_name=chosen if isinstance(chosen, str) else getattr(chosen, "name", None),
        model=chosen_model,
        permission=values["permission"],
        auto_approve=values["auto_approve"] is True,
        user_id=user_id,
        session_id=session_id,
        max_steps=values["max_steps"],
        workspace_trusted=resolved.trusted,
        sandbox=values["sandbox"],
        control_files=tuple(values["control_files"]),
        extra=extra,
    )

    from_settings = {k: values[k] for k in ("tool_calls", "context_window", "price_as") if values.get(k) is not None}
    provider_obj = _resolve_provider(chosen, chosen_model, api_key, chosen_url, user_id, providers, provider_options,
                                     from_settings)
    options.budget = Budget(values["max_cost_usd"], values["max_input_tokens"], values["max_output_tokens"])
    options.fallbacks = _fallbacks(values["fallback_models"], provider_obj, user_id, providers)

    # tools
    registry = ToolRegistry()
    groups: set[str] | None = None
    extra_tools: list[str] = []
    given: list[ToolDefinition] = []
    if tools is not None:
        if isinstance(tools, (str, ToolDefinition)):
            tools = [tools]
        for item in tools:
            if isinstance(item, str):
                groups = groups or set()
                if item == "core":
                    groups.update(g for g in ("filesystem", "search", "terminal", "agent"))
                else:
                    groups.add(item)
            elif isinstance(item, ToolDefinition):
                given.append(item)
            else:
                raise TypeError(
                    f"tools= takes group names and ToolDefinitions (use @tool), got {type(item).__name__}"
                )
    def tool_kwargs(label: str) -> dict[str, Any]:
        def register(tool: ToolDefinition, *, group: str | None = None) -> ToolDefinition:
            return registry.register(tool, group=group, source=label)

        return {"register": register, "options": options}

    def tools_failed(label: str, exc: BaseException) -> None:
        if isinstance(exc, (ValueError, AsyncRegistration)):  # already worded for people
            raise exc
        raise RuntimeError(f"register_tools in plugin {label} failed: {type(exc).__name__}: {exc}") from exc

    HookRunner(pm).collect("register_tools", tool_kwargs, tools_failed)
    for t in given:
        t = registry.register(t, source="create_agent(tools=...)")
        extra_tools.append(t.name)
    if groups is not None:
        known = set(TOOL_GROUPS) | {t.group for t in registry if t.group}
        unknown = sorted(g for g in groups if g not in known)
        if unknown:
            raise ValueError(
                f"tools=: unknown tool group(s) {', '.join(map(repr, unknown))}; known groups: {', '.join(sorted(known))}"
            )
    gate = PermissionGate(
        options.permission, auto_approve=options.auto_approve, rules=resolved.rules,
        workspace=workspace.root, tools=registry.get, control_files=options.control_files,
    )
    names = registry.names()
    for message in gate.rule_problems(names):
        resolved.warnings.append(message)
        warn_once(message)
    for rule in resolved.rules:
        # MCP tools (server__tool) appear when their server starts, after this
        if "__" not in rule.tool and not any(rule.matches_tool(n) for n in names):
            message = (f"{rule.describe()} names no installed tool; it may come from a plugin that is not "
                       f"installed or not loaded")
            resolved.warnings.append(message)
            warn_once(message)

    gate = PermissionGate(
        options.permission, auto_approve=options.auto_approve, rules=resolved.rules,
        workspace=workspace.root, tools=registry.get,
    )
    options.match_rule = gate.rule_for_value
    cp_store = None
    if values.get("checkpoints") is not False:  # on by default (docs/cli.md#smoke-rewind)
        from .checkpoints import HOOKS, HOOKS_NAME, checkpoint_store_for

        cp_store = checkpoint_store_for(workspace.root, values)
        options.extra["checkpoint_store"] = cp_store
        if not pm.has_plugin(HOOKS_NAME):  # one for every agent of a (shared) manager
            pm.register(HOOKS, name=HOOKS_NAME)
    agent = Agent(
        options=options,
        pm=pm,
        registry=registry,
        providers=providers,
        provider=provider_obj,
        groups=groups,
        extra_tools=extra_tools,
        system_prompt=system_prompt,
        store=store if store is not None else _store_from_settings(values.get("store")),
        retry=retry or RetryPolicy(),
        guards=guards or Guards(),
        compactor=Compactor(context_window=_context_window(values.get("context_window"), provider_obj)),
        model_settings=_model_settings(model_settings, values),
        max_tool_output_chars=max_tool_output_chars,
        gate=gate,
        settings=resolved,
    )
    agent.checkpoint_store = cp_store
    return agent


def _fallbacks(models: list[str], primary: Provider, user_id: str | None,
               providers: ProviderRegistry) -> tuple[tuple[str, Provider], ...]:
    """``fallback_models`` as providers, made now, so that a chain naming a provider that is not
    installed (or a model the primary's provider cannot switch to) is an error here, not mid-run."""
    out: list[tuple[str, Provider]] = []
    primary_name = getattr(primary, "name", None)
    for entry in models or []:
        text = entry.strip()
        name, _, model = text.partition(":") if ":" in text else ("", "", text)
        if name and name not in providers:
            installed = ", ".join(providers.names()) or "none"
            raise ValueError(
                f"fallback_models: {text!r} names the provider {name!r}, which is not installed "
                f"(installed: {installed}); install it or remove the entry"
            )
        if not model:
            raise ValueError(f"fallback_models: {text!r} names no model; write provider:model or a model name")
        if not name or name == primary_name:
            with_model = getattr(primary, "with_model", None)
            if with_model is None:
                raise ValueError(
                    f"fallback_models: {text!r} is a model of the same provider, which cannot switch models; "
                    f"write provider:model"
                )
            out.append((f"{primary_name}:{model}" if primary_name else model, with_model(model)))
            continue
        # another provider: its own key (the api_key= given is the primary's)
        out.append((f"{name}:{model}", _resolve_provider(name, model, None, None, user_id, providers, None)))
    return tuple(out)


def _store_from_settings(url: str | None) -> Store:
    """The ``store`` setting (or ``SMOKE_STORE_URL``) opened, else a MemoryStore."""
    from ..store.url import open_store, store_url_from_env

    url = store_url_from_env() or url
    return open_store(url) if url else MemoryStore()


def _context_window(given: int | None, provider: Provider) -> int | Callable[[], int]:
    """``context_window=`` when given, else the model's own (``model_facts``:
    the provider's settings, its ``/models`` answer, genai-prices), else 128k
    — looked up when the run first needs it, not when the agent is made
    (``smoke tools`` makes an agent and never needs it)."""
    if given is not None:
        if not isinstance(given, int) or isinstance(given, bool) or given < 1000:
            raise ValueError(f"context_window must be a whole number of tokens (at least 1000), got {given!r}")
        return given

    def lookup() -> int:
        from ..wire.model_facts import model_facts

        return model_facts(provider).context_window

    return lookup


def _model_settings(given: dict[str, Any] | None, values: dict[str, Any]) -> dict[str, Any]:
    """``model_settings`` as given; the settings (files, flags) fill in
    ``stream``, ``max_tokens``, ``temperature``, ``top_p`` and ``seed``."""
    settings = dict(given or {})
    for key in ("stream", *MODEL_SETTING_KEYS):
        if values.get(key) is not None:
            settings.setdefault(key, values[key])
    return settings


def _resolve_provider(
    provider: str | Provider | None,
    model: str | None,
    api_key: ApiKey,
    base_url: str | None,
    user_id: str | None,
    providers: ProviderRegistry,
    provider_options: dict[str, Any] | None,
    from_settings: dict[str, Any] | None = None,
) -> Provider:
    if provider is not None and not isinstance(provider, str):
        if not hasattr(provider, "stream"):
            raise TypeError(f"provider must be a name or an object with stream(request), got {type(provider).__name__}")
        return provider
    name = provider
    if name is None and model and ":" in model:
        prefix, rest = model.split(":", 1)
        if prefix in providers:
            name, model = prefix, rest
    if name is None:
        raise ValueError(
            "no provider given: pass provider='openai' (or another installed provider), "
            "model='provider:model', or a provider object. Installed providers: "
            + (", ".join(providers.names()) or "none (pip install smoke-provider-openai)")
        )
    spec = providers.get(name)
    if spec is None:
        installed = ", ".join(providers.names()) or "none"
        raise ValueError(
            f"unknown provider {name!r}. Installed providers: {installed}. "
            f"Install one (pip install smoke-provider-openai / smoke-provider-anthropic) or pass a provider object."
        )
    kwargs: dict[str, Any] = {"model": model or spec.default_model, "api_key": api_key, "user_id": user_id}
    if base_url is not None:
        kwargs["base_url"] = base_url
    kwargs.update(provider_options or {})
    # the tool_calls, context_window and price_as settings, for a provider that takes them (provider_options win)
    extra = {k: v for k, v in (from_settings or {}).items() if k not in kwargs}
    try:
        try:
            return spec.factory(**kwargs, **extra)
        except TypeError:
            if not extra:
                raise
            provider = spec.factory(**kwargs)
            warn_once(f"provider {name!r} takes no {' or '.join(sorted(extra))} option; the setting is ignored for it")
            return provider
    except AgentError:
        raise
    except TypeError as exc:
        raise ValueError(f"provider {name!r} could not be created: {exc}") from exc
