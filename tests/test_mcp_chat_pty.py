"""An MCP server's form (elicitation) answered at the terminal in `smoke chat`,
through a pty: the same pause as ask_user, one prompt per field, a wrong value
asked again, the defaults applied. Needs smoke-mcp: ``integration``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .test_chat import PROMPT, chat_env
from .test_cli import Pty

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MCP_TEST_SERVER = Path(__file__).resolve().parents[1] / "plugins" / "smoke-mcp" / "tests" / "smoke_mcp_test_server.py"


def test_pty_chat_fills_in_an_mcp_servers_form(tmp_path: Path) -> None:
    pytest.importorskip("smoke_mcp")
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [{"tool_calls": [{"name": "t__order_pizza", "input": {}}]}, "ECHO_LAST_RESULT"]
    env = chat_env(tmp_path, turns, plugins="chat_scripted,mcp")
    config = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcp_servers": {"t": {"command": sys.executable, "args": [str(MCP_TEST_SERVER)],
                                                        "trusted": True}}}))
    term = Pty([sys.executable, "-m", "smoke_core.cli", "chat", "--provider", "chat-scripted"], ws, env)
    term.read_until(PROMPT)
    term.send("order a pizza\n")
    term.read_until("allow once [y]")  # the server's tool asks, as any tool that changes things
    term.send("y\n")
    out = term.read_until("> ")
    assert "? MCP server 't' asks: Which pizza do you want?" in out and "Name" in out and "*" in out
    term.send("Ann\n")
    out = term.read_until("> ")
    assert "Size" in out and "1. small" in out and "2. large" in out and "default large" in out
    term.send("1\n")
    out = term.read_until("> ")
    assert "Slices" in out and "default 8" in out
    term.send("20\n")
    out = term.read_until("> ")
    assert "'Slices' (slices) must be at most 12" in out  # asked again
    term.send("\n")  # keep the default
    out = term.read_until("> ")
    assert "Extra Cheese" in out and "yes/no" in out
    term.send("yes\n")
    term.read_until("send [y] / decline [n]")
    term.send("y\n")
    out = term.read_until(PROMPT)
    assert 'ordered {"extra_cheese": true, "name": "Ann", "size": "small", "slices": 8}' in out.replace("\r", "")
    term.send("/exit\n")
    assert term.finish() == 0
