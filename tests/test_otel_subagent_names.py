"""The task tool's subagent spans carry the agent definition's name
(smoke-tools-agent and smoke-otel together)."""

from __future__ import annotations

from typing import Any

import pytest

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider

pytestmark = pytest.mark.integration
agent_tools = pytest.importorskip("smoke_tools_agent")
pytest.importorskip("smoke_otel")


def test_a_task_subagent_span_is_named_by_its_definition(workspace):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from smoke_otel import OtelPlugin

    tp = TracerProvider()
    exporter = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    mp = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def turn(request: Any) -> Any:
        if request.messages[0]["content"][0]["text"] == "look around":
            return "nothing odd"
        if len(request.messages) == 1:
            return {"tool_calls": [{"name": "task", "input": {"description": "look", "prompt": "look around"}}]}
        return "done"

    agent = create_agent(workspace, provider=ScriptedProvider([turn] * 4), autoload_plugins=False,
                         plugins=[agent_tools, OtelPlugin(tracer_provider=tp, meter_provider=mp)])
    assert agent.run_sync("go").status == "completed"
    names = {s.name for s in exporter.get_finished_spans()}
    assert "invoke_agent general-purpose" in names and "invoke_agent smoke/task" not in names
