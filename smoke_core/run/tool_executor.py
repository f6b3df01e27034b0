"""The tool calls of a step (DESIGN §3, §4): for each call validate →
``before_tool_call`` → permission (rules, mode, a person) → execute → spill →
``after_tool_call``. Consecutive read-only calls run concurrently.

Also the run's bookkeeping that follows from tool calls: phases and the
failing-command guard, by each tool's declared ``kind``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import CoroutineType
from typing import Any

from ..base.errors import AgentError, AgentErrorInfo, ToolError
from ..base.instructions import nested_instructions
from ..hooks.runner import HookRunner
from ..policy.gate import PermissionGate
from ..policy.options import Guards
from ..policy.rules import PermissionRequest
from ..policy.secrets import Redactor
from ..tools.context import ToolContext
from ..tools.definitions import ToolDefinition, ToolRegistry, ToolResult
from ..tools.workspace import Workspace
from .call_journal import CallJournal
from .event_bus import Emit
from .output import FINAL_RESULT
from .pauses import PauseBroker
from .state import RunState
from .tool_hooks import after_tool_call_hooks, permission_prompt_hooks

Outcome = tuple[ToolResult, AgentErrorInfo | None, bool, dict[str, Any]]


class ToolExecutor:
    def __init__(
        self,
        *,
        state: RunState,
        guards: Guards,
        hooks: HookRunner,
        gate: PermissionGate,
        pauses: PauseBroker,
        emit: Emit,
        listening: Callable[[str], bool],
        registry: ToolRegistry,
        workspace: Workspace,
        redactor: Redactor,
        max_output_chars: int,
        artifacts_dir: Callable[[], Path],
        make_context: Callable[..., ToolContext],
        set_phase: Callable[[str], None],
        hook_run: Any,
        on_hook_error: Callable[[str, str, BaseException], None],
    ) -> None:
        self.state = state
        self.guards = guards
        self.hooks = hooks
        self.gate = gate
        self.pauses = pauses
        self.emit = emit
        self.listening = listening
        self.registry = registry
        self.workspace = workspace
        self.redactor = redactor
        self.max_output_chars = max_output_chars
        self.artifacts_dir = artifacts_dir
        self.make_context = make_context
        self.set_phase = set_phase
        self.hook_run = hook_run  # the RunHandle, as hooks see it
        self.on_hook_error = on_hook_error
        # a plain gate answers a read-only call that needs no rule without a PermissionRequest
        # (a subclass may decide otherwise, so it is always asked)
        self._allows_plainly = gate.allows_plainly if type(gate) is PermissionGate else None
        self._redacting = bool(redactor)  # a Redactor's secrets are fixed when it is made

    # ------------------------------------------------------------ a step's calls

    async def run_calls(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``tool_result`` blocks for ``calls``, in order."""
        if len(calls) == 1:
            return [await self.run_call(calls[0])]
        tools = self.state.tools

        def concurrent(call: dict[str, Any]) -> bool:
            tool = tools.get(call["name"])
            return tool is not None and tool.runs_concurrently(call.get("input") or {}, tools)

        results: list[dict[str, Any] | None] = [None] * len(calls)
        i = 0
        while i < len(calls):
            if concurrent(calls[i]):
                j = i
                while j < len(calls) and concurrent(calls[j]):
                    j += 1
                if j - i > 1:
                    results[i:j] = await asyncio.gather(*(self.run_call(c) for c in calls[i:j]))
                    i = j
                    continue
            results[i] = await self.run_call(calls[i])
            i += 1
        return [r for r in results if r is not None]

    async def run_call(self, call: dict[str, Any]) -> dict[str, Any]:
        name = call["name"]
        call_id = call["id"]
        state = self.state
        tool = state.tools.get(name)
        presentation = state.presentations.get(name)
        if presentation is None:
            presentation = self.presentation(tool, name)
        kind = tool.kind if tool is not None else None  # read once per call: started, permission, track
        tool_input: dict[str, Any] = call.get("input") or {}
        t0 = time.perf_counter()
        self.emit(
            "tool.started",
            {"tool_call_id": call_id, "tool_name": name, "input": tool_input, "presentation": presentation,
             "tool_kind": kind},
        )
        try:
            result, error, blocked, tool_input = await self._pipeline(call, tool, tool_input, kind)
        except asyncio.CancelledError:
            error = AgentErrorInfo.from_code("tool_cancelled", f"{name} was cancelled: the run was aborted")
            await self._finish(call_id, name, tool_input, ToolResult.error(error.message), t0, False, error, presentation)
            raise
        if result.is_error:
            result = self._repeated_failure(name, tool_input, result)
            output = state.output
            if output is not None and name == FINAL_RESULT and result.is_error:
                stop = output.failed(result.text_content())
                if stop is not None:
                    state.stop = stop
        else:  # what _repeated_failure does for a success
            state.last_failure, state.same_failures = None, 0
        result = await self._finish(call_id, name, tool_input, result, t0, blocked, error, presentation)
        if kind is not None:  # no tool, or one that declares no kind: nothing to track
            self.track(result, kind)
        return {"type": "tool_result", "tool_call_id": call_id, "content": result.content, "is_error": result.is_error}

    def presentation(self, tool: ToolDefinition | None, name: str) -> dict[str, Any]:
        cache = self.state.presentations
        p = cache.get(name)
        if p is None:
            p = tool.presentation_dict() if tool is not None else {"label": name, "tone": "info"}
            cache[name] = p
        return p

    async def _finish(
        self,
        call_id: str,
        name: str,
        tool_input: dict[str, Any],
        result: ToolResult,
        t0: float,
        blocked: bool,
        error: AgentErrorInfo | None,
        presentation: dict[str, Any],
    ) -> ToolResult:
        duration_ms = (time.perf_counter() - t0) * 1000
        if self.hooks.has("after_tool_call"):
            result = await after_tool_call_hooks(self.hooks, {
                "tool_name": name, "input": tool_input, "tool_call_id": call_id, "result": result,
                "duration_ms": duration_ms, "blocked": blocked, "error": error, "run": self.hook_run,
            }, self.on_hook_error)
        if result.presentation is not None:
            presentation = {**presentation, **result.presentation.model_dump(exclude_none=True)}
        self.emit(
            "tool.completed",
            {
                "tool_call_id": call_id, "tool_name": name, "is_error": result.is_error, "content": result.content,
                "error": error.to_dict() if error is not None else None,
                "duration_ms": round(duration_ms, 3),
                "waited_ms": round(self.pauses.waited_ms.pop(call_id, 0.0), 3),
                "presentation": presentation,
                **({"data": result.data} if result.data else {}),
            },
        )
        return result

    # ------------------------------------------------------------ one call

    async def _pipeline(
        self, call: dict[str, Any], tool: ToolDefinition | None, tool_input: dict[str, Any], kind: str | None
    ) -> Outcome:
        """Validate → before_tool_call → permission → execute. Returns
        (result, error, blocked, final input); never raises except on cancel."""
        name = call["name"]
        call_id = call["id"]

        def fail(code: str, message: str, *, blocked: bool = False, **details: Any) -> Outcome:
            info = AgentErrorInfo.from_code(code, message, details=details)  # type: ignore[arg-type]
            return ToolResult.error(message), info, blocked, tool_input

        if tool is None:
            available = ", ".join(sorted(self.state.tools)) or "(none)"
            reason = "was registered after this run started" if name in self.registry else "does not exist"
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

        hook_answer: tuple[str | None, str | None, str | None] = (None, None, None)  # decision, reason, rewriter
        if self.hooks.has("before_tool_call"):
            kwargs = {"tool_name": name, "input": tool_input, "tool_call_id": call_id, "run": self.hook_run}
            outcome = await self.hooks.chain("before_tool_call", kwargs, ("input",))
            if outcome is None:
                pass
            elif outcome.status == "block":
                return fail(
                    "tool_blocked", f"call to {name} blocked by {outcome.plugin}: {outcome.reason}", blocked=True,
                    plugin=outcome.plugin, reason=outcome.reason,
                )
            elif outcome.status == "fail":  # before-hooks fail closed
                return fail("hook_failed", f"call to {name} blocked: {outcome.reason}", blocked=True, plugin=outcome.plugin)
            else:
                if outcome.plugin is not None:  # rewritten
                    new_input = outcome.values["input"]
                    problem = tool.validate_input(new_input)
                    if problem:
                        return fail(
                            "hook_failed",
                            f"before_tool_call in {outcome.plugin} rewrote the input into something invalid: {problem}",
                            blocked=True, plugin=outcome.plugin,
                        )
                    tool_input = new_input
                hook_answer = (outcome.permission, outcome.permission_reason and
                               f"{outcome.permission_plugin}: {outcome.permission_reason}", outcome.plugin)

        read_only = tool.read_only
        permission_value = tool.permission_value(tool_input) if tool.permission_key is not None else None
        allows_plainly = self._allows_plainly
        if (allows_plainly is not None and read_only and permission_value is None and hook_answer[0] is None
                and allows_plainly(tool_input)):
            granted: frozenset[str] = frozenset()  # what gate.decide would say, without building the request
        else:
            request = PermissionRequest(
                call_id, "tool", name, tool_input, read_only, None,
                scope=f"mcp:{name.split('__', 1)[0]}" if tool.group == "mcp" and "__" in name else name,
                tool_kind=kind, permission_value=permission_value,
                destructive=tool.annotations.destructive_hint,
                hook_decision=hook_answer[0], hook_reason=hook_answer[1], rewritten_by=hook_answer[2],
            )
            refused = self.gate.input_problem(request)  # inputs that reach a shell: refused before anyone is asked
            if refused:
                return fail("tool_invalid_input", refused)
            grants: set[str] = set()
            if not await self.request_permission(request, presentation=self.presentation(tool, name), grants=grants):
                message = f"permission denied: the call to {name} was not approved"
                if request.reason:
                    message += f" ({request.reason})"
                return fail("permission_denied", message)
            granted = frozenset(grants)

        ctx = self.make_context(call_id, name, grants=granted)
        # at-most-once across crashes: a mutating call's start is committed before it executes (run.call_journal)
        journal = None if read_only else CallJournal.for_call(self.hook_run, tool)
        if journal is not None:
            await journal.started(call_id, name)
            executed = await self._execute(tool, tool_input, ctx, call_id, name)
            await journal.ended(call_id, executed[0].content, executed[0].is_error)
            return executed
        return await self._execute(tool, tool_input, ctx, call_id, name)

    async def _execute(
        self, tool: ToolDefinition, tool_input: dict[str, Any], ctx: ToolContext, call_id: str, name: str
    ) -> Outcome:
        """Execute the call, then coerce, redact and spill its result; never raises except on cancel."""
        try:
            if tool.blocking:
                raw_result = await asyncio.to_thread(tool.execute, tool_input, ctx)
            else:
                raw_result = tool.execute(tool_input, ctx)
            if type(raw_result) is CoroutineType or inspect.isawaitable(raw_result):
                raw_result = await raw_result
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            message = self.redactor.redact(str(exc))
            info = AgentErrorInfo.from_code(exc.code, message, details=exc.details)
            return ToolResult.error(message), info, False, tool_input
        except AgentError as exc:
            message = self.redactor.redact(exc.info.message)
            return ToolResult.error(message), exc.info.model_copy(update={"message": message}), False, tool_input
        except Exception as exc:
            message = self.redactor.redact(f"{name} failed: {type(exc).__name__}: {exc}")
            info = AgentErrorInfo.from_code("tool_failed", message, details={"exception": type(exc).__name__})
            return ToolResult.error(message), info, False, tool_input
        result = ToolResult.text(raw_result) if type(raw_result) is str else _coerce_result(raw_result)
        if tool.permission_key is not None and not result.is_error and tool.kind == "read":
            result = self._offer_nested_instructions(tool, tool_input, result)
        if self._redacting:
            result = _redact_result(result, self.redactor)
        result = self._spill(result, call_id)
        error = None
        if result.is_error:
            error = AgentErrorInfo.from_code("tool_failed", result.text_content()[:500] or f"{name} reported an error")
        return result, error, False, tool_input

    def _offer_nested_instructions(
        self, tool: ToolDefinition, tool_input: dict[str, Any], result: ToolResult
    ) -> ToolResult:
        value = tool.permission_value(tool_input)
        if not value:
            return result
        root = self.workspace.root
        found = nested_instructions(root, root / value, self.state.offered_instructions)
        if not found:
            return result
        blocks = [
            {"type": "text", "text": f"[Instructions from {rel} — they apply to the files under "
                                     f"{rel.rsplit('/', 1)[0]}/]\n{text}"}
            for rel, text in found
        ]
        return result.model_copy(update={"content": [*result.content, *blocks]})

    # ------------------------------------------------------------ permission

    async def request_permission(
        self, request: PermissionRequest, *, presentation: dict[str, Any] | None, grants: set[str] | None = None,
        person: bool = False,
    ) -> bool:
        """Ask the gate and, when it says *ask*, a person (``permission.required``).
        What the person grants beyond the settings (``allow_network``) is added to ``grants``.
        ``person``: an *allow* of the gate asks a person instead (only their answer allows)."""
        gate = self.gate
        try:
            decision = await gate.decide(request)
        except Exception as exc:
            request.reason = f"the permission callable raised {type(exc).__name__}: {exc}"
            return False
        if person and decision == "allow":
            decision = "ask"
        if decision == "allow":
            return True
        if decision == "deny":
            return False
        if request.kind == "tool" and self.hooks.has("before_permission_prompt"):
            by_hook = await permission_prompt_hooks(self.hooks, gate, request, self.hook_run, self.on_hook_error)
            if by_hook is not None:
                return by_hook
        if request.rewritten_by:
            request.reason = "; ".join(filter(None, [request.reason, f"the input was rewritten by {request.rewritten_by}"]))
        rules = gate.rules_for(request) if request.kind == "tool" else []
        rules_user = gate.rules_for(request, absolute=True) if request.kind == "tool" else []
        self.emit(
            "permission.required",
            {
                "tool_call_id": request.tool_call_id,
                "kind": request.kind,
                "tool_name": request.tool_name,
                "input": request.input,
                "reason": request.reason,
                "presentation": presentation,
                "tool_kind": request.tool_kind,
                "suggested_rule": ", ".join(rules) or None,
                "suggested_rule_user": ", ".join(rules_user) or None,
                "suggested_rules": rules,
                "suggested_rules_user": rules_user,
                "commands": request.commands,
            },
        )
        answer = await self.pauses.wait(request.tool_call_id, timed=True)
        if answer == "allow_run" and request.scope:
            gate.allowed_for_run.add(request.scope)
        self.emit("permission.resolved", {"tool_call_id": request.tool_call_id, "decision": answer})
        if answer == "deny_always":
            request.reason = "denied, and a deny rule was remembered"
        if answer == "allow_network" and grants is not None:
            grants.add("network")
        return answer in ("allow", "allow_run", "allow_always", "allow_network")

    # ------------------------------------------------------------ output

    def _spill(self, result: ToolResult, call_id: str) -> ToolResult:
        limit = self.max_output_chars
        total = 0
        for b in result.content:
            if b.get("type") == "text":
                total += len(b.get("text", ""))
        if total <= limit:
            return result
        text_blocks = [b for b in result.content if b.get("type") == "text"]
        full = "\n".join(b["text"] for b in text_blocks)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80] or "output"
        path = self.artifacts_dir() / f"{safe}.txt"
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

    # ------------------------------------------------------------ bookkeeping

    def _repeated_failure(self, name: str, tool_input: dict[str, Any], result: ToolResult) -> ToolResult:
        """The loop guard for identical failing calls: the model is told when
        the same call has failed ``guards.repeated_tool_error`` times in a row;
        one more and the run stops with ``run_repeated_error``."""
        state = self.state
        limit = self.guards.repeated_tool_error
        if not result.is_error or not limit:
            state.last_failure, state.same_failures = None, 0
            return result
        key = (name, json.dumps(tool_input, sort_keys=True, default=str))
        state.same_failures = state.same_failures + 1 if key == state.last_failure else 1
        state.last_failure = key
        count = state.same_failures
        if count > limit:
            state.stop = AgentErrorInfo.from_code(
                "run_repeated_error",
                f"{name} failed {count} times in a row with the same input, after a warning",
                details={"tool_name": name, "count": count},
            )
        elif count == limit:
            note = (
                f"Warning: this exact call to {name} has now failed {count} times in a row. Do not repeat it: "
                f"read the error, change the input or try another approach. Repeating it once more ends the run."
            )
            self.emit(
                "run.warning",
                {"error": AgentErrorInfo.from_code("run_repeated_error", note, severity="warning").to_dict(),
                 "attempt": None, "retry_in_ms": None},
            )
            return result.model_copy(update={"content": [*result.content, {"type": "text", "text": note}]})
        return result

    def track(self, result: ToolResult, kind: str) -> None:
        """Guards and phases, from what a tool call did (by its tool's declared ``kind``)."""
        state = self.state
        if kind in ("edit", "delete", "move"):
            if not result.is_error:
                state.edited = True
                state.failing_commands = 0
                self.set_phase("edit")
        elif kind == "execute":
            data = result.data or {}
            failed = result.is_error or bool(data.get("timed_out")) or data.get("exit_code") not in (None, 0)
            state.failing_commands = state.failing_commands + 1 if failed else 0
            if state.edited:
                self.set_phase("recover" if failed else "verify")
        elif kind == "think":
            if state.phase in ("understand", "explore"):
                self.set_phase("plan")
        elif state.phase == "understand" and kind in ("read", "search", "fetch"):
            self.set_phase("explore")


def _coerce_result(raw: Any) -> ToolResult:
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


def _redact_result(result: ToolResult, redactor: Redactor) -> ToolResult:
    content = redactor.redact_obj(result.content)
    data = redactor.redact_obj(result.data)
    if content is result.content and data is result.data:
        return result
    return result.model_copy(update={"content": content, "data": data})


def _json_problem(raw: str) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return str(exc)
    return "not an object"
