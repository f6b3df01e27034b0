"""``Agent``: an agent bound to a workspace, a provider and a tool set
(made by :func:`~smoke_core.create_agent`, in :mod:`smoke_core.run.factory`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..base.errors import AgentError, AgentErrorInfo
from ..base.events import Event
from ..base.images import TaskPart, task_content
from ..base.messages import Message
from ..hooks.runner import HookRunner
from ..policy.gate import PermissionGate
from ..policy.options import AgentOptions, Guards
from ..policy.rules import ANSWERS, PermissionRule
from ..policy.secrets import Redactor
from ..store.lease import SessionBusy, SessionLease
from ..store.protocol import Store
from ..tools.definitions import ToolDefinition, ToolRegistry
from ..wire.types import Provider, ProviderRegistry, RetryPolicy
from .call_journal import pending_calls
from .compaction import Compactor
from .event_bus import EventBus, Listener
from .fair import starved, take_turn
from .handle import RunHandle
from .history import new_session_id, repair_history
from .output import OutputSpec
from .pauses import PauseBroker
from .state import RunDeps, RunResult

if TYPE_CHECKING:
    from pluggy import PluginManager

log = logging.getLogger("smoke")


class Agent:
    """An agent bound to a workspace, a provider and a tool set. Create it with
    :func:`create_agent`. One run at a time per agent."""

    def __init__(
        self,
        *,
        options: AgentOptions,
        pm: PluginManager,
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
        gate: PermissionGate | None = None,
        settings: Any = None,
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
        self._gate = gate if gate is not None else PermissionGate(
            options.permission, auto_approve=options.auto_approve, workspace=options.workspace.root,
            tools=registry.get,
        )
        #: the effective settings, where each came from, the rules and warnings
        #: (a :class:`~smoke_core.settings.ResolvedSettings`; None when built by hand)
        self.settings = settings
        self._bus = EventBus()
        self._pauses = PauseBroker()
        self._current: RunHandle | None = None
        self._busy: AgentErrorInfo | None = None  # why this run may not use its session (session_busy)
        #: why this agent's session starts, for ``session_start``: a host sets ``"clear"``
        #: for an agent made by a chat's /clear; None: ``startup`` or ``resume``
        self.session_source: str | None = None
        self._session_started = False
        #: the usage of this agent's last run (None before the first)
        self.last_usage: Any = None
        #: the mode ``/plan off`` goes back to (the one before plan mode)
        self._mode_before_plan = "ask-default"

    # ------------------------------------------------------------ tools

    @property
    def plugin_manager(self) -> PluginManager:
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
        self, task: str | Sequence[TaskPart], *, output_type: Any = None, output_retries: int = 2,
        session: str | None = None, fork: bool = False,
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

        ``session`` continues that session (this and later runs use it);
        ``fork=True`` starts a new session from a copy of ``session``'s
        history (default: the agent's current session), which is left as it
        was — :attr:`session_id` is then the new one. A session that does not
        exist raises ``LookupError``; one held by another run ``ValueError``.
        """
        if session is not None or fork:
            await self._switch_session(session, fork)
        if starved():  # many runs starting at once: take turns with timers and I/O (run.fair)
            await take_turn()
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
        lease = None
        try:
            lease = await self._take_session_lease(handle)
            result = await handle.start()
            self.last_usage = result.usage  # what /cost and the web header set against the budget
            return result
        finally:
            if lease is not None:
                await lease.release()
            self._busy = None
            if self._current is handle:
                self._current = None
            self._pauses.forget_early()
            self._gate.allowed_for_run.clear()

    async def _switch_session(self, session: str | None, fork: bool) -> None:
        if self._current is not None:
            raise RuntimeError("this agent is already running; switch sessions between runs")
        source = session if session is not None else self.session_id
        if not fork:
            self.session_id = self.options.session_id = source
            return
        from ..store.fork import fork_session

        if source is None:
            raise ValueError("fork=True needs a session to copy: pass session=ID (the agent has none)")
        target = new_session_id()
        try:
            await fork_session(self.store, source, target)
        except SessionBusy as busy:
            raise ValueError(f"cannot fork: {busy.info.message}") from None
        self.session_id = self.options.session_id = target

    async def _take_session_lease(self, handle: RunHandle) -> SessionLease | None:
        """One run per session at a time, across processes (store.lease). A
        busy session fails the run with ``session_busy`` from ``_load_history``,
        before anything is written."""

        def lost(info: AgentErrorInfo) -> None:
            handle.warn(info)
            handle.abort()

        try:
            return await SessionLease.take(self.store, self.session_id, on_lost=lost)
        except SessionBusy as busy:
            self._busy = busy.info
            return None

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
            settings=self.settings,
            set_mode=self.set_permission_mode,
            compactor=self._compactor,
            retry=self.retry,
            guards=self.guards,
            system_prompt=self.system_prompt,
            model_settings=self.model_settings,
            max_tool_output_chars=self.max_tool_output_chars,
            redactor=Redactor.from_environment(),
            start_session=self._start_session,
        )

    def _start_session(self, has_history: bool) -> str | None:
        if self._session_started:
            return None
        self._session_started = True
        return self.session_source or ("resume" if has_history else "startup")

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

    def resolve_permission(self, tool_call_id: str, decision: str, *,
                           remember: str | None = None) -> list[PermissionRule] | None:
        """Answer a ``permission.required``: ``"allow"``, ``"allow_run"`` (this tool or
        MCP server for the rest of the run), ``"allow_always"``, ``"allow_network"``
        (this call, and a sandboxed command may reach the network this once),
        ``"deny"`` or ``"deny_always"`` (writes a deny rule, like ``allow_always``).

        ``"allow_always"`` allows the call and writes allow rules for exactly
        this tool and argument (:meth:`~smoke_core.policy.gate.PermissionGate.rules_for`:
        one rule, or for a command one per simple command not allowed yet, with
        the call's ``env``) to ``.smoke/config.local.yaml``
        (``remember="local"``, the default) or the user settings
        (``remember="user"``; paths are then absolute), and adds them to this
        agent's gate, so this and later runs do not ask again. Raises
        ``ValueError`` when no rule can cover the call (a command the parse
        cannot see through). An answer given before the pause is registered is
        kept and used when it comes (``allow_always`` needs the pause: answer
        it after ``permission.required``). Returns the rules written for
        ``allow_always`` / ``deny_always``, else None."""
        if decision not in ANSWERS:
            raise ValueError(f"decision must be one of {', '.join(ANSWERS)}, got {decision!r}")
        always = decision in ("allow_always", "deny_always")
        if remember is not None and (not always or remember not in ("local", "user")):
            raise ValueError(
                f"remember= goes with decision='allow_always' or 'deny_always' and is 'local' or 'user', "
                f"got remember={remember!r} with decision={decision!r}"
            )
        gate = self._gate
        if always:
            from ..policy.settings.remember import remember_rule

            request = gate.pending.get(tool_call_id)
            if request is None:
                raise ValueError(
                    f"no pending permission request {tool_call_id!r}: {decision} needs the request "
                    f"(answer after permission.required)"
                )
            if request.kind != "tool":
                raise ValueError(
                    f"{decision} applies to tool calls; {request.kind} {request.tool_name!r} can be answered "
                    f"with 'allow', 'allow_run' or 'deny'"
                )
            scope = remember or "local"
            action: Literal["allow", "deny"] = "allow" if decision == "allow_always" else "deny"
            texts = gate.rules_for(request, absolute=scope == "user", action=action)
            if not texts:
                raise ValueError(
                    f"no rule can cover this call: {request.reason or 'the command cannot be seen through'}; "
                    f"answer 'allow' or 'allow_run' (or 'deny') instead"
                )
            added = []
            for text in texts:
                path = remember_rule(self.workspace.root, text, scope=scope, action=action)  # type: ignore[arg-type]
                added.append(gate.add_rule(text, action, origin=str(path)))
            gate.take_pending(tool_call_id)
            self._pauses.answer(tool_call_id, decision)  # the rules are in place: this call follows them
            return added
        gate.take_pending(tool_call_id)
        self._pauses.answer(tool_call_id, decision)
        return None

    # ------------------------------------------------------------ permission mode and plans

    @property
    def permission_mode(self) -> Any:
        """The permission mode calls are decided with now (a mode name, or the programmer's callable)."""
        return self._gate.mode

    def set_permission_mode(self, mode: str) -> None:
        """Switch the permission mode (``plan``, ``accept-edits``, ``ask-default``...) from the next
        call on, during a run too; ``permission.mode_changed`` says so. A ``ValueError`` names the
        modes for an unknown one; a mode managed settings set is final (``ValueError`` too)."""
        from .plan import switch_mode

        handle = self._current
        switch_mode(self, mode, handle.emit if handle is not None else None)

    def resolve_plan(self, tool_call_id: str, decision: str, *, mode: str | None = None,
                     text: str | None = None) -> None:
        """Answer a ``plan.required``: ``"approve"`` (the run goes on in ``mode``:
        ``"ask-default"``, the default, or ``"accept-edits"``), ``"edit"`` (approve
        ``text``, the plan as the person changed it) or ``"reject"`` (``text``: the
        person's words, for the model). A ``ValueError`` says what does not fit."""
        from .plan import encode_answer

        self._pauses.answer(tool_call_id, encode_answer(decision, mode, text))

    #: the workspace's checkpoints (:mod:`smoke_core.run.checkpoints`); None when they are off
    checkpoint_store: Any = None

    def checkpoints(self, session_id: str | None = None) -> list[Any]:
        """The checkpoints of ``session_id`` (default: this agent's session),
        oldest first: the workspace recorded before each turn and each
        mutating tool call. [] when checkpoints are off or there are none."""
        session = session_id or self.session_id
        return self.checkpoint_store.checkpoints(session) if self.checkpoint_store is not None and session else []

    def rewind(self, checkpoint: Any, *, conversation: bool = False) -> Any:
        """Put the workspace's files back as they were at ``checkpoint`` (a
        :class:`~smoke_core.run.checkpoints.Checkpoint`, or its number in this
        session); with ``conversation=True`` the agent also goes on in a new
        session holding the conversation as it was then (the old one is
        kept). The current state is recorded first: the returned checkpoint
        undoes the rewind (``agent.rewind(returned)``). Raises
        :class:`~smoke_core.run.checkpoints.CheckpointError` (a run is active,
        another run holds the session, the checkpoint was pruned)."""
        from .checkpoints import rewind_agent

        return rewind_agent(self, checkpoint, conversation)

    @property
    def context_window(self) -> int:
        """The prompt size (tokens) compaction keeps the conversation under."""
        return self._compactor.context_window

    def set_model(self, model: str) -> None:
        """Use ``model`` on the same provider (endpoint, key, settings) from
        the next run on. Raises ``ValueError`` when the provider cannot
        switch (it has no ``with_model``) or a run is in progress."""
        if self._current is not None:
            raise ValueError("cannot switch the model during a run; switch between runs")
        with_model = getattr(self.provider, "with_model", None)
        if with_model is None:
            raise ValueError(
                f"the provider {getattr(self.provider, 'name', '?')} cannot switch models; create an agent with "
                f"model={model!r} instead"
            )
        self.provider = with_model(model)
        self.options.model = model

    def respond(self, tool_call_id: str, text: str) -> None:
        """Answer an ``ask_user.required`` with ``text``."""
        self._pauses.answer(tool_call_id, str(text))

    def respond_form(self, tool_call_id: str, values: dict[str, Any] | None) -> None:
        """Answer an ``ask_user.required`` that carries a ``form``: ``values``
        (field name → value) accepts it, None declines. Raises
        :class:`~smoke_core.base.forms.FormError` (a ``ValueError``) naming
        each field that does not fit the form, so the person can be asked again."""
        import json

        if values is None:
            self._pauses.answer(tool_call_id, json.dumps({"action": "decline"}))
            return
        form = self._pauses.forms.get(tool_call_id)
        if form is not None:
            from ..base.forms import check_form

            values = check_form(form, values)
        self._pauses.answer(tool_call_id, json.dumps({"action": "accept", "content": values}))

    # ------------------------------------------------------------ sessions

    def _load_history(self) -> list[Message]:
        if self._busy is not None:
            raise AgentError(self._busy)
        if self.session_id is None:
            return []
        messages = list(self.store.load(self.session_id))
        return repair_history(messages, pending_calls(self.store, self.session_id))

    def _store_append(self, message: Message) -> None:
        if self.session_id is not None:
            self.store.append(self.session_id, message)

    async def aclose(self, *, reason: str = "other") -> None:
        """End the session for plugins (``session_end`` with ``reason``, once,
        when the agent ran) and release what they hold (``close_agent``). Safe
        to call twice."""

        def failed(plugin: str, message: str, exc: BaseException) -> None:
            log.warning("smoke: %s (ignored)", message)

        hooks = HookRunner(self._pm)
        if self._session_started:
            self._session_started = False
            await hooks.observe("session_end", {"agent": self, "reason": reason}, failed)
        await hooks.observe("close_agent", {"agent": self}, failed)
        for _label, provider in self.options.fallbacks:  # made by create_agent: theirs to close is ours
            close = getattr(provider, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception as exc:
                    log.warning("smoke: closing the fallback model %s failed: %s (ignored)", _label, exc)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

