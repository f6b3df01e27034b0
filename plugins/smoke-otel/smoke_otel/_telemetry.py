"""The OpenTelemetry side: a tracer, a meter and the instruments, made once
per :class:`~smoke_otel.OtelPlugin` on its first run (this module imports
``opentelemetry``; the plugin module does not)."""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, StatusCode

from . import _conventions as c
from ._version import __version__

__all__ = ["Telemetry"]


class Telemetry:
    """Tracer, meter and instruments bound to the given providers (None =
    the global ones, through the API's proxies, so a provider set later
    still receives them), and the few API functions the plugin calls, so
    the plugin module itself never imports ``opentelemetry``."""

    ERROR = StatusCode.ERROR
    CLIENT = SpanKind.CLIENT
    INTERNAL = SpanKind.INTERNAL
    set_span_in_context = staticmethod(trace.set_span_in_context)
    attach = staticmethod(otel_context.attach)
    detach = staticmethod(otel_context.detach)
    get_current = staticmethod(otel_context.get_current)

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        self.tracer = tp.get_tracer("smoke_otel", __version__, schema_url=c.SCHEMA_URL)
        meter = mp.get_meter("smoke_otel", __version__, schema_url=c.SCHEMA_URL)
        self.token_usage = meter.create_histogram(
            c.METRIC_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(c.TOKEN_BUCKETS),
        )
        self.operation_duration = meter.create_histogram(
            c.METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(c.DURATION_BUCKETS),
        )
        self.tool_duration = meter.create_histogram(
            c.METRIC_TOOL_DURATION, unit="s", description="Duration of tool executions.",
            explicit_bucket_boundaries_advisory=list(c.DURATION_BUCKETS),
        )
        self.agent_duration = meter.create_histogram(
            c.METRIC_AGENT_DURATION, unit="s", description="Duration of agent invocations (Smoke runs).",
            explicit_bucket_boundaries_advisory=list(c.DURATION_BUCKETS),
        )
        self.warnings = meter.create_counter(
            c.METRIC_WARNINGS, unit="{warning}",
            description="run.warning events by error code (retries, hook failures, guard warnings).",
        )
        self.failures = meter.create_counter(
            c.METRIC_FAILURES, unit="{failure}",
            description="Failed runs, model calls and tool calls by error code and operation.",
        )

    def start_span(self, name: str, parent: Any, kind: Any, attributes: dict[str, Any],
                   start_time: int | None = None) -> Any:
        return self.tracer.start_span(name, context=parent, kind=kind, attributes=attributes,
                                      start_time=start_time)
