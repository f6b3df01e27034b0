"""``smoke acp`` driven by the official TypeScript SDK (@agentclientprotocol/sdk,
installed by ``npm ci`` in tests/node): a client this project did not write."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from .conftest import PLUGINS

pytestmark = pytest.mark.slow

NODE_DIR = Path(__file__).parent / "node"
SDK = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"


def _require_node() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed, so the TypeScript ACP SDK cannot run")
    if not SDK.is_file():
        pytest.skip(f"@agentclientprotocol/sdk is not installed: run `npm ci` in {NODE_DIR}")


async def test_the_typescript_sdk_client_runs_a_prompt_with_allow_always(tmp_path: Path, plugin_dir: Path) -> None:
    _require_node()
    ws = tmp_path / "ws"
    ws.mkdir()
    command = "echo from-the-command"
    turns = [{"text": "Running it.", "tool_calls": [{"name": "run_command", "input": {"command": command}}]},
             {"tool_calls": [{"name": "run_command", "input": {"command": command}}]},
             {"tool_calls": [{"name": "todo_write", "input": {"todos": [{"content": "run it twice",
                                                                        "status": "completed"}]}}]},
             "Ran it twice."]
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "SMOKE_LOAD_PLUGINS": PLUGINS,
           "SMOKE_ACP_TURNS": str(tmp_path / "turns.json")}
    proc = await asyncio.create_subprocess_exec(
        "node", str(NODE_DIR / "ts_client.mjs"), sys.executable, str(ws), "--provider", "acp-scripted",
        cwd=NODE_DIR, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])

    assert seen["init"]["protocolVersion"] == 1 and seen["init"]["agentCapabilities"]["loadSession"] is True
    assert seen["session"]["sessionId"].startswith("ses_")
    assert {m["id"] for m in seen["session"]["modes"]["availableModes"]} == {"ask", "plan", "accept-edits",
                                                                             "read-only", "allow-all"}
    assert seen["prompt"]["stopReason"] == "end_turn"
    assert seen["unknown"]["code"] == -32601
    assert seen["exitCode"] == 0
    # asked once (answered allow_always); the same command again was not asked
    assert len(seen["permissions"]) == 1
    request = seen["permissions"][0]
    assert request["toolCall"]["kind"] == "execute" and command in request["toolCall"]["title"]
    assert [o["kind"] for o in request["options"]] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    kinds = [u["sessionUpdate"] for u in seen["updates"]]
    assert kinds.count("tool_call") == 3 and "plan" in kinds and "usage_update" in kinds
    finished = [u for u in seen["updates"] if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
    assert len(finished) == 3
    outputs = [c["content"]["text"] for u in finished for c in u.get("content", []) if c["type"] == "content"]
    assert sum("from-the-command" in t for t in outputs) == 2
    said = "".join(u["content"]["text"] for u in seen["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert said.startswith("Running it.") and "always allowed: rule run_command(echo from-the-command)" in said
    assert said.endswith("Ran it twice.")
