"""One run of an agent: the loop of DESIGN §4.

A step: abort check → ``step.started`` → compaction if needed → exposed tools
→ ``before_model_call`` → provider call (streamed, with retries) →
``after_model_call`` → for each tool call: validate → ``before_tool_call`` →
permission gate → execute → ``after_tool_call`` → ``step.ended``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import random
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .context import ToolContext
from .errors import AgentError, AgentErrorInfo, ToolError
from .events import Event
from .messages import Message, user_message
from .permissions import PermissionRequest
from .plugins import call_impl
from .providers import (
    Finished,
    ModelRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)
from .tools import ToolDefinition, ToolResult

if TYPE_CHECKING:
    from .agent import Agent

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


class _RunFailed(Exception):
    def __init__(self, info: AgentErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


class _Interrupted(Exception):
    pass


class RunHandle:
    """The run as hooks and plugins see it.

    Public attributes: ``run_id``, ``session_id``, ``user_id``, ``task``,
    ``workspace``, ``options``, ``agent``, ``step``, ``phase``, ``usage``,
    ``state`` (a dict plugins may use for run-scoped data), ``cancelled``
    (an ``asyncio.Event``). Methods for ``before_run``:
    :meth:`request_permission`, :meth:`warn`, :meth:`register_tool`.
    """

    def __init__(self, agent: Agent, task: str) -> None:
        self.agent = agent
        self.task = task
        self.run_id = "run_" + uuid.uuid4().hex[:12]
        self.session_id = agent.session_id
        self.user_id = agent.options.user_id
        self.workspace = agent.workspace
        self.options = agent.options
        self.step = 0
        self.phase = "understand"
        self.usage = Usage()
        self.state: dict[str, Any] = {}
        self.cancelled = asyncio.Event()
        self.messages: list[Message] = []
        self.tools: dict[str, ToolDefinition] = {}
        self._instructions: list[str] = []
        self._finish_summary: str | None = None
        self._artifacts: Path | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._run_tools: list[ToolDefinition] = []
        self._tools_fixed = False
        self._edited = False
        self._failing_commands = 0
        self._empty_replies = 0
        self._rand = random.random
        self._compaction_state: dict[str, Any] = {"list": None, "counted": 0, "chars": 0, "tools": None}
        self._impl_cache: dict[str, list[Any]] = {}
        self._presentations: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------ plugin API

    @property
    def artifacts_dir(self) -> Path:
        """``<workspace>/.smoke/runs/<run_id>/``, created on first use."""
        if self._artifacts is None:
            path = self.workspace.root / ".smoke" / "runs" / self.run_id
            path.mkdir(parents=True, exist_ok=True)
            self._artifacts = path
        return self._artifacts

    def emit(self, type: str, data: dict[str, Any]) -> None:
        agent = self.agent
        if agent._any or agent._listeners.get(type):  # no Event object when nobody listens
            agent._emit(Event(type, data, run_id=self.run_id, session_id=self.session_id))

    def _listening(self, type: str) -> bool:
        agent = self.agent
        return bool(agent._any or agent._listeners.get(type))

    def _impls(self, hook: str) -> list[Any]:
        # The plugin set cannot change during a run; resolve each hook's order once.
        impls = self._impl_cache.get(hook)
        if impls is None:
            impls = self._impl_cache[hook] = self.agent._pm.impls(hook)
        return impls

    def warn(self, info: AgentErrorInfo | str, **data: Any) -> None:
        """Emit ``run.warning`` with an error (or a plain message as ``hook_failed``-free info)."""
        if isinstance(info, str):
            info = AgentErrorInfo.from_code("run_internal_error", info, severity="warning")
        self.emit("run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None, **data})

    def register_tool(self, tool: ToolDefinition, *, group: str | None = None, source: str = "before_run") -> None:
        """Add a tool to this agent; before the tool list is fixed it is part of this run."""
        tool = self.agent._registry.register(tool, group=group, source=source)
        if not self._tools_fixed:
            self._run_tools.append(tool)

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
        call_id = f"{kind}:{name}"
        req = PermissionRequest(call_id, kind, name, input or {}, False, reason, scope)
        return await self._permission(req, presentation=None)

    def add_instructions(self, text: str) -> bool:
        text = text.strip()
        if not text or text in self._instructions:
            return False
        self._instructions.append(text)
        return True

    # ------------------------------------------------------------ main

    async def execute(self) -> RunResult:
        agent = self.agent
        status = "failed"
        error: AgentErrorInfo | None = None
        text: str | None = None
        try:
            try:
                history = agent._load_history()
                self.messages = history
                self._append(user_message(self.task))
                self.emit(
                    "run.started",
                    {
                        "task": self.task,
                        "provider": getattr(agent.provider, "name", None),
                        "model": getattr(agent.provider, "model", None),
                        "tools": sorted(agent._exposed_tools()),
                        "step_limit": agent.options.max_steps,
                    },
                )
                await self._call_observers("before_run", {"run": self}, phase="before_run")
                self._fix_tools()
                text = await self._loop()
                status = "completed"
            except _RunFailed as exc:
                error = exc.info
            except _Interrupted:
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
            self._finish_events(status, text, error)
        finally:
            await self._call_observers(
                "after_run", {"run": self, "status": status, "error": error}, phase="after_run"
            )
            agent._run_ended(self)
        return RunResult(
            status=status,
            text=text,
            messages=list(self.messages),
            usage=self.usage,
            error=error,
            run_id=self.run_id,
            session_id=self.session_id,
            steps=self.step,
        )

    def _finish_events(self, status: str, text: str | None, error: AgentErrorInfo | None) -> None:
        usage = self.usage.to_dict()
        if status == "completed":
            self._set_phase("complete")
            self.emit("run.completed", {"text": text, "usage": usage, "steps": self.step})
        elif status == "interrupted":
            self.emit("run.interrupted", {"reason": "aborted", "usage": usage, "steps": self.step})
        else:
            assert error is not None
            self.emit("run.failed", {"error": error.to_dict(), "usage": usage, "steps": self.step})

    def _fix_tools(self) -> None:
        agent = self.agent
        exposed = agent._exposed_tools()
        for tool in self._run_tools:
            exposed.setdefault(tool.name, tool)
        self.tools = exposed
        self._tools_fixed = True
        self._schemas = [t.provider_schema() for t in exposed.values()]

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self.agent._store_append(message)

    def _check_abort(self) -> None:
        if self.cancelled.is_set():
            raise _Interrupted()

    async def _loop(self) -> str | None:
        agent = self.agent
        guards = agent.guards
        max_steps = agent.options.max_steps
        while True:
            self._check_abort()
            if self.step >= max_steps:
                raise _RunFailed(
                    AgentErrorInfo.from_code(
                        "run_max_steps",
                        f"the run reached max_steps={max_steps} without finishing",
                        details={"max_steps": max_steps},
                    )
                )
            self.step += 1
            step = self.step
            self.emit("step.started", {"step": step})
            await agent._compactor.maybe_compact(self)
            request = await self._before_model_call(step)
            reply, finish_reason = await self._call_model(request, step)

            calls = [b for b in reply["content"] if b["type"] == "tool_call"]
            has_text = any(b["type"] == "text" and b["text"].strip() for b in reply["content"])
            if not calls and not has_text:
                self._empty_replies += 1
                limit = guards.empty_responses
                if limit and self._empty_replies >= limit:
                    raise _RunFailed(
                        AgentErrorInfo.from_code(
                            "run_empty_responses",
                            f"the model returned {self._empty_replies} empty replies in a row",
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
                self.emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": finish_reason})
                continue
            self._empty_replies = 0
            self._append(reply)
            if not calls:
                self.emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": finish_reason})
                return "".join(b["text"] for b in reply["content"] if b["type"] == "text")

            results = await self._run_tool_calls(calls)
            self._append({"role": "tool", "content": results})
            self.emit("step.ended", {"step": step, "tool_calls": len(calls), "finish_reason": finish_reason})
            if self._finish_summary is not None:
                return self._finish_summary
            if guards.hard_stop and self._failing_commands >= guards.hard_stop:
                raise _RunFailed(
                    AgentErrorInfo.from_code(
                        "run_hard_stop",
                        f"{self._failing_commands} commands failed in a row with no successful edit between",
                        details={"failing_commands": self._failing_commands},
                    )
                )

    # ------------------------------------------------------------ model call

    def system_prompt(self) -> str | None:
        base = self.agent.system_prompt
        if not self._instructions:
            return base
        return "\n\n".join([base or "", *self._instructions]).strip()

    async def _before_model_call(self, step: int) -> ModelRequest:
        agent = self.agent
        messages = list(self.messages)
        tools = list(self._schemas)
        system = self.system_prompt()
        model = getattr(agent.provider, "model", "") or ""
        impls = self._impls("before_model_call")
        if impls:
            for impl in impls:
                kwargs = {
                    "messages": messages, "tools": tools, "system": system, "model": model,
                    "step": step, "run": self,
                }
                label = agent._pm.plugin_label(impl)
                try:
                    res = call_impl(impl, kwargs)
                    if res is not None and inspect.isawaitable(res):
                        res = await res
                except Exception as exc:
                    raise _RunFailed(
                        AgentErrorInfo.from_code(
                            "hook_blocked",
                            f"before_model_call in {label} raised {type(exc).__name__}: {exc}; the run is stopped "
                            f"because model-call hooks fail closed",
                            details={"plugin": label, "exception": type(exc).__name__},
                        )
                    ) from None
                if not res:
                    continue
                if not isinstance(res, dict):
                    raise _RunFailed(
                        AgentErrorInfo.from_code(
                            "hook_failed",
                            f"before_model_call in {label} returned {type(res).__name__}; return None or a dict",
                            details={"plugin": label},
                        )
                    )
                if res.get("block"):
                    reason = res.get("reason") or "no reason given"
                    raise _RunFailed(
                        AgentErrorInfo.from_code(
                            "hook_blocked", f"model call blocked by {label}: {reason}",
                            details={"plugin": label, "reason": reason},
                        )
                    )
                if "messages" in res:
                    messages = list(res["messages"])
                if "tools" in res:
                    tools = list(res["tools"])
                if "system" in res:
                    system = res["system"]
        return ModelRequest(
            model=model,
            messages=messages,
            tools=tools,
            system=system,
            settings=dict(agent.model_settings),
            user_id=self.user_id,
        )

    async def _call_model(self, request: ModelRequest, step: int) -> tuple[Message, str | None]:
        agent = self.agent
        policy = agent.retry
        attempt = 0
        same = 0
        last_key: tuple[str, str] | None = None
        while True:
            attempt += 1
            self._check_abort()
            t0 = time.perf_counter()
            streamed: list[str] = []
            try:
                reply, usage, finish = await self._consume(request, streamed)
            except asyncio.CancelledError:
                raise
            except AgentError as exc:
                info = exc.info
            except Exception as exc:
                info = AgentErrorInfo.from_code(
                    "provider_error",
                    f"the provider raised {type(exc).__name__}: {exc}",
                    details={"exception": type(exc).__name__},
                )
            else:
                self.usage.add(usage)
                await self._after_model_call(reply, usage, t0, None, step)
                if self._listening("usage.updated"):
                    self.emit("usage.updated", {"usage": self.usage.to_dict(), "step_usage": usage.to_dict()})
                return reply, finish
            await self._after_model_call(None, Usage(), t0, info, step)
            key = (info.code, info.message)
            same = same + 1 if key == last_key else 1
            last_key = key
            if not info.retryable or info.severity == "fatal":
                raise _RunFailed(info)
            limit = agent.guards.repeated_error
            if limit and same >= limit:
                raise _RunFailed(
                    AgentErrorInfo.from_code(
                        "run_repeated_error",
                        f"{info.code} {same} times in a row: {info.message}",
                        hint=info.hint,
                        details={"cause": info.to_dict(), "count": same},
                    )
                )
            if attempt > policy.max_retries:
                raise _RunFailed(info)
            delay = policy.delay(attempt, info, self._rand)
            if streamed:
                # Text already reached listeners; tell them to drop it before the replay.
                self.emit("text.discarded", {"reason": info.code, "text": "".join(streamed)})
            self.emit(
                "run.warning",
                {"error": info.to_dict(), "attempt": attempt, "retry_in_ms": round(delay * 1000)},
            )
            await asyncio.sleep(delay)

    async def _consume(self, request: ModelRequest, streamed: list[str]) -> tuple[Message, Usage, str | None]:
        provider = self.agent.provider
        stream = provider.stream(request)
        text_parts: list[str] = []
        thought_parts: list[str] = []
        signature: str | None = None
        calls: list[ToolCallRequest] = []
        usage = Usage()
        finish: str | None = None
        emit = self.emit
        try:
            async for ev in stream:
                if type(ev) is TextDelta:
                    if ev.text:
                        text_parts.append(ev.text)
                        streamed.append(ev.text)
                        emit("text.delta", {"text": ev.text})
                elif type(ev) is ToolCallRequest:
                    calls.append(ev)
                elif type(ev) is ThoughtDelta:
                    if ev.text:
                        thought_parts.append(ev.text)
                        emit("text.thought", {"text": ev.text})
                    if ev.signature:
                        signature = ev.signature
                elif type(ev) is UsageReport:
                    usage.add(ev.usage)
                elif type(ev) is Finished:
                    finish = ev.reason
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        content: list[dict[str, Any]] = []
        if thought_parts or signature:
            block: dict[str, Any] = {"type": "thinking", "text": "".join(thought_parts)}
            if signature:
                block["signature"] = signature
            content.append(block)
        if text_parts:
            text = "".join(text_parts)
            content.append({"type": "text", "text": text})
            emit("text.end", {"text": text})
        for i, call in enumerate(calls):
            args: Any = call.arguments
            block = {"type": "tool_call", "id": call.id or f"call_{self.step}_{i}", "name": call.name}
            if isinstance(args, str):
                stripped = args.strip()
                if not stripped:
                    args = {}
                else:
                    try:
                        args = json.loads(stripped)
                    except ValueError:
                        block["raw_arguments"] = args
                        args = {}
            block["input"] = args
            content.append(block)
        return {"role": "assistant", "content": content}, usage, finish

    async def _after_model_call(
        self, reply: Message | None, usage: Usage, t0: float, error: AgentErrorInfo | None, step: int
    ) -> None:
        if not self._impls("after_model_call"):
            return
        kwargs = {
            "response": reply,
            "usage": usage.to_dict(),
            "duration_ms": (time.perf_counter() - t0) * 1000,
            "error": error,
            "step": step,
            "run": self,
        }
        await self._call_observers("after_model_call", kwargs)

    async def _call_observers(self, hook: str, kwargs: dict[str, Any], *, phase: str | None = None) -> None:
        """Call a fail-open hook: every implementation runs; a raise is logged
        (and, for before_run, reported as ``run.warning``)."""
        pm = self.agent._pm
        for impl in self._impls(hook):
            try:
                res = call_impl(impl, kwargs)
                if res is not None and inspect.isawaitable(res):
                    await res
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                label = pm.plugin_label(impl)
                log.warning("smoke: %s in %s raised %s: %s (ignored)", hook, label, type(exc).__name__, exc)
                if phase == "before_run":
                    self.warn(
                        AgentErrorInfo.from_code(
                            "hook_failed", f"{hook} in {label} raised {type(exc).__name__}: {exc}",
                            severity="warning", details={"plugin": label},
                        )
                    )

    # ------------------------------------------------------------ tool calls

    async def _run_tool_calls(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[dict[str, Any] | None] = [None] * len(calls)
        i = 0
        while i < len(calls):
            tool = self.tools.get(calls[i]["name"])
            if tool is not None and tool.read_only:
                j = i
                while j < len(calls) and (t := self.tools.get(calls[j]["name"])) is not None and t.read_only:
                    j += 1
                if j - i > 1:
                    batch = await asyncio.gather(*(self._run_tool_call(c) for c in calls[i:j]))
                    results[i:j] = batch
                    i = j
                    continue
            results[i] = await self._run_tool_call(calls[i])
            i += 1
        return [r for r in results if r is not None]

    async def _run_tool_call(self, call: dict[str, Any]) -> dict[str, Any]:
        name = call["name"]
        call_id = call["id"]
        tool = self.tools.get(name)
        presentation = self._presentation(tool, name)
        tool_input: dict[str, Any] = call.get("input") or {}
        t0 = time.perf_counter()
        self.emit(
            "tool.started",
            {"tool_call_id": call_id, "tool_name": name, "input": tool_input, "presentation": presentation},
        )
        blocked = False
        error: AgentErrorInfo | None = None
        result: ToolResult
        try:
            result, error, blocked, tool_input = await self._tool_pipeline(call, tool, tool_input)
        except asyncio.CancelledError:
            error = AgentErrorInfo.from_code("tool_cancelled", f"{name} was cancelled: the run was aborted")
            result = ToolResult.error(error.message)
            await self._finish_tool_call(call_id, name, tool_input, result, t0, blocked, error, presentation)
            raise
        await self._finish_tool_call(call_id, name, tool_input, result, t0, blocked, error, presentation)
        self._track(name, tool, result)
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_call_id": call_id,
            "content": result.content,
            "is_error": result.is_error,
        }
        return block

    def _presentation(self, tool: ToolDefinition | None, name: str) -> dict[str, Any]:
        p = self._presentations.get(name)
        if p is None:
            p = tool.presentation_dict() if tool is not None else {"label": name, "tone": "info"}
            self._presentations[name] = p
        return p

    async def _finish_tool_call(
        self,
        call_id: str,
        name: str,
        tool_input: dict[str, Any],
        result: ToolResult,
        t0: float,
        blocked: bool,
        error: AgentErrorInfo | None,
        presentation: dict[str, Any],
    ) -> None:
        duration_ms = (time.perf_counter() - t0) * 1000
        if self._impls("after_tool_call"):
            await self._call_observers(
                "after_tool_call",
                {
                    "tool_name": name, "input": tool_input, "tool_call_id": call_id, "result": result,
                    "duration_ms": duration_ms, "blocked": blocked, "error": error, "run": self,
                },
            )
        if result.presentation is not None:
            presentation = {**presentation, **result.presentation.model_dump(exclude_none=True)}
        self.emit(
            "tool.completed",
            {
                "tool_call_id": call_id,
                "tool_name": name,
                "is_error": result.is_error,
                "content": result.content,
                "error": error.to_dict() if error is not None else None,
                "duration_ms": round(duration_ms, 3),
                "presentation": presentation,
                **({"data": result.data} if result.data else {}),
            },
        )

    async def _tool_pipeline(
        self, call: dict[str, Any], tool: ToolDefinition | None, tool_input: dict[str, Any]
    ) -> tuple[ToolResult, AgentErrorInfo | None, bool, dict[str, Any]]:
        """Validate → before_tool_call → permission → execute. Returns
        (result, error, blocked, final input); never raises except on cancel."""
        agent = self.agent
        name = call["name"]
        call_id = call["id"]

        def fail(code: str, message: str, **details: Any) -> tuple[ToolResult, AgentErrorInfo, bool, dict[str, Any]]:
            info = AgentErrorInfo.from_code(code, message, details=details)  # type: ignore[arg-type]
            return ToolResult.error(message), info, False, tool_input

        if tool is None:
            available = ", ".join(sorted(self.tools)) or "(none)"
            reason = "was registered after this run started" if name in agent._registry else "does not exist"
            return fail("tool_not_found", f"unknown tool {name!r}: it {reason}. Available tools: {available}")
        if "raw_arguments" in call:
            raw = call["raw_arguments"]
            return fail(
                "tool_invalid_input",
                f"the arguments for {name} are not valid JSON ({_json_problem(raw)}); "
                f"send a JSON object matching the tool's schema",
                raw_arguments=raw[:2000],
            )
        problem = tool.validate_input(tool_input)
        if problem:
            return fail("tool_invalid_input", problem)

        # before_tool_call: chained, fail-closed
        for impl in self._impls("before_tool_call"):
            label = agent._pm.plugin_label(impl)
            kwargs = {"tool_name": name, "input": tool_input, "tool_call_id": call_id, "run": self}
            try:
                res = call_impl(impl, kwargs)
                if res is not None and inspect.isawaitable(res):
                    res = await res
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                message = f"call to {name} blocked: before_tool_call in {label} raised {type(exc).__name__}: {exc}"
                info = AgentErrorInfo.from_code("hook_failed", message, details={"plugin": label})
                return ToolResult.error(message), info, True, tool_input
            if not res:
                continue
            if res.get("block"):
                reason = res.get("reason") or "no reason given"
                message = f"call to {name} blocked by {label}: {reason}"
                info = AgentErrorInfo.from_code("tool_blocked", message, details={"plugin": label, "reason": reason})
                return ToolResult.error(message), info, True, tool_input
            if "input" in res:
                new_input = res["input"]
                problem = tool.validate_input(new_input)
                if problem:
                    message = f"before_tool_call in {label} rewrote the input into something invalid: {problem}"
                    info = AgentErrorInfo.from_code("hook_failed", message, details={"plugin": label})
                    return ToolResult.error(message), info, True, tool_input
                tool_input = new_input

        # permission gate
        request = PermissionRequest(
            call_id, "tool", name, tool_input, tool.read_only, None,
            scope=f"mcp:{name.split('__', 1)[0]}" if tool.group == "mcp" and "__" in name else name,
            tool_kind=tool.kind, permission_value=tool.permission_value(tool_input),
            destructive=tool.annotations.destructive_hint,
        )
        if not await self._permission(request, presentation=self._presentation(tool, name)):
            message = f"permission denied: the call to {name} was not approved"
            if request.reason:
                message += f" ({request.reason})"
            info = AgentErrorInfo.from_code("permission_denied", message)
            return ToolResult.error(message), info, False, tool_input

        # execute
        ctx = self._tool_context(call_id, name)
        try:
            if tool.blocking:
                raw_result = await asyncio.to_thread(tool.execute, tool_input, ctx)
            else:
                raw_result = tool.execute(tool_input, ctx)
            if inspect.isawaitable(raw_result):
                raw_result = await raw_result
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            info = AgentErrorInfo.from_code(exc.code, str(exc), details=exc.details)  # type: ignore[arg-type]
            return ToolResult.error(str(exc)), info, False, tool_input
        except AgentError as exc:
            return ToolResult.error(exc.info.message), exc.info, False, tool_input
        except Exception as exc:
            message = f"{name} failed: {type(exc).__name__}: {exc}"
            info = AgentErrorInfo.from_code("tool_failed", message, details={"exception": type(exc).__name__})
            return ToolResult.error(message), info, False, tool_input
        result = _coerce_result(raw_result, name)
        result = self._spill(result, call_id)
        error = None
        if result.is_error:
            error = AgentErrorInfo.from_code("tool_failed", result.text_content()[:500] or f"{name} reported an error")
        return result, error, False, tool_input

    def _tool_context(self, call_id: str, name: str) -> ToolContext:
        agent = self.agent
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
            options=agent.options,
            state=self.state,
        )

    def _emit_threadsafe(self, type: str, data: dict[str, Any]) -> None:
        loop = self.agent._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is not None and running is not loop:
            loop.call_soon_threadsafe(self.emit, type, data)
        else:
            self.emit(type, data)

    def _set_finish(self, summary: str) -> None:
        self._finish_summary = summary

    def _spill(self, result: ToolResult, call_id: str) -> ToolResult:
        limit = self.agent.max_tool_output_chars
        text_blocks = [b for b in result.content if b.get("type") == "text"]
        total = sum(len(b.get("text", "")) for b in text_blocks)
        if total <= limit:
            return result
        full = "\n".join(b["text"] for b in text_blocks)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80] or "output"
        path = self.artifacts_dir / f"{safe}.txt"
        path.write_text(full, encoding="utf-8")
        head = full[: limit // 2]
        tail = full[-limit // 4 :]
        omitted = len(full) - len(head) - len(tail)
        rel = self.workspace.relative(path)
        text = (
            f"{head}\n\n[... {omitted} characters omitted; the full output ({len(full)} characters) "
            f"is in {rel} — read it with read_file using start_line/end_line ...]\n\n{tail}"
        )
        others = [b for b in result.content if b.get("type") != "text"]
        data = dict(result.data or {})
        data["spilled_to"] = str(path)
        return result.model_copy(update={"content": [{"type": "text", "text": text}, *others], "data": data})

    def _track(self, name: str, tool: ToolDefinition | None, result: ToolResult) -> None:
        """Guards and phases, from what a tool call did (by its declared kind)."""
        if tool is None:
            return
        kind = tool.kind
        if kind in ("edit", "delete", "move"):
            if not result.is_error:
                self._edited = True
                self._failing_commands = 0
                self._set_phase("edit")
            return
        if kind == "execute":
            data = result.data or {}
            failed = result.is_error or bool(data.get("timed_out")) or data.get("exit_code") not in (None, 0)
            self._failing_commands = self._failing_commands + 1 if failed else 0
            if self._edited:
                self._set_phase("recover" if failed else "verify")
            return
        if kind == "think":
            if self.phase in ("understand", "explore"):
                self._set_phase("plan")
            return
        if self.phase == "understand" and kind in ("read", "search", "fetch"):
            self._set_phase("explore")

    def _set_phase(self, phase: str) -> None:
        if phase != self.phase:
            previous = self.phase
            self.phase = phase
            self.emit("phase.changed", {"phase": phase, "previous": previous})

    # ------------------------------------------------------------ pauses

    async def _permission(self, request: PermissionRequest, *, presentation: dict[str, Any] | None) -> bool:
        gate = self.agent._gate
        try:
            decision = await gate.decide(request)
        except Exception as exc:
            request.reason = f"the permission callable raised {type(exc).__name__}: {exc}"
            return False
        if decision == "allow":
            return True
        if decision == "deny":
            return False
        self.emit(
            "permission.required",
            {
                "tool_call_id": request.tool_call_id,
                "kind": request.kind,
                "tool_name": request.tool_name,
                "input": request.input,
                "reason": request.reason,
                "presentation": presentation,
            },
        )
        answer = await self.agent._wait_answer(request.tool_call_id, self)
        if answer == "allow_run" and request.scope:
            gate.allowed_for_run.add(request.scope)
        allowed = answer in ("allow", "allow_run")
        self.emit("permission.resolved", {"tool_call_id": request.tool_call_id, "decision": answer})
        return allowed

    async def _ask_user(
        self, call_id: str, question: str, *, options: list[str] | None = None, multiple: bool = False
    ) -> str:
        self.emit(
            "ask_user.required",
            {"tool_call_id": call_id, "question": question, "options": options, "multiple": multiple},
        )
        answer = await self.agent._wait_answer(call_id, self)
        self.emit("ask_user.response", {"tool_call_id": call_id, "text": answer})
        return answer


def _coerce_result(raw: Any, name: str) -> ToolResult:
    if isinstance(raw, ToolResult):
        return raw
    if raw is None:
        return ToolResult.text("(no output)")
    if isinstance(raw, str):
        return ToolResult.text(raw)
    if isinstance(raw, dict) and "content" in raw:
        return ToolResult.model_validate(raw)
    try:
        return ToolResult.text(json.dumps(raw, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolResult.text(str(raw))


def _json_problem(raw: str) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return str(exc)
    return "not an object"
