"""The run as hooks and plugins see it (:class:`RunHandle`): its plugin API
(``warn``, ``register_tool``, ``request_permission``, ``add_to_task``,
``add_instructions``), its start and end (``run.started`` → ``before_run`` →
the step loop → the terminal event → ``after_run``) and the tool context
each call gets.

The loop itself is :class:`~smoke_core.run.steps.StepLoop`, subagents are
:class:`~smoke_core.run.subagents.SubagentRunner`, the model call and the tool
pipeline are :class:`~smoke_core.run.model_caller.ModelCaller` and
:class:`~smoke_core.run.tool_executor.ToolExecutor`; what a run needs from
its agent arrives as one :class:`~smoke_core.run.state.RunDeps`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..base.errors import AgentError, AgentErrorInfo
from ..base.forms import FormError, check_form
from ..base.messages import Message
from ..base.prompts import tailor_system_prompt
from ..base.smoke_dir import ensure_smoke_dir
from ..policy.rules import PermissionRequest
from ..tools.context import ToolContext
from ..tools.definitions import ToolDefinition
from ..tools.workspace import Workspace
from ..wire.types import Usage
from .fair import starved, take_turn
from .model_caller import ModelCaller
from .output import FINAL_RESULT, OutputSpec
from .run_hooks import prompt_context, session_context
from .state import Interrupted, RunDeps, RunFailed, RunResult, RunState
from .steps import StepLoop
from .subagents import SubagentRunner, subagent_emitter
from .tool_executor import ToolExecutor

log = logging.getLogger("smoke")


class RunHandle(StepLoop, SubagentRunner):
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
        #: a subagent's definition name (``ctx.run_subagent(name=...)``: the ``task`` tool's agent type); None otherwise
        self.agent_name: str | None = None
        self._listening: Callable[[str], bool]
        if parent is None:
            self.emit = deps.bus.emitter(self.run_id, self.session_id)
            self._listening = deps.bus.listening
        else:
            self.emit, self._listening = subagent_emitter(deps.bus, self.run_id, self.session_id,
                                                           parent_tool_call_id)
        self._model = ModelCaller(
            provider=deps.provider, retry=deps.retry, guards=deps.guards, hooks=deps.hooks, emit=self.emit,
            listening=self._listening, state=self._st, model_settings=deps.model_settings, user_id=self.user_id,
            system_prompt=self.system_prompt, base_system=deps.system_prompt, check_abort=self._check_abort, hook_run=self,
            call_id_prefix="" if parent_tool_call_id is None else f"{parent_tool_call_id}.",
            on_hook_error=self._hook_failed, redactor=deps.redactor,
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
            path = ensure_smoke_dir(self.workspace.root) / "runs" / self.run_id
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
        person: bool = False,
    ) -> bool:
        """Ask the gate (and, if it says *ask*, a person) whether ``name`` may
        go ahead. Returns True when allowed. Used for MCP server starts.

        ``person=True``: only a person's answer allows it — what the gate would
        allow on its own (``auto_approve``, ``permission="allow-all"``, "allow
        for this run") is asked instead; a deny still denies."""
        req = PermissionRequest(f"{kind}:{name}", kind, name, input or {}, False, reason, scope)
        return await self._tools.request_permission(req, presentation=None, person=person)

    async def sample(self, messages: list[Message], *, system: str | None = None,
                     settings: dict[str, Any] | None = None) -> tuple[Message, str | None]:
        """One call of this run's model outside its conversation (what an MCP
        server's ``sampling/createMessage`` asks for): ``before_model_call``
        sees it (and may rewrite or block it), it is retried like any model
        call, its usage and cost are the run's, and ``after_model_call``
        observes it; its text is not streamed as the run's answer. No tools.
        Returns the assistant message and the finish reason; raises
        :class:`~smoke_core.AgentError` when it is blocked or fails."""
        try:
            return await self._model.sample(messages, system=system, settings=settings or {}, step=self._st.step)
        except RunFailed as exc:
            raise AgentError(exc.info) from None

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
        """The system prompt: the same for every model call of the run (the
        default one names only the tools the run exposes)."""
        st = self._st
        return st.system if st.tools_fixed else self._deps.system_prompt

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
                if starved():  # many runs starting at once: take turns with timers and I/O (run.fair)
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
                if self.parent is None:
                    await self._session_and_prompt_hooks()
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
            if text and deps.redactor:  # finish_task's summary is the model's text too
                text = deps.redactor.redact(text)
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
            usage_by_model=dict(st.scratch.get("usage_by_model") or {}),
        )

    async def _session_and_prompt_hooks(self) -> None:
        """``session_start`` (the agent's first run) and ``before_prompt``: their
        context joins the task message; a blocked prompt fails the run unrecorded."""
        hooks = self._deps.hooks
        texts: list[str] = []
        source = self._deps.start_session(bool(self._st.messages))
        if source is not None:
            texts += await session_context(hooks, self, source, self._hook_failed)
        texts += await prompt_context(hooks, self, self.task)
        if texts:
            self._content = [*self._content, *({"type": "text", "text": t} for t in texts)]

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
        if self.parent is None and self._deps.gate.mode == "plan":  # plan mode: the way out, and how to take it
            from .plan import PLAN_INSTRUCTIONS, PLAN_TOOL, plan_tool

            exposed.setdefault(PLAN_TOOL, plan_tool(self))
            self.add_instructions(PLAN_INSTRUCTIONS)
        if st.output is not None:
            if FINAL_RESULT in exposed:
                raise RunFailed(AgentErrorInfo.from_code(
                    "run_internal_error",
                    f"output_type needs the tool name {FINAL_RESULT!r}, but a tool of that name is registered "
                    f"({self._deps.registry.source(FINAL_RESULT) or 'this run'}); rename that tool",
                ))
            exposed[FINAL_RESULT] = st.output.tool()
        st.tools = exposed
        st.system = tailor_system_prompt(self._deps.system_prompt, exposed)
        st.tools_fixed = True
        st.schemas = [t.provider_schema() for t in exposed.values()]

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
        self, call_id: str, question: str, *, options: list[str] | None = None, multiple: bool = False,
        form: dict[str, Any] | None = None,
    ) -> Any:
        pauses = self._deps.pauses
        if form is not None and not self._listening("ask_user.required"):
            return None  # nobody listens for questions, so nobody can fill the form in: declined
        if form is not None:
            pauses.forms[call_id] = form  # before the event: a listener may answer (respond_form) at once
        try:
            data: dict[str, Any] = {"tool_call_id": call_id, "question": question, "options": options,
                                    "multiple": multiple}
            if form is not None:
                data["form"] = form
            self.emit("ask_user.required", data)
            answer = await pauses.wait(call_id)
        finally:
            pauses.forms.pop(call_id, None)
        if form is None:
            self.emit("ask_user.response", {"tool_call_id": call_id, "text": answer})
            return answer
        values, problem = form_answer(form, answer)
        if problem:
            self.warn(AgentErrorInfo.from_code(
                "tool_invalid_input", f"the answer to the form {question[:80]!r} was not used: {problem}",
                severity="warning", details={"tool_call_id": call_id},
            ))
        self.emit("ask_user.response", {"tool_call_id": call_id, "text": "" if values is None else json.dumps(values),
                                        "action": "decline" if values is None else "accept"})
        return values

    async def ask_user(self, question: str, *, options: list[str] | None = None, multiple: bool = False,
                       form: dict[str, Any] | None = None) -> Any:
        """Ask the person from a plugin, outside any tool call (e.g. an MCP
        server asking for input while it starts): the same pause as the
        ``ask_user`` tool (``ask_user.required`` with a fresh ``tool_call_id``,
        answered with ``agent.respond`` or, for a ``form``, ``agent.respond_form``).
        Returns the text, or for a form the checked values (defaults applied)
        or None when declined."""
        call_id = "ask_" + uuid.uuid4().hex[:12]
        if form is not None:
            return await self._ask_user(call_id, question, form=form)
        return await self._ask_user(call_id, question, options=options, multiple=multiple)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def form_answer(form: dict[str, Any], answer: str) -> tuple[dict[str, Any] | None, str | None]:
    """The values of a form's answer (``agent.respond_form`` sends JSON;
    anything that is not a JSON object is a decline), and why an answer that
    does not fit the form was not used."""
    try:
        data = json.loads(answer) if answer.strip().startswith("{") else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, None
    if "action" in data:
        if data.get("action") != "accept":
            return None, None
        data = data.get("content") or {}
    try:
        return check_form(form, data), None
    except FormError as exc:
        return None, str(exc)
