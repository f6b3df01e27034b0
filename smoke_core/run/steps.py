"""The step loop of a run (DESIGN §4): abort check → ``step.started`` →
compaction if needed → ``before_model_call`` → the model call → the tool
calls → ``step.ended``, until the run finishes or a guard stops it.

:class:`StepLoop` is a base of :class:`~smoke_core.run.handle.RunHandle`:
the loop reads the run's state and parts directly (the hot path of every
step), without importing the handle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..base.errors import AgentErrorInfo
from ..base.messages import Message, user_message
from .compaction import Compactor
from .fair import starved, take_turn
from .output import FINAL_RESULT
from .run_hooks import compaction_allowed, continue_with, session_context
from .state import Interrupted, RunDeps, RunFailed, RunState, ToolCallRejected

if TYPE_CHECKING:
    from ..policy.options import AgentOptions
    from .compaction import CompactableRun
    from .model_caller import ModelCaller
    from .tool_executor import ToolExecutor


class StepLoop:
    """The loop and its bookkeeping; the attributes are set by the run."""

    _deps: RunDeps
    _st: RunState
    _model: ModelCaller
    _tools: ToolExecutor
    options: AgentOptions
    cancelled: asyncio.Event
    parent: Any
    emit: Callable[[str, dict[str, Any]], None]
    _hook_failed: Callable[[str, str, BaseException], None]
    add_instructions: Callable[[str], bool]

    def _append(self, message: Message) -> None:
        self._st.messages.append(message)
        self._deps.store_append(message)

    def _check_abort(self) -> None:
        run: StepLoop | None = self
        while run is not None:
            if run.cancelled.is_set():
                raise Interrupted()
            run = run.parent

    def _flush_instructions(self) -> None:
        st = self._st
        if not st.pending_instructions:
            return
        texts, st.pending_instructions = st.pending_instructions, []
        self._append(user_message(
            "[Instructions added during this task — follow them from now on]\n\n" + "\n\n".join(texts)
        ))

    async def _compact(self, summarise: Any) -> bool:
        """Compaction, unless a ``before_compaction`` hook blocks it."""
        deps = self._deps
        this = cast("CompactableRun", self)
        if deps.hooks.has("before_compaction") and not await compaction_allowed(
            deps.hooks, self, "auto", "", lambda info: self.emit(
                "run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None})):
            return False
        return await deps.compactor.maybe_compact(this, summarise)

    async def _goes_on(self, text: str | None) -> bool:
        """``before_run_end``: True when a hook's message was added and the loop goes on."""
        deps = self._deps
        if not deps.hooks.has("before_run_end"):
            return False
        st = self._st
        message = await continue_with(deps.hooks, self, text, st.continuations, self._hook_failed)
        if message is None:
            return False
        limit = deps.guards.stop_continuations
        if st.continuations >= limit:
            info = AgentErrorInfo.from_code(
                "hook_blocked", f"a before_run_end hook asked this run to go on {st.continuations + 1} times; "
                f"it ends now (Guards.stop_continuations={limit})", severity="warning")
            self.emit("run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None})
            return False
        st.continuations += 1
        self._append(user_message(message))
        return True

    async def _answer_overflow(self, info: AgentErrorInfo, run: CompactableRun) -> None:
        """The server said the prompt does not fit its context: believe its
        size from now on, compact the history, and let the step try once
        more; nothing to compact ends the run with the overflow."""
        compactor = self._deps.compactor
        served = info.details.get("n_ctx")
        if isinstance(served, int) and 0 < served < compactor.context_window:
            compactor.context_window = served
        self.emit("run.warning", {"error": info.model_copy(update={"severity": "warning"}).to_dict(),
                                  "attempt": None, "retry_in_ms": None})
        deps = self._deps
        if deps.hooks.has("before_compaction") and not await compaction_allowed(
            deps.hooks, self, "auto", "", lambda warned: self.emit(
                "run.warning", {"error": warned.to_dict(), "attempt": None, "retry_in_ms": None})):
            raise RunFailed(info.model_copy(update={
                "hint": "A before_compaction hook blocked the compaction this overflow needs. Serve a larger "
                        "context (llama-server -c), or let compaction run.",
            }))
        compact_now = getattr(compactor, "compact_now", None)
        if compact_now is not None:
            done = await compact_now(run, self._model.summarise, keep_recent=min(2, compactor.keep_recent))
        else:  # a compactor of another kind: its own rule
            done = await compactor.maybe_compact(run, self._model.summarise)
        if not done:
            raise RunFailed(info.model_copy(update={
                "hint": "There is no earlier history to summarise: the task, the system prompt and the tools "
                        "alone do not fit. Serve a larger context (llama-server -c), expose fewer tools, or use "
                        "a shorter task.",
            }))

    def _truncated(self, reply: Message, request: Any) -> Message | None:
        """A reply cut off at ``max_tokens`` (``finish_reason: length``):
        ``run.warning`` (``output_truncated``), and the calls that arrived
        whole go on (the reply returned without the broken ones); else the
        partial text is kept and the model is asked to continue (None: the
        loop takes the next step). ``Guards.truncated_replies`` in a row fail
        the run."""
        st = self._st
        st.truncated_replies += 1
        limit = self._deps.guards.truncated_replies
        max_tokens = (request.settings or {}).get("max_tokens")
        said = f"max_tokens={max_tokens}" if max_tokens else "the server's output limit"
        details = {"max_tokens": max_tokens, "count": st.truncated_replies}
        if limit and st.truncated_replies >= limit:
            raise RunFailed(AgentErrorInfo.from_code(
                "output_truncated", f"the model's reply was cut off at {said} {st.truncated_replies} times in a row",
                severity="error", hint="Raise max_tokens (setting or --max-tokens), or use a model that answers "
                                       "more briefly.", details=details,
            ))
        whole = [b for b in reply["content"] if b["type"] != "tool_call" or "raw_arguments" not in b]
        calls = [b for b in whole if b["type"] == "tool_call"]
        self.emit("run.warning", {"error": AgentErrorInfo.from_code(
            "output_truncated", f"the model's reply was cut off at {said}"
            + ("; running the tool calls that arrived whole" if calls else "; asking it to continue"),
            details=details).to_dict(), "attempt": None, "retry_in_ms": None})
        if calls:
            return {**reply, "content": whole}
        text = [b for b in whole if b["type"] == "text" and b.get("text", "").strip()]
        if text:
            self._append({"role": "assistant", "content": text})
        self._append(user_message(
            f"Your last reply was cut off: it reached {said} before it ended. "
            + ("Continue from where it stopped, more briefly. " if text else "")
            + "To call a tool, reply with the tool call alone; keep its arguments short."
        ))
        return None

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
        this = cast("CompactableRun", self)  # the run, as the compactor reads it
        top_level = self.parent is None  # a subagent also stops when a run above it is aborted
        # before anything reads the context window: a local server tells its size and capabilities (once)
        await model.prepare()
        while True:
            if top_level:
                if cancelled.is_set():
                    raise Interrupted()
            else:
                self._check_abort()
            if starved():  # many runs on one loop: take turns with timers and I/O (run.fair)
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
            if (not stock_compactor or compactor.due(this) is not None) and await self._compact(model.summarise):
                # instructions summarised away are given again after the summary
                kept = str(st.messages)
                st.pending_instructions = [t for t in st.instructions if t not in kept]
                if top_level:
                    for text in await session_context(deps.hooks, self, "compact", self._hook_failed):
                        self.add_instructions(text)
            if st.pending_instructions:
                self._flush_instructions()
            overflowed = False
            while True:
                request = model.unhooked_request() or await model.build_request(step)
                try:
                    reply, finish_reason = await model.call(request, step)
                    rejected = None
                    break
                except ToolCallRejected as exc:
                    rejected = exc
                    break
                except RunFailed as failed:
                    if failed.info.code != "provider_context_overflow" or overflowed:
                        raise
                    overflowed = True  # compact, then try once more
                    await self._answer_overflow(failed.info, this)
            if rejected is not None:
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
            if finish_reason == "length":
                whole = self._truncated(reply, request)
                if whole is None:
                    emit("step.ended", {"step": step, "tool_calls": 0, "finish_reason": finish_reason})
                    continue
                reply = whole
            else:
                st.truncated_replies = 0

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
                info = AgentErrorInfo.from_code(
                    "provider_error", "the model returned an empty reply; asking it to continue", severity="warning",
                )
                emit("run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None})
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
                    text = "".join(b["text"] for b in reply["content"] if b["type"] == "text")
                    if await self._goes_on(text):
                        continue
                    return text
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
                if await self._goes_on(st.finish_summary):
                    st.finish_summary = None
                    continue
                return st.finish_summary
            if guards.hard_stop and st.failing_commands >= guards.hard_stop:
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "run_hard_stop",
                        f"{st.failing_commands} commands failed in a row with no successful edit between",
                        details={"failing_commands": st.failing_commands},
                    )
                )
