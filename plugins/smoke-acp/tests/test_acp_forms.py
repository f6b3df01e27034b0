"""A form an MCP server asks for (elicitation) reaches the editor as ACP's
``elicitation/create`` when the editor can show forms, and is declined with
a line saying why when it cannot. ``smoke acp`` in a subprocess, the real
smoke-mcp test server over stdio, the ACP SDK's client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    EnvVariable,
    McpServerStdio,
    TextContentBlock,
)

pytestmark = pytest.mark.slow
MCP_TEST_SERVER = Path(__file__).resolve().parents[2] / "smoke-mcp" / "tests" / "smoke_mcp_test_server.py"


def _server() -> McpServerStdio:
    return McpServerStdio(name="pizza", command=sys.executable, args=[str(MCP_TEST_SERVER)], env=[
        EnvVariable(name="UNUSED", value="1")])


async def _order(spawn: Any, tmp_path: Path, *, forms: bool) -> tuple[Any, str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    agent = await spawn(ws, [{"tool_calls": [{"name": "pizza__order_pizza", "input": {}}]}, "ordered"])
    agent.client.elicit = lambda message, mode: AcceptElicitationResponse(action="accept", content={"name": "Ann"})
    caps = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities())) if forms \
        else ClientCapabilities()
    await agent.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
    session = await agent.conn.new_session(cwd=str(ws), mcp_servers=[_server()])
    response = await agent.conn.prompt(session_id=session.session_id,
                                       prompt=[TextContentBlock(type="text", text="order a pizza")])
    assert response.stop_reason == "end_turn"
    assert await agent.stop() == 0
    assert agent.validate() > 0  # every line smoke acp wrote, elicitation/create included, is exact ACP
    results = [u for u in agent.client.of("tool_call_update") if u.content]
    text = " ".join(getattr(c.content, "text", "") for u in results for c in u.content or [])
    return agent, text


async def test_the_editor_fills_the_form_in(tmp_path: Path, spawn: Any) -> None:
    agent, text = await _order(spawn, tmp_path, forms=True)
    assert len(agent.client.elicitations) == 1
    message, mode = agent.client.elicitations[0]
    assert message == "MCP server 'pizza' asks: Which pizza do you want?"
    assert mode.requested_schema.required == ["name"] and "slices" in (mode.requested_schema.properties or {})
    # the editor sent only the name: Smoke applied the form's defaults before the server got it
    assert 'ordered {"extra_cheese": false, "name": "Ann", "size": "large", "slices": 8}' in text


async def test_an_editor_without_forms_declines_with_a_line_saying_why(tmp_path: Path, spawn: Any) -> None:
    agent, text = await _order(spawn, tmp_path, forms=False)
    assert agent.client.elicitations == []
    assert "no order (decline)" in text
    assert "your editor cannot show forms" in agent.client.text()
