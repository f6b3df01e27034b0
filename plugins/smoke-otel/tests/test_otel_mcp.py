"""A real MCP server (mcp-server-time over stdio, through smoke-mcp): its
tool calls carry the server name; its start approval is an event of the run.
Needs smoke-mcp and mcp-server-time."""

from __future__ import annotations

import sys

import pytest
from opentelemetry.trace import StatusCode

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider

pytestmark = [pytest.mark.integration, pytest.mark.slow]
smoke_mcp = pytest.importorskip("smoke_mcp")
pytest.importorskip("mcp_server_time")


async def test_mcp_tool_calls_name_their_server(workspace, telemetry):
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "time__get_current_time", "id": "t1", "input": {"timezone": "Europe/Paris"}}]},
        {"tool_calls": [{"name": "time__get_current_time", "id": "t2", "input": {"timezone": "Mars/Olympus"}}]},
        "done",
    ])
    agent = create_agent(workspace, provider=provider, autoload_plugins=False, mcp_servers=servers,
                         plugins=[smoke_mcp, telemetry.plugin])
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    async with agent:
        result = await agent.run("what time is it in Paris?")
    assert result.status == "completed", result.error

    ok, bad = sorted(telemetry.named("execute_tool time__get_current_time"), key=lambda s: s.start_time)
    for span in (ok, bad):
        assert span.attributes["gen_ai.tool.type"] == "extension"
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["smoke.mcp.server"] == "time"
        assert span.attributes["smoke.mcp.tool"] == "get_current_time"
    assert ok.attributes["smoke.tool.outcome"] == "ok" and ok.status.status_code is StatusCode.UNSET
    assert bad.status.status_code is StatusCode.ERROR and bad.attributes["error.type"] == "tool_failed"
    # the server's start was approved during the run: an event on the run's span
    root = telemetry.one("invoke_agent smoke")
    started = [e for e in root.events if e.name == "smoke.permission.required"]
    assert started and started[0].attributes["smoke.permission.name"] == "time"
    assert any(e.name == "smoke.permission.resolved" for e in root.events)
