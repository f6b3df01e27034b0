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

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None, names: c.Names = c.LATEST) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        self.names = names
        self.latest = names.latest
        self.tracer = tp.get_tracer("smoke_otel", __version__, schema_url=names.schema_url)
        meter = mp.get_meter("smoke_otel", __version__, schema_url=names.schema_url)
        tokens, durations = list(c.TOKEN_BUCKETS), list(c.DURATION_BUCKETS)
        if names.latest:
            self.operation_duration = meter.create_histogram(
                c.METRIC_INFERENCE_DURATION, unit="s", description="GenAI client inference operation duration.",
                explicit_bucket_boundaries_advisory=durations,
            )
            #: the usage counters by the usage key Smoke reports them under
            self.usage_counters = {
                key: meter.create_counter(name, unit="{token}", description=description)
                for key, name, description in (
                    ("input_tokens", c.METRIC_USAGE_INPUT, "The number of input (prompt) tokens used, including "
                                                           "cached tokens."),
                    ("output_tokens", c.METRIC_USAGE_OUTPUT, "The number of output (completion) tokens used, "
                                                             "including reasoning tokens."),
                    ("cache_read_tokens", c.METRIC_USAGE_CACHE_READ, "The number of input tokens served from a "
                                                                     "provider-managed cache."),
                    ("cache_write_tokens", c.METRIC_USAGE_CACHE_WRITE, "The number of input tokens written to a "
                                                                       "provider-managed cache."),
                    ("reasoning_tokens", c.METRIC_USAGE_REASONING, "The number of output tokens used for "
                                                                   "reasoning."),
                )
            }
            self.operation_input_tokens = meter.create_histogram(
                c.METRIC_OPERATION_INPUT_TOKENS, unit="{token}",
                description="The number of input (prompt) tokens used per inference operation.",
                explicit_bucket_boundaries_advisory=tokens,
            )
            self.operation_output_tokens = meter.create_histogram(
                c.METRIC_OPERATION_OUTPUT_TOKENS, unit="{token}",
                description="The number of output (completion) tokens used per inference operation.",
                explicit_bucket_boundaries_advisory=tokens,
            )
            self.inference_calls = meter.create_histogram(
                c.METRIC_INFERENCE_CALLS, unit="{inference_call}",
                description="The number of inference operations in one agent invocation.",
                explicit_bucket_boundaries_advisory=list(c.CALL_BUCKETS),
            )
            self.tool_calls = meter.create_histogram(
                c.METRIC_TOOL_CALLS, unit="{tool_call}",
                description="The number of tool calls in one agent invocation.",
                explicit_bucket_boundaries_advisory=list(c.CALL_BUCKETS),
            )
        else:
            self.operation_duration = meter.create_histogram(
                c.METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=durations,
            )
            self.token_usage = meter.create_histogram(
                c.METRIC_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=tokens,
            )
        self.tool_duration = meter.create_histogram(
            c.METRIC_TOOL_DURATION, unit="s", description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=durations,
        )
        self.agent_duration = meter.create_histogram(
            c.METRIC_AGENT_DURATION, unit="s", description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=durations,
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
