"""The wire: OTLP/HTTP protobuf to a real receiver on 127.0.0.1, decoded
with opentelemetry-proto — in process, and in a separate process configured
by the standard environment variables only."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider


@tool(read_only=True)
def probe(what: str) -> str:
    """Probe something."""
    return f"{what}: ok"


def tree(receiver: Any) -> dict[str, Any]:
    """span name -> parent span name, over the received spans (names must be unique)."""
    by_id = {s.span_id: s for _, _, s in receiver.spans}
    return {s.name: (by_id[s.parent_span_id].name if s.parent_span_id in by_id else None)
            for _, _, s in receiver.spans}


async def test_spans_and_metrics_go_over_otlp_http_protobuf(workspace, otlp_receiver):
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from smoke_otel import OtelPlugin

    resource = Resource.create({"service.name": "otlp-test"})
    tp = TracerProvider(resource=resource)
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_receiver.url}/v1/traces")))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{otlp_receiver.url}/v1/metrics"),
                                           export_interval_millis=3_600_000)
    mp = MeterProvider(resource=resource, metric_readers=[reader])
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "probe", "id": "p1", "input": {"what": "disk"}}],
         "usage": {"input_tokens": 30, "output_tokens": 7}},
        {"tool_calls": [{"name": "probe", "id": "p2", "input": {"wat": "typo"}}],
         "usage": {"input_tokens": 35, "output_tokens": 6}},
        {"text": "all good", "usage": {"input_tokens": 40, "output_tokens": 3}},
    ])
    agent = create_agent(workspace, provider=provider, tools=[probe], autoload_plugins=False, session_id="ses_1",
                         plugins=[OtelPlugin(tracer_provider=tp, meter_provider=mp)])
    result = await agent.run("check the disk")
    assert result.status == "completed"
    tp.force_flush()
    mp.force_flush()
    assert otlp_receiver.wait_for(lambda r: len(r.spans) == 6 and r.metrics)

    paths = {p for p, _ in otlp_receiver.requests}
    assert paths == {"/v1/traces", "/v1/metrics"}
    assert all(h["content-type"] == "application/x-protobuf" for _, h in otlp_receiver.requests)
    resource_attrs = otlp_receiver.attrs(otlp_receiver.spans[0][0].attributes)
    assert resource_attrs["service.name"] == "otlp-test"
    scope = otlp_receiver.spans[0][1]
    assert scope.name == "smoke_otel"

    [root] = otlp_receiver.span_named("invoke_agent smoke")
    assert root.kind == Span.SPAN_KIND_INTERNAL and not root.parent_span_id
    chats = otlp_receiver.span_named("chat scripted-model")
    tools = otlp_receiver.span_named("execute_tool probe")
    assert len(chats) == 3 and len(tools) == 2
    assert all(s.parent_span_id == root.span_id and s.trace_id == root.trace_id for s in chats + tools)
    assert all(s.kind == Span.SPAN_KIND_CLIENT for s in chats)
    first = min(chats, key=lambda s: s.start_time_unix_nano)
    a = otlp_receiver.attrs(first.attributes)
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.conversation.id"] == "ses_1"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (30, 7)
    assert a["gen_ai.response.finish_reasons"] == ["tool_calls"]
    ok, bad = sorted(tools, key=lambda s: s.start_time_unix_nano)
    assert otlp_receiver.attrs(ok.attributes)["gen_ai.tool.call.id"] == "p1"
    assert ok.status.code == Status.STATUS_CODE_UNSET
    assert bad.status.code == Status.STATUS_CODE_ERROR
    assert otlp_receiver.attrs(bad.attributes)["error.type"] == "tool_invalid_input"

    metrics = {m.name: m for _, m in otlp_receiver.metrics}
    # semantic-conventions-genai v0.1.0 (the default names)
    assert {"gen_ai.client.inference.duration", "gen_ai.client.inference.usage.input_tokens",
            "gen_ai.client.inference.usage.output_tokens", "gen_ai.client.inference.operation.input_tokens",
            "gen_ai.client.inference.operation.output_tokens", "gen_ai.invoke_agent.inference_calls",
            "gen_ai.invoke_agent.tool_calls", "gen_ai.execute_tool.duration", "gen_ai.invoke_agent.duration",
            "smoke.failures"} <= set(metrics)
    assert not {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} & set(metrics)
    for name, total in (("gen_ai.client.inference.usage.input_tokens", 105),
                        ("gen_ai.client.inference.usage.output_tokens", 16)):
        counter = metrics[name]
        assert counter.unit == "{token}" and counter.sum.is_monotonic, name
        [point] = counter.sum.data_points
        attrs = otlp_receiver.attrs(point.attributes)
        assert point.as_int == total and attrs["gen_ai.token.modality"] == "unknown", name
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.request.model"] == "scripted-model"
    [op_in] = metrics["gen_ai.client.inference.operation.input_tokens"].histogram.data_points
    assert (op_in.count, op_in.sum) == (3, 105)
    [calls] = metrics["gen_ai.invoke_agent.inference_calls"].histogram.data_points
    [tool_calls] = metrics["gen_ai.invoke_agent.tool_calls"].histogram.data_points
    assert (calls.count, calls.sum, tool_calls.sum) == (1, 3, 2)
    assert otlp_receiver.attrs(calls.attributes)["gen_ai.agent.name"] == "smoke"
    [duration] = metrics["gen_ai.client.inference.duration"].histogram.data_points
    assert duration.count == 3 and metrics["gen_ai.client.inference.duration"].unit == "s"
    assert set(otlp_receiver.schema_urls) == {"https://opentelemetry.io/schemas/1.45.0"}
    tp.shutdown()
    mp.shutdown()


async def test_the_legacy_names_on_request(workspace, otlp_receiver, monkeypatch):
    """OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_legacy: semantic-conventions v1.41.0's names, over OTLP."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from smoke_otel import OtelPlugin

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_legacy")
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_receiver.url}/v1/traces")))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{otlp_receiver.url}/v1/metrics"),
                                           export_interval_millis=3_600_000)
    mp = MeterProvider(metric_readers=[reader])
    provider = ScriptedProvider([{"text": "ok", "usage": {"input_tokens": 9, "output_tokens": 2,
                                                          "cache_write_tokens": 4}}])
    agent = create_agent(workspace, provider=provider, tools=[probe], autoload_plugins=False,
                         plugins=[OtelPlugin(tracer_provider=tp, meter_provider=mp)])
    assert (await agent.run("hi")).status == "completed"
    mp.force_flush()
    assert otlp_receiver.wait_for(lambda r: len(r.spans) == 2 and r.metrics)
    names = {m.name for _, m in otlp_receiver.metrics}
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= names
    assert not any(n.startswith("gen_ai.client.inference.") or n.startswith("gen_ai.invoke_agent.inference")
                   for n in names)
    [chat] = otlp_receiver.span_named("chat scripted-model")
    attrs = otlp_receiver.attrs(chat.attributes)
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 4 and "gen_ai.usage.cache_write.input_tokens" not in attrs
    assert set(otlp_receiver.schema_urls) == {"https://opentelemetry.io/schemas/1.41.0"}
    tp.shutdown()
    mp.shutdown()


# ---------------------------------------------------------------- configured by the environment only


def run_program(python: str, scripts: Any, env: dict[str, str], *args: str, timeout: float = 120) -> dict[str, Any]:
    proc = subprocess.run([python, str(scripts / "scripted_run.py"), *args], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_standard_variables_are_enough(python, scripts, child_env, otlp_receiver):
    env = child_env(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.url, OTEL_SERVICE_NAME="payments-agent",
                    OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test")
    report = run_program(python, scripts, env, "--hard-exit")
    assert report["status"] == "completed", report
    assert "smoke_otel" in report["plugins"]
    # the program ended with os._exit (no atexit flush): agent.aclose() flushed spans and metrics
    assert len(otlp_receiver.spans) == 4 and otlp_receiver.metrics
    resource = otlp_receiver.attrs(otlp_receiver.spans[0][0].attributes)
    assert resource["service.name"] == "payments-agent"
    assert resource["deployment.environment"] == "test"
    assert tree(otlp_receiver) == {
        "invoke_agent smoke": None, "chat scripted-model": "invoke_agent smoke",
        "execute_tool probe": "invoke_agent smoke",
    }
    [root] = otlp_receiver.span_named("invoke_agent smoke")
    assert otlp_receiver.attrs(root.attributes)["smoke.run.id"] == report["run_id"]
    assert {m.name for _, m in otlp_receiver.metrics} >= {"gen_ai.client.inference.usage.input_tokens",
                                                          "gen_ai.client.inference.duration"}


@pytest.mark.slow
def test_an_application_provider_gets_the_spans_and_smoke_configures_nothing(python, scripts, child_env,
                                                                              otlp_receiver):
    env = child_env(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.url)
    report = run_program(python, scripts, env, "--app-provider", "--in-span", "handle request")
    assert report["status"] == "completed", report
    names = sorted(s["name"] for s in report["app_spans"])
    assert names == ["chat scripted-model", "chat scripted-model", "execute_tool probe", "handle request",
                     "invoke_agent smoke"]
    spans = {s["name"]: s for s in report["app_spans"]}
    # a run started inside an application span is its child, in the same trace
    assert spans["invoke_agent smoke"]["parent"] == report["app_span"]["span_id"]
    assert {s["trace_id"] for s in report["app_spans"]} == {report["app_span"]["trace_id"]}
    # traces were left to the application's provider: Smoke sent none over OTLP itself (the program
    # has ended, so anything Smoke had configured was flushed by now). The application set no
    # MeterProvider, so metrics (a separate signal) did follow the OTLP variables.
    assert otlp_receiver.spans == []
    assert {p for p, _ in otlp_receiver.requests} == {"/v1/metrics"}


@pytest.mark.slow
def test_an_exporter_nobody_provides_is_reported_not_fatal(python, scripts, child_env):
    env = child_env(OTEL_TRACES_EXPORTER="zipkin_nope", OTEL_EXPORTER_OTLP_PROTOCOL="http/json")
    env["OTEL_METRICS_EXPORTER"] = "otlp"
    report = run_program(python, scripts, env)
    assert report["status"] == "completed"
    joined = " | ".join(report["warnings"])
    assert "OTEL_TRACES_EXPORTER names 'zipkin_nope'" in joined
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is not supported" in joined


@pytest.mark.slow
@pytest.mark.integration
def test_done_when_the_scripted_bugfix_run_exports_one_trace(python, scripts, child_env, otlp_receiver):
    """The scripted e2e bug-fix run (real tool plugins, real file edit, real
    unittest) exports one trace with the expected tree and conventional
    attributes, through OTLP/HTTP, configured by the standard variables."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    for module in ("smoke_tools_filesystem", "smoke_tools_search", "smoke_tools_terminal", "smoke_tools_agent"):
        pytest.importorskip(module)
    env = child_env(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.url, OTEL_SERVICE_NAME="smoke-e2e",
                    OTEL_TRACES_EXPORTER="otlp", OTEL_METRICS_EXPORTER="none")
    report = run_program(python, scripts, env, "--bugfix", timeout=300)
    assert report["status"] == "completed" and report["fixed"], report
    assert otlp_receiver.wait_for(lambda r: len(r.spans) == 13)
    assert {p for p, _ in otlp_receiver.requests} == {"/v1/traces"}  # metrics: none

    spans = [s for _, _, s in otlp_receiver.spans]
    assert len({s.trace_id for s in spans}) == 1
    [root] = otlp_receiver.span_named("invoke_agent smoke")
    assert not root.parent_span_id
    children = sorted((s for s in spans if s is not root), key=lambda s: s.start_time_unix_nano)
    assert all(s.parent_span_id == root.span_id for s in children)
    assert [s.name for s in children] == [
        "chat scripted-model", "execute_tool grep",
        "chat scripted-model", "execute_tool read_file",
        "chat scripted-model", "execute_tool run_test",
        "chat scripted-model", "execute_tool edit_file",
        "chat scripted-model", "execute_tool run_test",
        "chat scripted-model", "execute_tool finish_task",
    ]
    A = otlp_receiver.attrs
    root_attrs = A(root.attributes)
    assert root_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert root_attrs["gen_ai.agent.name"] == "smoke"
    assert root_attrs["gen_ai.provider.name"] == "scripted"
    assert root_attrs["gen_ai.request.model"] == "scripted-model"
    assert root_attrs["gen_ai.conversation.id"] == "ses_e2e"
    assert root_attrs["smoke.run.status"] == "completed" and root_attrs["smoke.run.steps"] == 6
    assert root_attrs["gen_ai.usage.input_tokens"] > 0
    assert root.status.code == Status.STATUS_CODE_UNSET
    assert A(otlp_receiver.spans[0][0].attributes)["service.name"] == "smoke-e2e"
    for chat in (s for s in children if s.name.startswith("chat")):
        a = A(chat.attributes)
        assert chat.kind == Span.SPAN_KIND_CLIENT
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "scripted"
        assert a["gen_ai.request.model"] == "scripted-model"
        assert a["gen_ai.response.finish_reasons"] == ["tool_calls"]
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    for call in (s for s in children if s.name.startswith("execute_tool")):
        a = A(call.attributes)
        assert call.kind == Span.SPAN_KIND_INTERNAL
        assert a["gen_ai.operation.name"] == "execute_tool"
        assert a["gen_ai.tool.name"] == call.name.removeprefix("execute_tool ")
        assert a["gen_ai.tool.type"] == "function" and a["gen_ai.tool.call.id"]
        assert a["smoke.tool.outcome"] == "ok", (call.name, a)
        assert call.status.code == Status.STATUS_CODE_UNSET
        assert "gen_ai.tool.call.arguments" not in a  # content is off by default
    # the two commands and the edit asked for approval; grep/read did not
    asked = [s.name for s in children if any(e.name == "smoke.permission.required" for e in s.events)]
    assert asked == ["execute_tool run_test", "execute_tool edit_file", "execute_tool run_test"]
