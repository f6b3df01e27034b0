"""Reading the standard variables: which exporters, which protocol, what is
reported. (Setting the global providers is tested in child processes, in
test_otel_otlp.py: a process can set them only once.)"""

from __future__ import annotations

import importlib.util
import io

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from smoke_otel import _setup
from smoke_otel._console import SpanTreePrinter


@pytest.mark.parametrize(("env", "names"), [
    ({}, []),
    ({"OTEL_SERVICE_NAME": "x"}, []),                                  # a name alone exports nothing
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, ["otlp"]),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ["otlp"]),
    ({"OTEL_TRACES_EXPORTER": "console, otlp"}, ["console", "otlp"]),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, []),
    ({"OTEL_TRACES_EXPORTER": "OTLP,none"}, ["otlp"]),
])
def test_which_trace_exporters_the_environment_asks_for(env, names):
    assert _setup._exporter_names(env, "traces") == names


def test_metrics_follow_their_own_variables():
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}
    assert _setup._exporter_names(env, "metrics") == []
    assert _setup._exporter_names({**env, "OTEL_METRICS_EXPORTER": "console"}, "metrics") == ["console"]


def test_otlp_http_protobuf_is_the_default_and_builds_the_exporter():
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    problems: list[str] = []
    exporter = _setup._make_exporter("otlp", "traces", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
                                     problems)
    assert isinstance(exporter, OTLPSpanExporter) and problems == []
    exporter.shutdown()


@pytest.mark.skipif(importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is not None,
                    reason="the gRPC exporter is installed here")
def test_grpc_without_its_package_says_what_to_install():
    problems: list[str] = []
    assert _setup._make_exporter("otlp", "traces", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, problems) is None
    assert problems == ["OTLP over grpc needs opentelemetry-exporter-otlp-proto-grpc, which is not installed, "
                        "so traces are not exported: pip install opentelemetry-exporter-otlp-proto-grpc"]


def test_console_exporters_write_to_stderr_not_stdout():
    import sys

    problems: list[str] = []
    assert _setup._make_exporter("console", "traces", {}, problems).out is sys.stderr
    assert _setup._make_exporter("console", "metrics", {}, problems).out is sys.stderr
    assert problems == []


def test_an_exporter_named_by_an_installed_package_is_used():
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    # "console" is also an entry point of the SDK; reach it through the generic lookup
    cls = _setup._entry_point("opentelemetry_traces_exporter", "console")
    assert cls is ConsoleSpanExporter
    assert _setup._entry_point("opentelemetry_traces_exporter", "no_such_exporter") is None


def test_the_span_tree_printer_prints_each_top_level_run_once():
    from opentelemetry import trace

    out = io.StringIO()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(SpanTreePrinter(out)))
    tracer = tp.get_tracer("t")
    root = tracer.start_span("invoke_agent smoke", attributes={"gen_ai.operation.name": "invoke_agent"})
    ctx = trace.set_span_in_context(root)
    chat = tracer.start_span("chat m", context=ctx, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2,
        "gen_ai.response.finish_reasons": ("stop",)})
    chat.end()
    sub = tracer.start_span("invoke_agent smoke/task", context=ctx, attributes={
        "gen_ai.operation.name": "invoke_agent", "smoke.run.depth": 1})
    tool = tracer.start_span("execute_tool look", context=trace.set_span_in_context(sub), attributes={
        "smoke.tool.outcome": "denied", "error.type": "permission_denied"})
    tool.set_status(trace.StatusCode.ERROR)
    tool.end()
    sub.end()
    assert out.getvalue() == ""  # nothing until the top-level run ends
    root.end()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"trace {root.get_span_context().trace_id:032x}"
    assert lines[1].startswith("invoke_agent smoke ")
    assert lines[2].startswith("├─ chat m ") and "tokens 5 in / 2 out" in lines[2] and "finish stop" in lines[2]
    assert lines[3].startswith("└─ invoke_agent smoke/task ")
    assert lines[4].startswith("   └─ execute_tool look ") and lines[4].endswith("denied  ERROR permission_denied")
    assert len(lines) == 5
