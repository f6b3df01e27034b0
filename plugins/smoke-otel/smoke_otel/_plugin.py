"""The instrumentation: Smoke's lifecycle hooks and events turned into GenAI
spans and metrics.

One ``invoke_agent`` span per run (a subagent's is a child of the tool call
that started it), one ``chat {model}`` span per model call (all attempts;
each retry is a span event), one ``execute_tool {tool}`` span per tool call
(every exit path: success, tool error, invalid input, unknown tool, hook
block, permission denial, abort). The span of what is running is the
current OpenTelemetry context while it runs, so spans made inside a tool or
by an HTTP client instrumentation nest under it.

Nothing here imports ``opentelemetry`` at import time (see ``_telemetry``).
"""

from __future__ import annotations

import logging
import sys
import threading
from time import time_ns
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from smoke_core.plugin import hookimpl

from . import _conventions as c

if TYPE_CHECKING:
    from smoke_core.plugin import AgentErrorInfo, Event, Redactor, RunHandle, ToolResult

    from ._telemetry import Telemetry

log = logging.getLogger("smoke")

#: events the plugin listens to (run.warning: retries and warnings; permission.*:
#: approvals on the tool span; hook.completed: command hooks). None comes once per step.
EVENTS = ("run.warning", "permission.required", "permission.resolved", "hook.completed")
#: model calls whose token counts are summed before they are added to the usage counters
#: (the counters' totals are exact; they reach the meter at most this many calls late, and at the run's end)
USAGE_FLUSH_CALLS = 32
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

_configured = False
_configure_lock = threading.Lock()
_setup: Any = None


def _configure_once(run: RunHandle) -> None:
    """Global providers from the environment, once per process (see ``_setup``)."""
    global _configured, _setup
    if _configured:
        return
    with _configure_lock:  # runs on several threads' loops may start together
        if _configured:
            return
        from ._setup import configure_from_environment

        _setup = configure_from_environment()
        _configured = True
    for problem in _setup.problems:
        run.warn(f"smoke-otel: {problem}")


def owned_providers() -> list[Any]:
    """The providers smoke-otel built from the environment (empty when the
    application configured its own, or nothing asked for export)."""
    return list(_setup.owned) if _setup is not None else []


_task_of: Any = None


def _current_task() -> Any:
    global _task_of
    if _task_of is None:
        asyncio = sys.modules.get("asyncio")  # not imported at plugin load: `smoke --help` stays light
        if asyncio is None:
            return None  # no event loop has ever run, so no task
        _task_of = asyncio.current_task
    try:
        return _task_of()
    except RuntimeError:
        return None


class _Open:
    """An open span and the context token that made it current (if any)."""

    __slots__ = ("span", "start_ns", "task", "token")

    def __init__(self, span: Any, start_ns: int) -> None:
        self.span = span
        self.start_ns = start_ns
        self.token: Any = None
        self.task: Any = None


class _Chat(_Open):
    # one per model call: the fields are set here, without a call to the base's __init__
    __slots__ = ("attempts", "end_ns", "error", "in_flight", "response", "usage")

    def __init__(self, span: Any, start_ns: int) -> None:
        self.span = span
        self.start_ns = start_ns
        self.token = None
        self.task = None
        self.end_ns: int | None = None
        self.error: AgentErrorInfo | None = None
        self.in_flight = True
        self.attempts = 0
        self.usage: dict[str, Any] | None = None
        self.response: dict[str, Any] | None = None


class _Tool(_Open):
    __slots__ = ("args_recorded", "name")

    def __init__(self, span: Any, start_ns: int, name: str) -> None:
        self.span = span
        self.start_ns = start_ns
        self.token = None
        self.task = None
        self.name = name
        self.args_recorded = False


class _ToolKind:
    """What a run knows about one tool, made on its first call: the span's
    name, its start attributes (the call id is added per call) and the
    duration metric's attributes of a call that succeeded."""

    __slots__ = ("attrs", "ok_metric", "span_name", "type")

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.attrs = attrs
        self.type = attrs[c.TOOL_TYPE]
        self.span_name = f"execute_tool {name}"
        self.ok_metric = {c.OPERATION_NAME: c.OP_EXECUTE_TOOL, c.TOOL_NAME: name, c.TOOL_TYPE: self.type}


class _Run(_Open):
    """What the plugin keeps about one run."""

    __slots__ = (
        "agent_attrs", "agent_name", "capture", "chat", "chat_attrs", "chat_name", "ctx", "depth",
        "duration_attrs", "inference_calls", "model", "provider_attrs", "redactor", "tokens_in", "tokens_out",
        "tool_attrs", "tool_calls", "tool_definitions", "tools", "unsubscribe", "usage_attrs", "usage_calls",
        "usage_sum",
    )

    def __init__(self, span: Any, start_ns: int) -> None:
        super().__init__(span, start_ns)
        self.ctx: Any = None
        self.chat: _Chat | None = None
        self.tools: dict[str, _Tool] = {}
        self.tool_attrs: dict[str, _ToolKind] = {}
        self.unsubscribe: list[Any] = []
        self.agent_name = ""
        self.model = ""
        self.chat_name = ""
        self.capture = False
        self.redactor: Redactor
        self.depth = 0
        self.provider_attrs: dict[str, Any] = {}
        self.agent_attrs: dict[str, Any] = {}
        self.chat_attrs: dict[str, Any] = {}
        self.tokens_in: dict[str, Any] = {}
        self.tokens_out: dict[str, Any] = {}
        self.duration_attrs: dict[str, Any] = {}
        self.inference_calls = 0
        self.tool_calls = 0
        #: token counts summed per model until they are added to the counters (latest names)
        self.usage_sum: dict[str, list[int]] = {}
        self.usage_attrs: dict[str, dict[str, Any]] = {}
        self.usage_calls = 0
        self.tool_definitions: str | None = None


def _server_attrs(provider: Any) -> dict[str, Any]:
    base_url = getattr(provider, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None)
    except ValueError:
        return {}
    out: dict[str, Any] = {}
    if parts.hostname:
        out[c.SERVER_ADDRESS] = parts.hostname
        if port:
            out[c.SERVER_PORT] = port
    return out


def _request_settings(agent: Any) -> dict[str, Any]:
    settings = getattr(agent, "model_settings", None) or {}
    out: dict[str, Any] = {}
    for key, (attr, kind) in c.REQUEST_SETTINGS.items():
        value = settings.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[attr] = kind(value)
    stop = settings.get("stop")
    if isinstance(stop, str):
        out[c.STOP_SEQUENCES] = (stop,)
    elif isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
        out[c.STOP_SEQUENCES] = tuple(stop)
    return out


class OtelPlugin:
    """OpenTelemetry GenAI traces and metrics for the runs of an agent.

    Installed, the ``smoke-otel`` distribution registers one of these for
    every agent, using the global providers (configured from the ``OTEL_*``
    variables when the application configured none). Pass your own to send
    one agent's telemetry to given providers::

        create_agent(..., plugins=[OtelPlugin(tracer_provider=tp, meter_provider=mp)])

    (the installed plugin then steps aside for that agent).

    :param tracer_provider: where spans go (default: the global one).
    :param meter_provider: where metrics go (default: the global one).
    :param capture_content: record message and tool-argument content (after
        secret redaction). None = the ``otel_capture_content`` setting, else
        ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.
    :param agent_name: ``gen_ai.agent.name`` of top-level runs (default: the
        ``otel_agent_name`` setting, else ``"smoke"``).
    :param semconv: ``"latest"`` (semantic-conventions-genai v0.1.0) or
        ``"legacy"`` (semantic-conventions v1.41.0) names; None =
        ``OTEL_SEMCONV_STABILITY_OPT_IN`` (``gen_ai_legacy`` for the old names).
    """

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool | None = None,
        agent_name: str | None = None,
        semconv: str | None = None,
    ) -> None:
        if semconv not in (None, "latest", "legacy"):
            raise ValueError(f"semconv must be 'latest', 'legacy' or None (OTEL_SEMCONV_STABILITY_OPT_IN), "
                             f"got {semconv!r}")
        self._semconv = semconv
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._capture = capture_content
        self._agent_name = agent_name
        self._telemetry: Telemetry | None = None
        self._runs: dict[str, _Run] = {}

    def _tel(self, run: RunHandle) -> Telemetry | None:
        """The instruments, or None when nothing would receive them (no
        provider given, none set globally): the run is then not followed."""
        uses_globals = self._tracer_provider is None and self._meter_provider is None
        if uses_globals:
            _configure_once(run)
            from ._setup import meter_provider_is_set, tracer_provider_is_set

            if not (tracer_provider_is_set() or meter_provider_is_set()):
                return None
        tel = self._telemetry
        if tel is None:
            from ._telemetry import Telemetry

            names = {"latest": c.LATEST, "legacy": c.LEGACY}.get(self._semconv or "") or c.names_from_env()
            tel = self._telemetry = Telemetry(self._tracer_provider, self._meter_provider, names)
        return tel

    def _capture_for(self, run: RunHandle) -> bool:
        if self._capture is not None:
            return self._capture
        setting = run.options.get("otel_capture_content")
        if setting is not None:
            return bool(setting)
        from ._content import capture_from_env

        capture, problem = capture_from_env()
        if problem:
            run.warn(f"smoke-otel: {problem}")
        return capture

    # ------------------------------------------------------------ runs

    @hookimpl
    def before_run(self, run: RunHandle) -> None:
        tel = self._tel(run)
        if tel is None:
            return
        parent = self._runs.get(run.parent.run_id) if run.parent is not None else None
        agent = run.agent
        provider = agent.provider
        provider_name = str(getattr(provider, "name", None) or run.options.provider_name or "_OTHER")
        model = str(getattr(provider, "model", None) or run.options.model or "")
        if parent is None:
            from smoke_core.secrets import Redactor

            capture = self._capture_for(run)
            redactor = Redactor.from_environment()
            agent_name = self._agent_name or run.options.get("otel_agent_name") or "smoke"
            parent_ctx = tel.get_current()
        else:
            capture, redactor = parent.capture, parent.redactor
            tool = parent.tools.get(run.parent_tool_call_id or "")
            # named by its definition (the task tool's agent type) when it has one
            agent_name = getattr(run, "agent_name", None) or f"{parent.agent_name}/{tool.name if tool else 'subagent'}"
            parent_ctx = tel.set_span_in_context(tool.span if tool else parent.span)

        provider_attrs: dict[str, Any] = {c.PROVIDER_NAME: c.PROVIDER_NAMES.get(provider_name, provider_name),
                                          **_server_attrs(provider)}
        attrs: dict[str, Any] = {c.OPERATION_NAME: c.OP_INVOKE_AGENT, c.AGENT_NAME: agent_name,
                                 **provider_attrs, c.REQUEST_MODEL: model, c.RUN_ID: run.run_id}
        if run.session_id:
            attrs[c.CONVERSATION_ID] = run.session_id
        if run.depth:
            attrs[c.RUN_DEPTH] = run.depth
        if capture:
            from ._content import dump

            attrs[c.INPUT_MESSAGES] = dump([{"role": "user", "parts": [{"type": "text", "content": run.task}]}],
                                           redactor)
        start = time_ns()
        span = tel.start_span(f"invoke_agent {agent_name}", parent_ctx, tel.INTERNAL, attrs, start)
        rt = _Run(span, start)
        rt.ctx = tel.set_span_in_context(span, parent_ctx)
        rt.token, rt.task = tel.attach(rt.ctx), _current_task()
        rt.agent_name, rt.capture, rt.redactor, rt.depth = agent_name, capture, redactor, run.depth
        rt.provider_attrs = provider_attrs
        rt.agent_attrs = {c.OPERATION_NAME: c.OP_INVOKE_AGENT, c.AGENT_NAME: agent_name, **provider_attrs}
        self._set_model(rt, model, agent, run.session_id)
        if parent is None:
            on = agent.on
            rt.unsubscribe = [on(name, self._on_event) for name in EVENTS]
        self._runs[run.run_id] = rt

    def _set_model(self, rt: _Run, model: str, agent: Any, session_id: str | None) -> None:
        rt.model = model
        rt.chat_name = f"chat {model}"
        base = {**rt.provider_attrs, c.REQUEST_MODEL: model}
        chat = {c.OPERATION_NAME: c.OP_CHAT, **base, **_request_settings(agent)}
        if session_id:
            chat[c.CONVERSATION_ID] = session_id
        rt.chat_attrs = chat
        rt.duration_attrs = {c.OPERATION_NAME: c.OP_CHAT, **base}
        rt.tokens_in = {**rt.duration_attrs, c.TOKEN_TYPE: "input"}
        rt.tokens_out = {**rt.duration_attrs, c.TOKEN_TYPE: "output"}
        # Smoke's providers report usage without a breakdown by modality: the conventions' `unknown`
        rt.usage_attrs.setdefault(model, {**rt.duration_attrs, c.TOKEN_MODALITY: "unknown"})
        rt.agent_attrs[c.REQUEST_MODEL] = model

    @hookimpl
    def after_run(self, run: RunHandle, status: str, error: AgentErrorInfo | None) -> None:
        rt = self._runs.pop(run.run_id, None)
        if rt is None:
            return
        tel = self._telemetry
        assert tel is not None
        ERROR = tel.ERROR
        for off in rt.unsubscribe:
            off()
        if rt.chat is not None:
            self._finish_chat(rt, rt.chat, None, cancelled=status == "interrupted", run_error=error)
        for call_id, tool in list(rt.tools.items()):  # after_tool_call fires on every path; this is a safety net
            tool.span.set_attributes({c.ERROR_TYPE: "tool_cancelled", c.TOOL_OUTCOME: "cancelled"})
            tool.span.set_status(ERROR, "the run ended before the call reported")
            tool.span.end()
            del rt.tools[call_id]
        usage = run.usage
        attrs: dict[str, Any] = {c.RUN_STATUS: status, c.RUN_STEPS: run.step,
                                 c.USAGE_INPUT_TOKENS: usage.input_tokens, c.USAGE_OUTPUT_TOKENS: usage.output_tokens}
        if usage.cost_usd is not None:
            attrs[c.COST_USD] = float(usage.cost_usd)
        error_type: str | None = None
        span = rt.span
        if status == "failed":
            error_type = error.code if error is not None else "_OTHER"
            span.set_status(ERROR, error.message if error is not None else "the run failed")
        elif status == "interrupted":
            error_type = "run_cancelled"
            span.set_status(ERROR, "the run was aborted")
        if error_type is not None:
            attrs[c.ERROR_TYPE] = error_type
        span.set_attributes(attrs)
        now = time_ns()
        span.end(end_time=now)
        self._detach(rt)
        duration_attrs = rt.agent_attrs
        if error_type is not None:
            duration_attrs = {**duration_attrs, c.ERROR_TYPE: error_type}
            tel.failures.add(1, {c.ERROR_TYPE: error_type, c.OPERATION_NAME: c.OP_INVOKE_AGENT})
        tel.agent_duration.record((now - rt.start_ns) / 1e9, duration_attrs)
        if tel.names.latest:
            self._flush_usage(rt)
            tel.inference_calls.record(rt.inference_calls, rt.agent_attrs)
            tel.tool_calls.record(rt.tool_calls, rt.agent_attrs)

    def _flush_usage(self, rt: _Run) -> None:
        """Add the summed token counts to the usage counters (one add per counter and model)."""
        tel = self._telemetry
        assert tel is not None
        counters = tel.usage_counters
        for model, sums in rt.usage_sum.items():
            attrs = rt.usage_attrs[model]
            for key, value in zip(_USAGE_KEYS, sums, strict=True):
                if value or key in ("input_tokens", "output_tokens"):
                    counters[key].add(value, attrs)
        rt.usage_sum.clear()
        rt.usage_calls = 0

    # ------------------------------------------------------------ model calls
    # The four per-step hooks (before/after_model_call, before/after_tool_call) are written for the
    # common case — one model, content capture off, no error — with the attribute dicts made once per
    # run (or per tool) and each span's attributes set in two calls: at its start, and once at its end.

    @hookimpl(trylast=True)  # last in the chain: sees the request as sent, and no one blocks after it
    def before_model_call(self, messages: list[dict[str, Any]], system: str | None, model: str, run: RunHandle,
                          tools: list[dict[str, Any]] | None) -> None:
        rt = self._runs.get(run.run_id)
        if rt is None:
            return
        try:
            if rt.chat is None and model == rt.model and not rt.capture:
                tel = self._telemetry
                assert tel is not None
                start = time_ns()
                span = tel.tracer.start_span(rt.chat_name, context=rt.ctx, kind=tel.CLIENT,
                                             attributes=rt.chat_attrs, start_time=start)
                chat = rt.chat = _Chat(span, start)
                chat.token, chat.task = tel.attach(tel.set_span_in_context(span, rt.ctx)), _current_task()
            else:
                self._start_chat(rt, messages, system, model, run, tools)
        except Exception:  # before-hooks fail closed: telemetry must never stop a run
            log.exception("smoke-otel: could not start the chat span (ignored)")

    def _start_chat(self, rt: _Run, messages: list[dict[str, Any]], system: str | None, model: str,
                    run: RunHandle, tools: list[dict[str, Any]] | None = None) -> None:
        if rt.chat is not None:
            self._finish_chat(rt, rt.chat, None)
        if model != rt.model:  # a subagent on another model
            self._set_model(rt, model, run.agent, run.session_id)
            rt.span.set_attribute(c.REQUEST_MODEL, model)
        attrs = rt.chat_attrs
        if rt.capture:
            from ._content import dump, input_messages, system_instructions

            attrs = {**attrs, c.INPUT_MESSAGES: dump(input_messages(messages), rt.redactor)}
            if system:
                attrs[c.SYSTEM_INSTRUCTIONS] = dump(system_instructions(system), rt.redactor)
            if tools and self._telemetry is not None and self._telemetry.names.latest:
                if rt.tool_definitions is None:  # a run's tools are fixed when it starts: once per run
                    from ._content import tool_definitions

                    rt.tool_definitions = dump(tool_definitions(tools), rt.redactor)
                attrs[c.TOOL_DEFINITIONS] = rt.tool_definitions
        start = time_ns()
        tel = self._telemetry
        assert tel is not None
        chat = _Chat(tel.start_span(rt.chat_name, rt.ctx, tel.CLIENT, attrs, start), start)
        chat.token, chat.task = tel.attach(tel.set_span_in_context(chat.span, rt.ctx)), _current_task()
        rt.chat = chat

    @hookimpl
    def after_model_call(self, response: dict[str, Any] | None, usage: dict[str, Any], duration_ms: float,
                         error: AgentErrorInfo | None, run: RunHandle, finish_reason: str | None,
                         response_model: str | None, response_id: str | None) -> None:
        rt = self._runs.get(run.run_id)
        if rt is None:
            return
        now = time_ns()
        chat = rt.chat
        if chat is None:  # our before_model_call did not run for this call (it failed): make the span now
            start = now - int(duration_ms * 1e6)
            tel = self._telemetry
            assert tel is not None
            chat = rt.chat = _Chat(tel.start_span(rt.chat_name, rt.ctx, tel.CLIENT, rt.chat_attrs, start), start)
        chat.end_ns = now
        chat.in_flight = False
        chat.attempts += 1
        if error is not None:  # retried (run.warning follows) or final (the run ends)
            chat.error = error
            return
        chat.error = None
        chat.usage = usage
        chat.response = response
        self._finish_chat(rt, chat, finish_reason, response_model=response_model, response_id=response_id)

    def _finish_chat(self, rt: _Run, chat: _Chat, finish_reason: str | None, *, cancelled: bool = False,
                     run_error: AgentErrorInfo | None = None, response_model: str | None = None,
                     response_id: str | None = None) -> None:
        tel = self._telemetry
        assert tel is not None
        rt.chat = None
        span = chat.span
        error_type: str | None = None
        if chat.in_flight:  # the run ended while the call (or the wait before a retry) was going on
            chat.end_ns = time_ns()
            if cancelled:
                error_type = "provider_cancelled"
                span.set_status(tel.ERROR, "the model call was cancelled: the run was aborted")
            else:
                error_type = run_error.code if run_error is not None else "_OTHER"
                span.set_status(tel.ERROR,
                                run_error.message if run_error is not None else "the model call did not end")
        elif chat.error is not None:
            error_type = chat.error.code
            span.set_status(tel.ERROR, rt.redactor.redact(chat.error.message))
        usage = chat.usage
        input_tokens = output_tokens = 0
        attrs: dict[str, Any]
        if usage:
            get = usage.get
            input_tokens = get("input_tokens") or 0
            output_tokens = get("output_tokens") or 0
            cache_read = get("cache_read_tokens") or 0
            cache_write = get("cache_write_tokens") or 0
            reasoning = get("reasoning_tokens") or 0
            cost = get("cost_usd")
            attrs = {c.USAGE_INPUT_TOKENS: input_tokens, c.USAGE_OUTPUT_TOKENS: output_tokens}
            if cache_read:
                attrs[c.USAGE_CACHE_READ] = cache_read
            if cache_write:
                attrs[tel.names.cache_write_attr] = cache_write
            if reasoning:
                attrs[c.USAGE_REASONING] = reasoning
            if cost is not None:
                attrs[c.COST_USD] = float(cost)
        else:
            attrs = {}
        if finish_reason:
            attrs[c.RESPONSE_FINISH_REASONS] = (finish_reason,)
        if response_model:
            attrs[c.RESPONSE_MODEL] = response_model
        if response_id:
            attrs[c.RESPONSE_ID] = response_id
        if chat.attempts > 1:
            attrs[c.MODEL_ATTEMPTS] = chat.attempts
        if error_type is not None:
            attrs[c.ERROR_TYPE] = error_type
        if rt.capture and chat.response is not None:
            from ._content import dump, output_messages

            attrs[c.OUTPUT_MESSAGES] = dump(output_messages(chat.response, finish_reason), rt.redactor)
        end = chat.end_ns or time_ns()
        if attrs:
            span.set_attributes(attrs)  # the end's attributes in one call
        span.end(end_time=end)
        token = chat.token
        if token is not None:  # _detach, inline
            chat.token = None
            if chat.task is _current_task():
                tel.detach(token)
        seconds = (end - chat.start_ns) / 1e9
        rt.inference_calls += 1
        metric_attrs = rt.duration_attrs
        if error_type is not None:
            metric_attrs = {**metric_attrs, c.ERROR_TYPE: error_type}
            tel.failures.add(1, {c.ERROR_TYPE: error_type, c.OPERATION_NAME: c.OP_CHAT})
        tel.operation_duration.record(seconds, metric_attrs)
        if tel.latest:
            # every inference operation, failed ones with 0 (the conventions' rule for these two histograms)
            tel.operation_input_tokens.record(input_tokens, metric_attrs)
            tel.operation_output_tokens.record(output_tokens, metric_attrs)
            if usage:
                sums = rt.usage_sum.get(rt.model)
                if sums is None:
                    sums = rt.usage_sum[rt.model] = [0, 0, 0, 0, 0]
                sums[0] += input_tokens  # in _USAGE_KEYS order
                sums[1] += output_tokens
                sums[2] += cache_read
                sums[3] += cache_write
                sums[4] += reasoning
                rt.usage_calls += 1
                if rt.usage_calls >= USAGE_FLUSH_CALLS:
                    self._flush_usage(rt)
        elif input_tokens or output_tokens:
            tel.token_usage.record(input_tokens, rt.tokens_in)
            tel.token_usage.record(output_tokens, rt.tokens_out)

    # ------------------------------------------------------------ tool calls

    def _tool_kind(self, rt: _Run, name: str, run: RunHandle) -> _ToolKind:
        kind = rt.tool_attrs.get(name)
        if kind is None:
            tool = run.tools.get(name)
            attrs: dict[str, Any] = {c.OPERATION_NAME: c.OP_EXECUTE_TOOL, c.TOOL_NAME: name}
            if tool is not None and tool.group == "mcp" and "__" in name:
                server, _, remote = name.partition("__")
                attrs.update({c.TOOL_TYPE: "extension", c.MCP_METHOD_NAME: "tools/call", c.MCP_SERVER: server,
                              c.MCP_TOOL: remote})
            else:
                attrs[c.TOOL_TYPE] = "function"
            if tool is not None:
                attrs[c.TOOL_DESCRIPTION] = tool.description
            kind = rt.tool_attrs[name] = _ToolKind(name, attrs)
        return kind

    @hookimpl(trylast=True)  # last in the chain: the arguments as they will run
    def before_tool_call(self, tool_name: str, input: dict[str, Any], tool_call_id: str, run: RunHandle) -> None:
        rt = self._runs.get(run.run_id)
        if rt is None:
            return
        try:
            kind = rt.tool_attrs.get(tool_name) or self._tool_kind(rt, tool_name, run)
            attrs = {**kind.attrs, c.TOOL_CALL_ID: tool_call_id}
            capture = rt.capture
            if capture:
                from ._content import dump

                attrs[c.TOOL_CALL_ARGUMENTS] = dump(input, rt.redactor)
            tel = self._telemetry
            assert tel is not None
            start = time_ns()
            span = tel.tracer.start_span(kind.span_name, context=rt.ctx, kind=tel.INTERNAL, attributes=attrs,
                                         start_time=start)
            tool = rt.tools[tool_call_id] = _Tool(span, start, tool_name)
            tool.args_recorded = capture
            tool.token, tool.task = tel.attach(tel.set_span_in_context(span, rt.ctx)), _current_task()
        except Exception:  # before-hooks fail closed: telemetry must never block a call
            log.exception("smoke-otel: could not start the tool span (ignored)")

    @hookimpl
    def after_tool_call(self, tool_name: str, input: dict[str, Any], tool_call_id: str, result: ToolResult,
                        duration_ms: float, blocked: bool, error: AgentErrorInfo | None, run: RunHandle) -> None:
        rt = self._runs.get(run.run_id)
        if rt is None:
            return
        tel = self._telemetry
        assert tel is not None
        rt.tool_calls += 1
        tool = rt.tools.pop(tool_call_id, None)
        kind = rt.tool_attrs.get(tool_name) or self._tool_kind(rt, tool_name, run)
        if tool is None:  # refused before before_tool_call: invalid input, unknown tool, an earlier hook's block
            start = time_ns() - int(duration_ms * 1e6)
            attrs = {**kind.attrs, c.TOOL_CALL_ID: tool_call_id}
            tool = _Tool(tel.start_span(kind.span_name, rt.ctx, tel.INTERNAL, attrs, start), start, tool_name)
        span = tool.span
        if error is None and not rt.capture:
            span.set_attribute(c.TOOL_OUTCOME, "ok")  # the end's one attribute
        else:
            end: dict[str, Any]
            if error is None:
                end = {c.TOOL_OUTCOME: "ok"}
            else:
                outcome = "blocked" if blocked else c.TOOL_OUTCOMES.get(error.code, "error")
                end = {c.TOOL_OUTCOME: outcome, c.ERROR_TYPE: error.code}
                plugin = (error.details or {}).get("plugin") if blocked else None
                if plugin:
                    end[c.TOOL_BLOCKED_BY] = str(plugin)
                span.set_status(tel.ERROR, error.message)
            if rt.capture:
                from ._content import dump

                if not tool.args_recorded:
                    end[c.TOOL_CALL_ARGUMENTS] = dump(input, rt.redactor)
                end[c.TOOL_CALL_RESULT] = dump(
                    "\n".join(str(b.get("text", "")) for b in result.content if b.get("type") == "text"), rt.redactor
                )
            span.set_attributes(end)
        span.end()
        token = tool.token
        if token is not None:  # _detach, inline
            tool.token = None
            if tool.task is _current_task():
                tel.detach(token)
        if error is None:
            tel.tool_duration.record(duration_ms / 1000, kind.ok_metric)
        else:
            tel.failures.add(1, {c.ERROR_TYPE: error.code, c.OPERATION_NAME: c.OP_EXECUTE_TOOL})
            tel.tool_duration.record(duration_ms / 1000, {**kind.ok_metric, c.ERROR_TYPE: error.code})

    # ------------------------------------------------------------ events

    def _on_event(self, event: Event) -> None:
        rt = self._runs.get(event.run_id or "")
        if rt is None:
            return
        kind = event.type
        data = event.data
        if kind == "run.warning":
            self._on_warning(rt, data)
        elif kind == "hook.completed":
            self._on_hook(rt, event)
        else:
            call_id = str(data.get("tool_call_id") or "")
            tool = rt.tools.get(call_id)
            target = tool.span if tool is not None else rt.span
            if kind == "permission.required":
                target.add_event(c.EVENT_PERMISSION_REQUIRED, {
                    "smoke.permission.kind": str(data.get("kind") or ""),
                    "smoke.permission.name": str(data.get("tool_name") or ""),
                })
            elif kind == "permission.resolved":
                target.add_event(c.EVENT_PERMISSION_RESOLVED, {c.PERMISSION_DECISION: str(data.get("decision"))})

    def _on_hook(self, rt: _Run, event: Event) -> None:
        """A command hook's run (hook.completed): a span that ended when the event came, as long as it took,
        under the tool call's span when that is open, else under the run's."""
        tel = self._telemetry
        assert tel is not None
        data = event.data
        tool = rt.tools.get(str(data.get("tool_call_id") or ""))
        parent = tel.set_span_in_context(tool.span if tool is not None else rt.span)
        end = int(event.timestamp * 1_000_000_000)
        start = end - int(float(data.get("duration_ms") or 0) * 1_000_000)
        hook_event = str(data.get("hook_event") or "hook")
        attrs: dict[str, Any] = {
            c.OPERATION_NAME: c.OP_EXECUTE_HOOK, c.HOOK_EVENT: hook_event,
            c.HOOK_SOURCE: rt.redactor.redact(str(data.get("hook") or "")),
            c.HOOK_COMMAND: rt.redactor.redact(str(data.get("command") or "")),
            c.HOOK_DECISION: str(data.get("decision") or "none"),
        }
        if isinstance(data.get("exit_code"), int):
            attrs[c.HOOK_EXIT_CODE] = data["exit_code"]
        if data.get("error"):
            attrs[c.ERROR_TYPE] = "hook_failed"
        span = tel.start_span(f"execute_hook {hook_event}", parent, tel.INTERNAL, attrs, start)
        if data.get("error"):
            span.set_status(tel.ERROR, rt.redactor.redact(str(data["error"])))
        span.end(end_time=end)

    def _on_warning(self, rt: _Run, data: dict[str, Any]) -> None:
        tel = self._telemetry
        assert tel is not None
        err = data.get("error") or {}
        code = str(err.get("code") or "_OTHER")
        tel.warnings.add(1, {c.ERROR_TYPE: code})
        attrs: dict[str, Any] = {c.ERROR_TYPE: code, c.ERROR_MESSAGE: rt.redactor.redact(str(err.get("message", "")))}
        chat = rt.chat
        attempt = data.get("attempt")
        if attempt is not None and chat is not None:
            attrs[c.RETRY_ATTEMPT] = int(attempt)
            if data.get("retry_in_ms") is not None:
                attrs[c.RETRY_DELAY_MS] = int(data["retry_in_ms"])
            chat.span.add_event(c.EVENT_RETRY, attrs)
            chat.in_flight = True  # the next attempt starts after the wait
        else:
            rt.span.add_event(c.EVENT_WARNING, attrs)

    # ------------------------------------------------------------ agent

    @hookimpl
    async def close_agent(self) -> None:
        """Flush what smoke-otel configured itself, so a short-lived program
        loses no spans (an application's own providers are its business)."""
        if self._tracer_provider is not None or self._meter_provider is not None:
            return
        for provider in owned_providers():
            import asyncio

            await asyncio.to_thread(provider.force_flush, 10_000)

    # ------------------------------------------------------------ context

    def _detach(self, item: _Open) -> None:
        token = item.token
        if token is None:
            return
        item.token = None
        # a context token belongs to the task that attached it; in another task there is nothing to undo
        if item.task is _current_task() and self._telemetry is not None:
            self._telemetry.detach(token)
