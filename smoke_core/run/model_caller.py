"""The model call of a step: build the request (``before_model_call``), call
the provider with retries, assemble the streamed reply, report it
(``after_model_call``, ``usage.updated``)."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from ..base.errors import AgentError, AgentErrorInfo
from ..base.messages import Message
from ..hooks.runner import HookRunner
from ..policy.options import Guards
from ..policy.secrets import Redactor, StreamRedactor
from ..wire.pricing import price_usd
from ..wire.types import (
    Finished,
    ModelRequest,
    Progress,
    Provider,
    ProviderNotice,
    RetryPolicy,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)
from .compaction import summarise_with
from .event_bus import Emit
from .fair import starved, take_turn
from .state import RunFailed, RunState, ToolCallRejected

log = logging.getLogger("smoke")


class ModelCaller:
    def __init__(
        self,
        *,
        provider: Provider,
        retry: RetryPolicy,
        guards: Guards,
        hooks: HookRunner,
        emit: Emit,
        listening: Callable[[str], bool],
        state: RunState,
        model_settings: dict[str, Any],
        user_id: str | None,
        system_prompt: Callable[[], str | None],
        base_system: str | None,
        check_abort: Callable[[], None],
        hook_run: Any,
        on_hook_error: Callable[[str, str, BaseException], None],
        call_id_prefix: str = "",
        redactor: Redactor | None = None,
    ) -> None:
        self.provider = provider
        self.retry = retry
        self.guards = guards
        self.hooks = hooks
        self.emit = emit
        self.listening = listening
        self.state = state
        self.model_settings = model_settings
        self.user_id = user_id
        self.system_prompt = system_prompt
        self.base_system = base_system
        self.check_abort = check_abort
        self.hook_run = hook_run  # the RunHandle, as hooks see it
        self.on_hook_error = on_hook_error
        self.call_id_prefix = call_id_prefix  # a subagent's own ids never clash with its parent's
        #: the model's own text is redacted like tool results (events, the transcript, the store)
        self.redactor = redactor if redactor else None
        self.rand = random.random
        self._fallback_index = 0  # the next of fallback_models to try
        # only a provider with an endpoint (or told what it serves) can be priced
        self._priced = bool(getattr(provider, "base_url", None) or getattr(provider, "price_as", None))

    @property
    def model(self) -> str:
        return getattr(self.provider, "model", "") or ""

    async def prepare(self) -> None:
        """Before the run's first model call: the provider's ``prepare()``
        when it has one (an HTTP provider of a local server asks it for the
        model's context size and capabilities, once). Never fails the run."""
        prepare = getattr(self.provider, "prepare", None)
        if prepare is None:
            return
        try:
            await prepare()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # what the server says is a help, never a condition
            log.debug("smoke: %s.prepare() failed: %s", getattr(self.provider, "name", "provider"), exc)

    def unhooked_request(self) -> ModelRequest | None:
        """The request for this step when no plugin implements
        ``before_model_call`` (what :meth:`build_request` returns then, without
        a coroutine), else None: await :meth:`build_request`."""
        if self.hooks.has("before_model_call"):
            return None
        return ModelRequest(
            model=getattr(self.provider, "model", "") or "",
            messages=list(self.state.messages),
            tools=list(self.state.schemas),
            system=self.system_prompt(),
            settings=dict(self.model_settings),
            user_id=self.user_id,
        )

    async def build_request(self, step: int) -> ModelRequest:
        """The request for this step, after the ``before_model_call`` chain."""
        return await self._chained(step, list(self.state.messages), list(self.state.schemas), self.system_prompt())

    async def sample(self, messages: list[Message], *, system: str | None, settings: dict[str, Any],
                     step: int) -> tuple[Message, str | None]:
        """One model call on ``messages`` alone (no tools), through the hooks
        and retries of a step; counted in the run's usage; text not streamed."""
        request = await self._chained(step, list(messages), [], system)
        request.settings.update(settings)
        quiet = copy.copy(self)
        quiet.emit = lambda type, data: None if type.startswith("text.") else self.emit(type, data)
        return await quiet.call(request, step)

    async def _chained(self, step: int, messages: list[Message], tools: list[dict[str, Any]],
                       system: str | None) -> ModelRequest:
        if self.hooks.has("before_model_call"):
            kwargs = {
                "messages": messages, "tools": tools, "system": system, "model": self.model,
                "step": step, "run": self.hook_run,
            }
            outcome = await self.hooks.chain("before_model_call", kwargs, ("messages", "tools", "system"))
            if outcome is None:
                pass
            elif outcome.status == "block":
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "hook_blocked", f"model call blocked by {outcome.plugin}: {outcome.reason}",
                        details={"plugin": outcome.plugin, "reason": outcome.reason},
                    )
                )
            elif outcome.status == "fail":
                # model-call hooks fail closed: a broken policy plugin stops the run
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "hook_blocked" if outcome.exception else "hook_failed", f"{outcome.reason}; the run is stopped because model-call hooks fail closed",
                        details={"plugin": outcome.plugin, "exception": outcome.exception},
                    )
                )
            else:
                messages = list(outcome.values["messages"])
                tools = list(outcome.values["tools"])
                system = outcome.values["system"]
        return ModelRequest(
            model=self.model,
            messages=messages,
            tools=tools,
            system=system,
            settings=dict(self.model_settings),
            user_id=self.user_id,
        )

    # ---- budgets and fallback models (issue 33) -----------------------------------------

    def _options(self) -> Any:
        return getattr(self.hook_run, "options", None)

    def provider_label(self, provider: Any = None) -> str:
        provider = provider if provider is not None else self.provider
        name, model = getattr(provider, "name", None), getattr(provider, "model", None)
        return f"{name}:{model}" if name and model else str(model or name or "model")

    async def call(self, request: ModelRequest, step: int) -> tuple[Message, str | None]:
        """The assistant's reply and finish reason; retries transient failures
        (``run.warning`` before each); on a failure a fallback model may take
        (``fallback_models``), the same request goes to the next one; raises
        :class:`RunFailed` otherwise. The run's budget is checked before the
        call (with the request's estimate) and after it."""
        options = self._options()
        budget = getattr(options, "budget", None)
        if budget is not None and budget.active:
            from .budget import check_before

            stop = check_before(budget, self.hook_run, request, self.provider, step)
            if stop is not None:
                raise RunFailed(stop)
        while True:
            try:
                reply, reason = await self._call_model(request, step)
            except _FallbackNeeded as need:
                request = self._fall_back(need, request)
                continue
            if budget is not None and budget.active:
                from .budget import check_after

                stop = check_after(budget, self.hook_run, step)
                if stop is not None:
                    raise RunFailed(stop)
            return reply, reason

    def _fall_back(self, need: _FallbackNeeded, request: ModelRequest) -> ModelRequest:
        """Switch to the next fallback model (for the rest of the run), or raise the failure."""
        chain = tuple(getattr(self._options(), "fallbacks", ()) or ())
        if self._fallback_index >= len(chain):
            raise RunFailed(need.info)
        label, provider = chain[self._fallback_index]
        self._fallback_index += 1
        previous = self.provider_label()
        info = need.info
        warning = AgentErrorInfo.from_code(
            info.code, f"{previous} failed ({info.message}); the same request goes to the fallback model {label}",
            severity="warning", retryable=True, details={**(info.details or {}), "fallback": {"from": previous,
                                                                                            "to": label}},
        )
        self.emit("run.warning", {"error": warning.to_dict(), "attempt": need.attempts, "retry_in_ms": 0,
                                  "fallback": {"from": previous, "to": label}})
        self.provider = provider
        self._priced = bool(getattr(provider, "base_url", None) or getattr(provider, "price_as", None))
        import dataclasses

        return dataclasses.replace(request, model=getattr(provider, "model", "") or request.model)

    def _count(self, usage: Usage) -> None:
        options = self._options()
        from .budget import record, unpriced_warning

        model = self.provider_label()
        record(self.state, model, usage)
        budget = getattr(options, "budget", None)
        if budget is not None:
            warning = unpriced_warning(budget, self.state, usage, model)
            if warning is not None:
                self.emit("run.warning", {"error": warning.to_dict()})

    # ---------------------------------------------------------------------------------------

    async def _call_model(self, request: ModelRequest, step: int) -> tuple[Message, str | None]:
        policy = self.retry
        attempt = 0
        same = 0
        last_key: tuple[str, str] | None = None
        streamed_any = False
        while True:
            attempt += 1
            self.check_abort()
            t0 = time.perf_counter()
            streamed: list[str] = []
            try:
                reply, usage, finish = await self._consume(request, streamed)
            except asyncio.CancelledError:
                raise
            except AgentError as exc:
                info = exc.info
                if info.code == "tool_invalid_input":
                    # the provider validated the model's tool call and refused it: the model's mistake
                    await self._after(None, Usage(), t0, info, step)
                    if streamed:
                        self.emit("text.discarded", {"reason": info.code, "text": "".join(streamed)})
                    raise ToolCallRejected(info, _rejection_feedback(info)) from None
            except Exception as exc:
                info = AgentErrorInfo.from_code(
                    "provider_error",
                    f"the provider raised {type(exc).__name__}: {exc}",
                    details={"exception": type(exc).__name__},
                )
            else:
                if self._priced and usage.total_tokens:
                    usage.cost_usd = price_usd(
                        usage, model=request.model or self.model,
                        base_url=getattr(self.provider, "base_url", None),
                        price_as=getattr(self.provider, "price_as", None),
                    )
                self.state.usage.add(usage)
                self._count(usage)
                if self.hooks.has("after_model_call"):  # no coroutine to make on the common path
                    await self._after(reply, usage, t0, None, step, finish)
                if self.listening("usage.updated"):
                    self.emit("usage.updated", {"usage": self.state.usage.to_dict(), "step_usage": usage.to_dict()})
                return reply, finish.reason if finish is not None else None
            await self._after(None, Usage(), t0, info, step)
            streamed_any = streamed_any or bool(streamed)
            # a fallback model takes the same request only if nothing of this one reached the person
            fallback = not streamed_any and self._may_fall_back(info)
            key = (info.code, info.message)
            same = same + 1 if key == last_key else 1
            last_key = key
            if not info.retryable or info.severity == "fatal":
                if fallback:
                    raise _FallbackNeeded(info, attempt)
                raise RunFailed(info)
            limit = self.guards.repeated_error
            if limit and same >= limit:
                if fallback:
                    raise _FallbackNeeded(info, attempt)
                raise RunFailed(
                    AgentErrorInfo.from_code(
                        "run_repeated_error",
                        f"{info.code} {same} times in a row: {info.message}",
                        hint=info.hint,
                        details={"cause": info.to_dict(), "count": same},
                    )
                )
            if attempt > policy.max_retries:
                if fallback:
                    raise _FallbackNeeded(info, attempt)
                raise RunFailed(info)
            delay = policy.delay(attempt, info, self.rand)
            if streamed:
                # Text already reached listeners; tell them to drop it before the replay.
                self.emit("text.discarded", {"reason": info.code, "text": "".join(streamed)})
            self.emit("run.warning", {"error": info.to_dict(), "attempt": attempt, "retry_in_ms": round(delay * 1000)})
            await asyncio.sleep(delay)

    def _may_fall_back(self, info: AgentErrorInfo) -> bool:
        chain = getattr(self._options(), "fallbacks", ()) or ()
        return self._fallback_index < len(chain) and may_fall_back(info)

    async def _consume(self, request: ModelRequest, streamed: list[str]) -> tuple[Message, Usage, Finished | None]:
        stream = self.provider.stream(request)
        text_parts: list[str] = []
        thought_parts: list[str] = []
        signature: str | None = None
        calls: list[ToolCallRequest] = []
        usage = Usage()
        finish: Finished | None = None
        emit = self.emit
        paced = False
        redactor = self.redactor
        text_stream = StreamRedactor(redactor) if redactor else None
        thought_stream = StreamRedactor(redactor) if redactor else None
        try:
            async for ev in stream:
                if not paced:  # the reply began: if many runs woke together, let timers and I/O in first (run.fair)
                    paced = True
                    if starved():
                        await take_turn()
                if type(ev) is TextDelta:
                    if ev.text:
                        text_parts.append(ev.text)
                        shown = text_stream.feed(ev.text) if text_stream is not None else ev.text
                        if shown:
                            streamed.append(shown)
                            emit("text.delta", {"text": shown})
                elif type(ev) is ToolCallRequest:
                    calls.append(ev)
                elif type(ev) is ThoughtDelta:
                    if ev.text:
                        thought_parts.append(ev.text)
                        shown = thought_stream.feed(ev.text) if thought_stream is not None else ev.text
                        if shown:
                            emit("text.thought", {"text": shown})
                    if ev.signature:
                        signature = ev.signature
                elif type(ev) is UsageReport:
                    usage.add(ev.usage)
                elif type(ev) is Finished:
                    finish = ev
                elif type(ev) is Progress:
                    emit("model.progress", {"kind": ev.kind, "done": ev.done, "total": ev.total,
                                            "tool_name": ev.name})
                elif type(ev) is ProviderNotice:
                    emit("run.warning", {"error": _notice_info(ev).to_dict(), "attempt": None, "retry_in_ms": None})
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if thought_stream is not None:
            rest = thought_stream.flush()
            if rest:
                emit("text.thought", {"text": rest})
        if text_stream is not None:
            rest = text_stream.flush()
            if rest:
                streamed.append(rest)
                emit("text.delta", {"text": rest})
        content: list[dict[str, Any]] = []
        if thought_parts or signature:
            thought = "".join(thought_parts)
            # a signed thinking block goes back to the provider exactly as it came (the signature covers it)
            block: dict[str, Any] = {"type": "thinking",
                                     "text": redactor.redact(thought) if redactor and not signature else thought}
            if signature:
                block["signature"] = signature
            content.append(block)
        if text_parts:
            text = "".join(text_parts)
            if redactor:
                text = redactor.redact(text)
            content.append({"type": "text", "text": text})
            emit("text.end", {"text": text})
        step = self.state.step
        for i, call in enumerate(calls):
            args: Any = call.arguments
            block = {"type": "tool_call", "id": self.call_id_prefix + (call.id or f"call_{step}_{i}"),
                     "name": call.name}
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

    async def summarise(self, messages: list[Message]) -> str:
        """A summary of ``messages`` by the model (for compaction)."""
        return await summarise_with(
            self.provider, messages, system=self.base_system, settings=self.model_settings, user_id=self.user_id
        )

    async def _after(
        self, reply: Message | None, usage: Usage, t0: float, error: AgentErrorInfo | None, step: int,
        finish: Finished | None = None,
    ) -> None:
        if not self.hooks.has("after_model_call"):
            return
        kwargs = {
            "finish_reason": finish.reason if finish is not None else None,
            "response_model": finish.model if finish is not None else None,
            "response_id": finish.response_id if finish is not None else None,
            "response": reply,
            "usage": usage.to_dict(),
            "duration_ms": (time.perf_counter() - t0) * 1000,
            "error": error,
            "step": step,
            "run": self.hook_run,
        }
        await self.hooks.observe("after_model_call", kwargs, self.on_hook_error)


def _notice_info(notice: ProviderNotice) -> AgentErrorInfo:
    try:
        return AgentErrorInfo.from_code(notice.code, notice.message, hint=notice.hint,  # type: ignore[arg-type]
                                        details=dict(notice.details), severity="warning")
    except ValueError:  # a code Smoke does not know: still heard
        return AgentErrorInfo.from_code("provider_error", notice.message, hint=notice.hint,
                                        details={**notice.details, "notice_code": notice.code}, severity="warning")


class _FallbackNeeded(Exception):
    """The model could not answer and a fallback model may take the request."""

    def __init__(self, info: AgentErrorInfo, attempts: int) -> None:
        super().__init__(info.message)
        self.info = info
        self.attempts = attempts


#: failures a fallback model takes over: overload and unavailability (after the retries) and any 5xx;
#: never a rate limit (429), an auth failure or an invalid request
_NO_FALLBACK = frozenset({"provider_rate_limited", "provider_auth", "tool_invalid_input", "provider_cancelled"})


def may_fall_back(info: AgentErrorInfo) -> bool:
    if info.code in _NO_FALLBACK:
        return False
    status = (info.details or {}).get("status")
    if isinstance(status, int) and not 500 <= status < 600 and status != 529:
        return False
    return info.code == "provider_unavailable" or (isinstance(status, int) and (500 <= status < 600 or status == 529))


def _rejection_feedback(info: AgentErrorInfo) -> str:
    failed = str(info.details.get("failed_generation") or "").strip()
    text = (
        f"Your last reply was rejected by the model provider before any tool ran: {info.message}. "
        "Nothing was executed. Call the tool again with arguments that are valid JSON and match its schema."
    )
    if failed:
        text += f"\nWhat you sent:\n{failed[:2000]}"
    return text
