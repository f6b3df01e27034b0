"""One run of an agent: the loop of DESIGN §4.

A step: abort check → ``step.started`` → compaction if needed → exposed tools
→ ``before_model_call`` → provider call (streamed, with retries) →
``after_model_call`` → for each tool call: validate → ``before_tool_call`` →
permission → execute → ``after_tool_call`` → ``step.ended``.

The run is three parts with narrow interfaces — :class:`RunState` (plain
data), :class:`~smoke_core._model_caller.ModelCaller` and
:class:`~smoke_core._tool_executor.ToolExecutor` — driven by
:class:`RunHandle`, which is also what hooks and plugins see as ``run``. What
a run needs from its agent arrives as one :class:`RunDeps`; the run touches
nothing private of the agent.

Why this module is long: :class:`RunHandle` is both the loop's driver and
the documented object hooks receive as ``run``; its plugin API (properties,
``warn``, ``register_tool``, ``request_permission``, ``add_to_task``,
``add_instructions``), the loop and the subagent entry point share one
object's state by design, while the model call, the tool pipeline and the
state live in their own modules.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._compaction import Compactor
from ._context import ToolContext
from ._errors import AgentError, AgentErrorInfo, ToolError
from ._event_bus import EventBus
from ._events import Event
from ._fair import starved, take_turn
from ._hooks import HookRunner
from ._messages import Message, user_message
from ._model_caller import ModelCaller
from ._options import AgentOptions, Guards
from ._output import FINAL_RESULT, OutputSpec
from ._pauses import PauseBroker
from ._permissions import PermissionGate, PermissionRequest
from ._provider_types import Provider, RetryPolicy, Usage
from ._run_state import Interrupted, RunFailed, RunState, ToolCallRejected
from ._tool_executor import ToolExecutor
from ._tools import ToolDefinition, ToolRegistry
from ._workspace import Workspace
from .secrets import Redactor

log = logging.getLogger("smoke")


@dataclass
class RunResult:
    """How a run ended. ``text`` is the final answer (or ``finish_task``'s summary)."""

    status: str  # "completed" | "failed" | "interrupted"
    text: str | None
    messages: list[Message]
    usage: Usage
    error: AgentErrorInfo | None = None
    run_id: str = ""
    session_id: str | None = None
    steps: int = 0
    events: list[Event] = field(default_factory=list, repr=False)
    #: the validated result when the run was asked for ``output_type``
    output: Any = None


@dataclass(slots=True, frozen=True)
class RunDeps:
    """What a run uses of its agent, handed over when the run starts."""

    options: AgentOptions
    provider: Provider
    hooks: HookRunner
    gate: PermissionGate
    bus: EventBus
    pauses: PauseBroker
    registry: ToolRegistry
    exposed_tools: Callable[[], dict[str, ToolDefinition]]
    load_history: Callable[[], list[Message]]
    store_append: Callable[[Message], None]
    compactor: Compactor
    retry: RetryPolicy
    guards: Guards
    system_prompt: str | None
    model_settings: dict[str, Any]
    max_tool_output_chars: int
    redactor: Redactor


class RunHandle:
    """The run as hooks and plugins see it.

    Public attributes: ``run_id``, ``session_id``, ``user_id``, ``task``,
    ``workspace``, ``options``, ``agent``, ``step``, ``phase``, ``usage``,
    ``messages``, ``tools``, ``state`` (a dict plugins may use for run-scoped
    data), ``cancelled`` (an ``asyncio.Event``). Methods for ``before_run``:
    :meth:`request_permission`, :meth:`warn`, :meth:`register_tool`.
    """

    def __init__(
        self,
        agent: Any,
        task: str,
        deps: RunDeps,
        *,
        output: OutputSpec | None = None,
        content: list[dict[str, Any]] | None = None,
        parent: RunHandle | None = None,
        parent_tool_call_id: str | None = None,
    ) -> None:
        self.agent = agent
        self.task = task
        self._content = content or [{"type": "text", "text": task}]
        self.run_id = "run_" + uuid.uuid4().hex[:12]
        options = deps.options
        self.options = options
        self.session_id = options.session_id
        self.user_id = options.user_id
        self.workspace: Workspace = options.workspace
        self.cancelled = asyncio.Event()
        self._deps = deps
        self._st = RunState(output=output)
        self._artifacts: Path | None = None
        #: compaction's bookkeeping for this run (owned by the Compactor)
        self.compaction_tally: Any = None
        self._task: asyncio.Task[RunResult] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the run that started this one as a subagent (None for a top-level run)
        self.parent = parent
        self.parent_tool_call_id = parent_tool_call_id
        self.depth: int = 0 if parent is None else parent.depth + 1
        self._listening: Callable[[str], bool]
        if parent is None:
            self.emit = deps.bus.emitter(self.run_id, self.session_id)
            self._listening = deps.bus.listening
        else:
            self.emit, self._listening = _subagent_emitter(deps.bus, self.run_id, self.session_id,
                                                           parent_tool_call_id)
        self._model = ModelCaller(
            provider=deps.provider, retry=deps.retry, guards=deps.guards, hooks=deps.hooks, emit=self.emit,
            listening=self._listening, state=self._st, model_settings=deps.model_settings, user_id=self.user_id,
            system_prompt=self.system_prompt, base_system=deps.system_prompt, check_abort=self._check_abort, hook_run=self,
            call_id_prefix="" if parent_tool_call_id is None else f"{parent_tool_call_id}.",
            on_hook_error=self._hook_failed,
        )
        self._tools = ToolExecutor(
            state=self._st, guards=deps.guards, hooks=deps.hooks, gate=deps.gate, pauses=deps.pauses, emit=self.emit,
            listening=self._listening, registry=deps.registry, workspace=self.workspace, redactor=deps.redactor,
            max_output_chars=deps.max_tool_output_chars, artifacts_dir=lambda: self.artifacts_dir,
            make_context=self._tool_context, set_phase=self._set_phase, hook_run=self,
            on_hook_error=self._hook_failed,
        )

    # ------------------------------------------------------------ plugin API

    @property
    def step(self) -> int:
        return self._st.step

    @property
    def phase(self) -> str:
        return self._st.phase

    @property
    def usage(self) -> Usage:
        return self._st.usage

    @property
    def state(self) -> dict[str, Any]:
        """Run-scoped scratch space shared by plugins and tools (``ctx.state``)."""
        return self._st.scratch

    @property
    def messages(self) -> list[Message]:
        """The transcript the next model call starts from."""
        return self._st.messages

    @messages.setter
    def messages(self, value: list[Message]) -> None:
        self._st.messages = value

    @property
    def tools(self) -> dict[str, ToolDefinition]:
        """The tools this run exposes (fixed once ``before_run`` is over)."""
        return self._st.tools

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The exposed tools as providers get them (no presentation)."""
        return self._st.schemas

    @property
    def artifacts_dir(self) -> Path:
        """``<workspace>/.smoke/runs/<run_id>/``, created on first use."""
        if self._artifacts is None:
            path = self.workspace.root / ".smoke" / "runs" / self.run_id
            path.mkdir(parents=True, exist_ok=True)
            self._artifacts = path
        return self._artifacts

    def warn(self, info: AgentErrorInfo | str, **data: Any) -> None:
        """Emit ``run.warning`` with an error (a plain message becomes a warning-level ``run_internal_error``)."""
        if isinstance(info, str):
            info = AgentErrorInfo.from_code("run_internal_error", info, severity="warning")
        self.emit("run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None, **data})

    def register_tool(self, tool: ToolDefinition, *, group: str | None = None, source: str = "before_run") -> None:
        """Add a tool to this agent; before the tool list is fixed it is part of this run."""
        tool = self._deps.registry.register(tool, group=group, source=source)
        if not self._st.tools_fixed:
            self._st.run_tools.append(tool)

    async def request_permission(
        self,
        *,
        kind: str,
        name: str,
        input: dict[str, Any] | None = None,
        reason: str | None = None,
        scope: str | None = None,
    ) -> bool:
        """Ask the gate (and, if it says *ask*, a person) whether ``name`` may
        go ahead. Returns True when allowed. Used for MCP server starts."""
        req = PermissionRequest(f"{kind}:{name}", kind, name, input or {}, False, reason, scope)
        return await self._tools.request_permission(req, presentation=None)

    def add_to_task(self, blocks: list[dict[str, Any]]) -> None:
        """Attach content blocks (``{"type": "text", ...}``, images) to the
        person's task message, e.g. the text of resources the task mentions.
        Only in ``before_run``: the task is recorded (and stored) right after."""
        if self._st.tools_fixed or (self._st.messages and self._st.messages[-1].get("content") is self._content):
            raise RuntimeError("add_to_task works only in before_run, before the task is recorded")
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") not in ("text", "image"):
                raise ValueError(f"add_to_task takes text and image blocks, got {block!r:.80}")
        self._content = [*self._content, *blocks]

    def add_instructions(self, text: str) -> bool:
        """Add guidance for the rest of the run (once per text). It joins the
        transcript as a message before the next model call — never an edit of
        the system prompt, so the prompt prefix a provider caches stays valid."""
        text = text.strip()
        if not text or text in self._st.instructions:
            return False
        self._st.instructions.append(text)
        self._st.pending_instructions.append(text)
        return True

    def system_prompt(self) -> str | None:
        """The system prompt: the same for every model call of the run."""
        return self._deps.system_prompt

    def _flush_instructions(self) -> None:
        st = self._st
        if not st.pending_instructions:
            return
        texts, st.pending_instructions = st.pending_instructions, []
        self._append(user_message(
            "[Instructions added during this task — follow them from now on]\n\n" + "\n\n".join(texts)
        ))

    def abort(self) -> None:
        """Stop the run now (safe from any thread): the model stream is closed,
        running tools are cancelled, pauses end; the run ends ``interrupted``."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and not _on_loop(loop):
            loop.call_soon_threadsafe(self.abort)
            return
        self.cancelled.set()
        self._deps.pauses.cancel_all()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    # ------------------------------------------------------------ main

    def start(self) -> asyncio.Task[RunResult]:
        """Schedule the run on the running loop; the task resolves to its :class:`RunResult`."""
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.ensure_future(self._execute())
        return self._task

    async def _execute(self) -> RunResult:
        deps = self._deps
        st = self._st
        status = "failed"
        error: AgentErrorInfo | None = None
        text: str | None = None
        try:
            try:
                if starved():  # many runs starting at once: take turns with timers and I/O (_fair)
                    await take_turn()
                st.messages = deps.load_history()
                self.emit(
                    "run.started",
                    {
                        "task": self.task,
                        "provider": getattr(deps.provider, "name", None),
                        "model": getattr(deps.provider, "model", None),
                        "tools": sorted(deps.exposed_tools()),
                        "step_limit": self.options.max_steps,
                    },
                )
                await deps.hooks.observe("before_run", {"run": self}, self._hook_failed)
                # the task is recorded after before_run, so what plugins attach is part of it
                self._append({"role": "user", "content": self._content})
                self._fix_tools()
                text = await self._loop_steps()
                status = "completed"
            except RunFailed as exc:
                error = exc.info
            except Interrupted:
                status = "interrupted"
            except asyncio.CancelledError:
                status = "interrupted"
                task = asyncio.current_task()
                if task is not None and self.cancelled.is_set():
                    task.uncancel()
                else:
                    self._finish_events("interrupted", None, None)
                    raise
            except AgentError as exc:
                error = exc.info
            except Exception as exc:  # a bug: never a stack trace to people, but logged
                log.exception("smoke: internal error in run %s", self.run_id)
                error = AgentErrorInfo.from_code(
                    "run_internal_error",
                    f"internal error: {type(exc).__name__}: {exc}",
                    details={"exception": type(exc).__name__},
                )
            if error is not None and deps.redactor:
                error = error.model_copy(update={"message": deps.redactor.redact(error.message)})
            self._finish_events(status, text, error)
        finally:
            await deps.hooks.observe(
                "after_run", {"run": self, "status": status, "error": error}, self._hook_failed
            )
        output = st.output.value if st.output is not None and status == "completed" else None
        return RunResult(
            output=output,
            status=status,
            text=text,
            messages=list(st.messages),
            usage=st.usage,
            error=error,
            run_id=self.run_id,
            session_id=self.session_id,
            steps=st.step,
        )

    def _hook_failed(self, plugin: str, message: str, exc: BaseException) -> None:
        log.warning("smoke: %s (ignored: this hook fails open)", message)
        self.warn(
            AgentErrorInfo.from_code(
                "hook_failed", message, severity="warning",
                details={"plugin": plugin, "exception": type(exc).__name__},
            )
        )

    def _finish_events(self, status: str, text: str | None, error: AgentErrorInfo | None) -> None:
        st = self._st
        usage = st.usage.to_dict()
        if status == "completed":
            self._set_phase("complete")
            self.emit("run.completed", {"text": text, "usage": usage, "steps": st.step})
        elif status == "interrupted":
            self.emit("run.interrupted", {"reason": "aborted", "usage": usage, "steps": st.step})
        else:
            assert error is not None
            self.emit("run.failed", {"error": error.to_dict(), "usage": usage, "steps": st.step})

    def _fix_tools(self) -> None:
        st = self._st
        exposed = self._deps.exposed_tools()
        for tool in st.run_tools:
            exposed.setdefault(tool.name, tool)
        if st.output is not None:
            if FINAL_RESULT in exposed:
                raise RunFailed(AgentErrorInfo.from_code(
                    "run_internal_error",
                    f"output_type needs the tool name {FINAL_RESULT!r}, but a tool of that name is registered "
                    f"({self._deps.registry.source(FINAL_RESULT) or 'this run'}); rename that tool",
                ))
            exposed[FINAL_RESULT] = st.output.tool()
        st.tools = exposed
        st.tools_fixed = True
        st.schemas = [t.provider_schema() for t in exposed.values()]

    def _append(self, message: Message) -> None:
        self._st.messages.append(message)
        self._deps.store_append(message)

    def _check_abort(self) -> None:
        run: RunHandle | None = self
        while run is not None:
            if run.cancelled.is_set():
                raise Interrupted()
            run = run.parent

    async def _loop_steps(self) -> str | None:
        deps = self._deps
        st = self._st
        guards = deps.guards
        max_steps = self.options.max_steps
        emit = self.emit
        model = self._model
        compactor = deps.compactor
        # the stock compactor is asked whether it is due without a coroutine; another one is awaited as always
        stock_compactor = type(compactor).maybe_compact is Compactor.maybe_compact
        cancelled = self.cancelled
        top_level = self.parent is None  # a subagent also stops when a run above it is aborted
        while True:
            if top_level:
                if cancelled.is_set():
                    raise Interrupted()
            else:
                self._check_abort()
            if starved():  # many runs on one loop: take turns with timers and I/O (_fair)
                await take_turn()
                self._check_abort()
            if st.step >= max_steps:
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "run_max_steps",
                        f"the run reached max_steps={max_steps} without finishing",
                        details={"max_steps": max_steps},
                    )
                )
            st.step += 1
            step = st.step
            emit("step.started", {"step": step})
            if (not stock_compactor or compactor.due(self) is not None) and await compactor.maybe_compact(
                self, model.summarise
            ):
                # instructions summarised away are given again after the summary
                kept = str(st.messages)
                st.pending_instructions = [t for t in st.instructions if t not in kept]
            if st.pending_instructions:
                self._flush_instructions()
            request = model.unhooked_request() or await model.build_request(step)
            try:
                reply, finish_reason = await model.call(request, step)
            except ToolCallRejected as rejected:
                st.rejected_calls += 1
                limit = guards.repeated_tool_error
                if limit and st.rejected_calls > limit:
                    raise RunFailed(
                        AgentErrorInfo.from_code(
                            "run_repeated_error",
                            f"the provider rejected the model's tool calls {st.rejected_calls} times in a row; "
                            f"last: {rejected.info.message}",
                            details={"cause": rejected.info.to_dict(), "count": st.rejected_calls},
                        )
                    ) from None
                self.emit("run.warning", {"error": rejected.info.to_dict(), "attempt": None, "retry_in_ms": None})
                self._append(user_message(rejected.feedback))
                emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": "tool_call_rejected"})
                continue
            st.rejected_calls = 0

            calls: list[dict[str, Any]] = []
            has_text = False
            for b in reply["content"]:
                kind = b["type"]
                if kind == "tool_call":
                    calls.append(b)
                elif kind == "text" and not has_text and b["text"].strip():
                    has_text = True
            if not calls and not has_text:
                st.empty_replies += 1
                limit = guards.empty_responses
                if limit and st.empty_replies >= limit:
                    raise RunFailed(
                        AgentErrorInfo.from_code(
                            "run_empty_responses", f"the model returned {st.empty_replies} empty replies in a row"
                        )
                    )
                self.warn(
                    AgentErrorInfo.from_code(
                        "provider_error", "the model returned an empty reply; asking it to continue",
                        severity="warning",
                    )
                )
                self._append(
                    user_message(
                        "Your last reply was empty. Continue the task: call a tool, or answer in text "
                        "(call finish_task when you are done)."
                    )
                )
                emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": finish_reason})
                continue
            st.empty_replies = 0
            self._append(reply)
            if not calls:
                emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": finish_reason})
                if st.output is None:
                    return "".join(b["text"] for b in reply["content"] if b["type"] == "text")
                # a typed run ends only through final_result
                stop = st.output.failed("the model answered in text instead of calling final_result")
                if stop is not None:
                    raise RunFailed(stop)
                self._append(user_message(
                    f"Give your final answer by calling the {FINAL_RESULT} tool (the result must match its schema), "
                    f"not as text."
                ))
                continue

            if len(calls) == 1:
                results = [await self._tools.run_call(calls[0])]
            else:
                results = await self._tools.run_calls(calls)
            self._append({"role": "tool", "content": results})
            emit("step.ended", {"step": step, "tool_calls": len(calls), "finish_reason": finish_reason})
            if st.stop is not None:
                raise RunFailed(st.stop)
            if st.finish_summary is not None:
                return st.finish_summary
            if guards.hard_stop and st.failing_commands >= guards.hard_stop:
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "run_hard_stop",
                        f"{st.failing_commands} commands failed in a row with no successful edit between",
                        details={"failing_commands": st.failing_commands},
                    )
                )

    # ------------------------------------------------------------ tool context

    def _tool_context(self, call_id: str, name: str, *, grants: frozenset[str] = frozenset()) -> ToolContext:
        return ToolContext(
            workspace=self.workspace,
            run_id=self.run_id,
            session_id=self.session_id,
            user_id=self.user_id,
            tool_call_id=call_id,
            tool_name=name,
            cancelled=self.cancelled,
            emit=self._emit_threadsafe,
            ask_user=self._ask_user,
            add_instructions=self.add_instructions,
            finish=self._set_finish,
            artifacts_dir=lambda: self.artifacts_dir,
            options=self.options,
            state=self._st.scratch,
            subagent=self._run_subagent,
            grants=grants,
        )

    async def _run_subagent(
        self,
        parent_tool_call_id: str,
        prompt: str,
        *,
        system_prompt: str | None = None,
        tools: list[str] | None = None,
        max_steps: int | None = None,
        output_type: Any = None,
        model: str | None = None,
    ) -> RunResult:
        """A child run with a fresh context under this run's policy (see
        :meth:`ToolContext.run_subagent`)."""
        deps = self._deps
        limit = deps.guards.subagent_depth
        if not limit or self.depth + 1 > limit:
            raise ToolError(
                f"a subagent cannot start another one here: subagents nest at most {limit} deep "
                f"(Guards.subagent_depth); do this part yourself",
            )
        available = {n: t for n, t in self._st.tools.items() if n != FINAL_RESULT}
        if tools is not None:
            unknown = [n for n in tools if n not in available]
            if unknown:
                raise ToolError(
                    f"the subagent asks for tools this run does not have: {', '.join(unknown)}; "
                    f"available: {', '.join(sorted(available))}",
                    code="tool_invalid_input",
                )
            available = {n: available[n] for n in tools}
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ToolError(f"max_steps must be a positive whole number, got {max_steps!r}", code="tool_invalid_input")
        provider = deps.provider
        if model is not None and model != getattr(provider, "model", None):
            with_model = getattr(provider, "with_model", None)
            if with_model is None:
                raise ToolError(
                    f"the provider {getattr(provider, 'name', '?')} cannot switch models for a subagent; "
                    f"leave model out (the subagent uses {getattr(provider, 'model', 'the same model')})",
                )
            provider = with_model(model)
        options = dataclasses.replace(self.options, max_steps=max_steps or self.options.max_steps)
        child_deps = dataclasses.replace(
            deps,
            provider=provider,
            options=options,
            exposed_tools=lambda: dict(available),
            load_history=list,
            store_append=_discard,
            compactor=type(deps.compactor)(context_window=deps.compactor.context_window),
            system_prompt=deps.system_prompt if system_prompt is None else system_prompt,
        )
        output = OutputSpec(output_type) if output_type is not None else None
        child = RunHandle(self.agent, prompt, child_deps, output=output, parent=self,
                          parent_tool_call_id=parent_tool_call_id)
        child._loop = self._loop
        result = await child._execute()
        self._st.usage.add(result.usage)  # the parent's totals include what its subagents spent
        if self._listening("usage.updated"):
            self.emit("usage.updated", {"usage": self._st.usage.to_dict(), "step_usage": result.usage.to_dict()})
        return result

    def _emit_threadsafe(self, type: str, data: dict[str, Any]) -> None:
        redactor = self._deps.redactor
        if redactor and type == "tool.output":
            data = redactor.redact_obj(data)
        loop = self._loop
        if loop is not None and not _on_loop(loop):
            loop.call_soon_threadsafe(self.emit, type, data)
        else:
            self.emit(type, data)

    def _set_finish(self, summary: str) -> None:
        self._st.finish_summary = summary

    def _set_phase(self, phase: str) -> None:
        st = self._st
        if phase != st.phase:
            previous = st.phase
            st.phase = phase
            self.emit("phase.changed", {"phase": phase, "previous": previous})

    async def _ask_user(
        self, call_id: str, question: str, *, options: list[str] | None = None, multiple: bool = False
    ) -> str:
        self.emit(
            "ask_user.required",
            {"tool_call_id": call_id, "question": question, "options": options, "multiple": multiple},
        )
        answer = await self._deps.pauses.wait(call_id)
        self.emit("ask_user.response", {"tool_call_id": call_id, "text": answer})
        return answer


#: how a subagent's events reach its parent's listeners: lifecycle events are
#: renamed (a subagent's run.completed is not the run's), bookkeeping of its
#: own loop stays inside, the rest is forwarded; all carry parent_tool_call_id.
_SUBAGENT_RENAMED = {
    "run.started": "subagent.started", "run.completed": "subagent.completed",
    "run.failed": "subagent.failed", "run.interrupted": "subagent.interrupted",
}
_SUBAGENT_DROPPED = frozenset({
    "step.started", "step.ended", "phase.changed", "usage.updated", "compaction.started", "compaction.completed",
})


def _subagent_emitter(
    bus: EventBus, run_id: str, session_id: str | None, parent_tool_call_id: str | None
) -> tuple[Callable[[str, dict[str, Any]], None], Callable[[str], bool]]:
    emit = bus.emitter(run_id, session_id)

    def forward(type: str, data: dict[str, Any]) -> None:
        if type in _SUBAGENT_DROPPED:
            return
        emit(_SUBAGENT_RENAMED.get(type, type), {**data, "parent_tool_call_id": parent_tool_call_id})

    def listening(type: str) -> bool:
        return type not in _SUBAGENT_DROPPED and bus.listening(_SUBAGENT_RENAMED.get(type, type))

    return forward, listening


def _discard(message: Message) -> None:
    pass


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
