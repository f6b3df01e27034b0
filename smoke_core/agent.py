"""``create_agent`` and ``Agent``: the public entry point of the library."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from ._event_bus import EventBus, Listener
from ._hooks import AsyncRegistration, HookRunner
from ._images import TaskPart, task_content
from ._output import OutputSpec
from ._pauses import PauseBroker
from .compaction import Compactor
from .errors import AgentError
from .events import Event
from .messages import Message
from .options import AgentOptions, Guards
from .permissions import ANSWERS, PermissionGate
from .plugins import SmokePluginManager, collect_providers, create_plugin_manager
from .prompts import DEFAULT_SYSTEM_PROMPT
from .providers import ApiKey, Provider, ProviderRegistry, RetryPolicy
from .run import RunDeps, RunHandle, RunResult
from .sandbox import SandboxSettings
from .secrets import Redactor
from .store import MemoryStore, Store
from .tools import TOOL_GROUPS, ToolDefinition, ToolRegistry
from .workspace import Workspace

log = logging.getLogger("smoke")


class Agent:
    """An agent bound to a workspace, a provider and a tool set. Create it with
    :func:`create_agent`. One run at a time per agent."""

    def __init__(
        self,
        *,
        options: AgentOptions,
        pm: SmokePluginManager,
        registry: ToolRegistry,
        providers: ProviderRegistry,
        provider: Provider,
        groups: set[str] | None,
        extra_tools: list[str],
        system_prompt: str | None,
        store: Store,
        retry: RetryPolicy,
        guards: Guards,
        compactor: Compactor,
        model_settings: dict[str, Any],
        max_tool_output_chars: int,
    ) -> None:
        self.options = options
        self.workspace = options.workspace
        self._pm = pm
        self._registry = registry
        self.providers = providers
        self.provider = provider
        self._groups = groups
        self._extra_tools = extra_tools
        self.system_prompt = system_prompt
        self.store = store
        self.retry = retry
        self.guards = guards
        self._compactor = compactor
        self.model_settings = model_settings
        self.max_tool_output_chars = max_tool_output_chars
        self.session_id = options.session_id
        self._gate = PermissionGate(options.permission, auto_approve=options.auto_approve)
        self._bus = EventBus()
        self._pauses = PauseBroker()
        self._current: RunHandle | None = None

    # ------------------------------------------------------------ tools

    @property
    def plugin_manager(self) -> SmokePluginManager:
        return self._pm

    @property
    def registry(self) -> ToolRegistry:
        """Every tool registered for this agent (exposed or not), with its source."""
        return self._registry

    @property
    def tools(self) -> dict[str, ToolDefinition]:
        """The tools the next run will expose, by name."""
        return self._exposed_tools()

    def _exposed_tools(self) -> dict[str, ToolDefinition]:
        out: dict[str, ToolDefinition] = {}
        for t in self._registry:
            if self._groups is None or t.name in self._extra_tools or (t.group in self._groups):
                out[t.name] = t
        return out

    def register_tool(self, tool: ToolDefinition, *, group: str | None = None, replace: bool = False) -> None:
        """Add a tool. A run already in progress does not see it (tools are fixed when a run starts)."""
        tool = self._registry.register(tool, group=group, source="agent.register_tool", replace=replace)
        if self._groups is not None:
            self._extra_tools.append(tool.name)

    def get_tool_presentations(self) -> dict[str, dict[str, Any]]:
        """``{tool_name: {label, icon, tone, group}}`` for UIs (never sent to providers)."""
        return {t.name: t.presentation_dict() for t in self._exposed_tools().values()}

    def tool_source(self, name: str) -> str | None:
        return self._registry.source(name)

    # ------------------------------------------------------------ events

    def on(self, type: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event of ``type``; returns an unsubscribe function."""
        return self._bus.on(type, fn)

    def on_any(self, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event; returns an unsubscribe function."""
        return self._bus.on_any(fn)

    # ------------------------------------------------------------ runs

    async def run(
        self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2
    ) -> RunResult:
        """Run ``task`` to the end and return the :class:`RunResult`.

        ``task`` is text, or a list of text and :class:`~smoke_core.Image`
        parts (``["What is wrong here?", Image.from_path("shot.png")]``); a
        provider that cannot take images refuses them before any call.

        ``output_type`` (a pydantic model, dataclass, TypedDict or simple
        type) asks for a typed result: the run ends when the model calls the
        ``final_result`` tool with arguments that validate, and
        ``RunResult.output`` holds the validated value; after
        ``output_retries`` invalid attempts the run fails with ``output_invalid``.
        """
        if self._current is not None:
            raise RuntimeError("this agent is already running; wait for the run to end or create another agent")
        content, text = task_content(task)
        if any(b["type"] == "image" for b in content) and getattr(self.provider, "supports_images", True) is False:
            name = getattr(self.provider, "name", type(self.provider).__name__)
            raise ValueError(
                f"provider {name} (model {getattr(self.provider, 'model', '?')}) does not take images; "
                f"use a model that does, or leave the images out"
            )
        output = OutputSpec(output_type, retries=output_retries) if output_type is not None else None
        handle = RunHandle(self, text, self._run_deps(), output=output, content=content)
        self._current = handle
        try:
            return await handle.start()
        finally:
            if self._current is handle:
                self._current = None
            self._pauses.forget_early()
            self._gate.allowed_for_run.clear()

    def _run_deps(self) -> RunDeps:
        return RunDeps(
            options=self.options,
            provider=self.provider,
            hooks=HookRunner(self._pm),
            gate=self._gate,
            bus=self._bus,
            pauses=self._pauses,
            registry=self._registry,
            exposed_tools=self._exposed_tools,
            load_history=self._load_history,
            store_append=self._store_append,
            compactor=self._compactor,
            retry=self.retry,
            guards=self.guards,
            system_prompt=self.system_prompt,
            model_settings=self.model_settings,
            max_tool_output_chars=self.max_tool_output_chars,
            redactor=Redactor.from_environment(),
        )

    def run_sync(self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2) -> RunResult:
        """``asyncio.run(agent.run(task))`` for scripts."""
        return asyncio.run(self.run(task, output_type=output_type, output_retries=output_retries))

    async def stream(self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2) -> AsyncIterator[Event]:
        """Run ``task`` and yield its events as they happen. Leaving the loop early aborts the run."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        off = self.on_any(queue.put_nowait)
        runner = asyncio.ensure_future(self.run(task, output_type=output_type, output_retries=output_retries))
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, runner}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    event = getter.result()
                    yield event
                    if event.type in ("run.completed", "run.failed", "run.interrupted"):
                        break
                else:
                    getter.cancel()
                    while not queue.empty():
                        yield queue.get_nowait()
                    break
            await runner
        finally:
            off()
            if not runner.done():
                self.abort()
                try:
                    await runner
                except asyncio.CancelledError:
                    pass

    def abort(self) -> None:
        """Stop the current run now (safe from any thread): the model stream is
        closed, running tools are cancelled (commands killed), pauses end; the
        run ends ``interrupted``."""
        handle = self._current
        if handle is not None:
            handle.abort()

    def resolve_permission(self, tool_call_id: str, decision: str) -> None:
        """Answer a ``permission.required``: ``"allow"``, ``"allow_run"`` (this tool or
        MCP server for the rest of the run) or ``"deny"``. An answer given before
        the pause is registered is kept and used when it comes."""
        if decision not in ANSWERS:
            raise ValueError(f"decision must be one of {', '.join(ANSWERS)}, got {decision!r}")
        self._pauses.answer(tool_call_id, decision)

    def respond(self, tool_call_id: str, text: str) -> None:
        """Answer an ``ask_user.required`` with ``text``."""
        self._pauses.answer(tool_call_id, str(text))

    # ------------------------------------------------------------ sessions

    def _load_history(self) -> list[Message]:
        if self.session_id is None:
            return []
        return repair_history(list(self.store.load(self.session_id)))

    def _store_append(self, message: Message) -> None:
        if self.session_id is not None:
            self.store.append(self.session_id, message)

    async def aclose(self) -> None:
        """Release what plugins hold (``close_agent`` hook). Safe to call twice."""

        def failed(plugin: str, message: str, exc: BaseException) -> None:
            log.warning("smoke: %s (ignored)", message)

        await HookRunner(self._pm).observe("close_agent", {"agent": self}, failed)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


# ---------------------------------------------------------------- factory

def create_agent(
    workspace_path: str | os.PathLike[str] = ".",
    *,
    provider: str | Provider | None = None,
    model: str | None = None,
    api_key: ApiKey = None,
    base_url: str | None = None,
    tools: Iterable[str | ToolDefinition] | None = None,
    hooks: dict[str, Callable[..., Any]] | None = None,
    plugins: Iterable[object] | None = None,
    permission: str | Callable[..., Any] = "ask-default",
    auto_approve: bool = False,
    system_prompt: str | None = None,
    session_id: str | None = None,
    store: Store | None = None,
    user_id: str | None = None,
    max_steps: int = 50,
    retry: RetryPolicy | None = None,
    guards: Guards | None = None,
    context_window: int = 128_000,
    model_settings: dict[str, Any] | None = None,
    max_tool_output_chars: int = 30_000,
    autoload_plugins: bool = True,
    provider_options: dict[str, Any] | None = None,
    sandbox: SandboxSettings | dict[str, Any] | None = None,
    trust_workspace: bool = True,
    **plugin_options: Any,
) -> Agent:
    """Create an :class:`Agent`.

    ``provider`` is a registered provider name (``"openai"``, ``"nvidia"``,
    ``"anthropic"``...) or a provider instance; ``model="nvidia:meta/llama-3.3-70b-instruct"``
    names both. ``tools`` restricts the exposed groups when it holds group
    names (``["search", "git"]``) and adds tools when it holds
    ``ToolDefinition``s. ``hooks`` maps hook names to callables; ``plugins``
    are plugin objects for this agent only. Other keyword arguments
    (``mcp_servers=``, ``skills_dir=``...) are kept in ``options.extra`` for
    plugins to read; ``provider_options`` go to the provider factory
    (``{"idle_timeout": 30}``).
    """
    workspace = Workspace(workspace_path)
    if not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    if system_prompt is None:
        system_prompt = DEFAULT_SYSTEM_PROMPT
    options = AgentOptions(
        workspace=workspace,
        provider_name=provider if isinstance(provider, str) else getattr(provider, "name", None),
        model=model,
        permission=permission,
        auto_approve=auto_approve,
        user_id=user_id,
        session_id=session_id,
        max_steps=max_steps,
        workspace_trusted=bool(trust_workspace),
        sandbox=SandboxSettings.model_validate(sandbox or {}) if not isinstance(sandbox, SandboxSettings) else sandbox,
        extra=dict(plugin_options),
    )
    pm = create_plugin_manager(list(plugins or []), hooks, autoload=autoload_plugins)

    providers = collect_providers(pm)
    provider_obj = _resolve_provider(provider, model, api_key, base_url, user_id, providers, provider_options)

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

    return Agent(
        options=options,
        pm=pm,
        registry=registry,
        providers=providers,
        provider=provider_obj,
        groups=groups,
        extra_tools=extra_tools,
        system_prompt=system_prompt,
        store=store if store is not None else MemoryStore(),
        retry=retry or RetryPolicy(),
        guards=guards or Guards(),
        compactor=Compactor(context_window=context_window),
        model_settings=dict(model_settings or {}),
        max_tool_output_chars=max_tool_output_chars,
    )


def _resolve_provider(
    provider: str | Provider | None,
    model: str | None,
    api_key: ApiKey,
    base_url: str | None,
    user_id: str | None,
    providers: ProviderRegistry,
    provider_options: dict[str, Any] | None,
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
    try:
        return spec.factory(**kwargs)
    except AgentError:
        raise
    except TypeError as exc:
        raise ValueError(f"provider {name!r} could not be created: {exc}") from exc


def repair_history(messages: list[Message]) -> list[Message]:
    """Close tool calls left without results (a run killed mid-step) so the
    history is valid for every provider; the store itself is not changed."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        out.append(message)
        if message["role"] != "assistant":
            continue
        calls = [b for b in message["content"] if b.get("type") == "tool_call"]
        if not calls:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.get("tool_call_id") for b in nxt["content"]} if nxt and nxt["role"] == "tool" else set()
        missing = [c for c in calls if c["id"] not in answered]
        if not missing:
            continue
        filler = [
            {"type": "tool_result", "tool_call_id": c["id"], "is_error": True,
             "content": [{"type": "text", "text": "not run: the previous run ended before this call completed"}]}
            for c in missing
        ]
        if nxt is not None and nxt["role"] == "tool":
            messages[i + 1] = {"role": "tool", "content": [*nxt["content"], *filler]}
        else:
            out.append({"role": "tool", "content": filler})
    return out


def new_session_id() -> str:
    return "ses_" + uuid.uuid4().hex[:12]
