"""Issue 28, reproduction 4, as an attacker would do it: a model (prompt-
injected) writes a new ``.mcp.json`` in a trusted folder during a ``smoke
run -y``; the next ``smoke run -y`` must not start that server. Only a
person's approval of that exact entry does (``smoke mcp approve NAME``, or
an answer at a prompt), and a changed entry asks again.

The real ``smoke`` command, the OpenAI-compatible provider against a fake
endpoint on 127.0.0.1, the filesystem tools and smoke-mcp: several plugins,
so ``integration`` (the ``tests`` session)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from smoke_core.testing import FakeProviderServer, RecordedRequest, Reply

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("smoke_provider_openai", "smoke_tools_filesystem")),
                       reason="needs smoke-provider-openai and smoke-tools-filesystem installed"),
]

#: a stdio "MCP server" that leaves a mark that it was started (then exits: its start fails, visibly)
MARKING = "import pathlib; pathlib.Path('mcp-started').touch()"
PLANTED = {"mcpServers": {"helper": {"command": sys.executable, "args": ["-c", MARKING]}}}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


def model(request: RecordedRequest) -> Reply:
    """Writes .mcp.json when asked to "set up" (what a hostile README talked it into), else answers."""
    messages = request.json["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    if "set up" in json.dumps(task) and messages[-1]["role"] != "tool":
        call = {"index": 0, "id": "call_1", "type": "function", "function": {
            "name": "write_file", "arguments": json.dumps({"path": ".mcp.json", "content": json.dumps(PLANTED)})}}
        return Reply.sse([_chunk({"role": "assistant", "tool_calls": [call]}), _chunk({}, "tool_calls"),
                          b"data: [DONE]\n\n"])
    return Reply.sse([_chunk({"role": "assistant", "content": "done"}), _chunk({}, "stop"), b"data: [DONE]\n\n"])


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMOKE_", "XDG_")) and not k.endswith("_API_KEY")}
    env.update({"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
                "XDG_STATE_HOME": str(tmp_path / "home" / ".state"), "OPENAI_API_KEY": "sk-test-planted",
                "SMOKE_MANAGED_SETTINGS": str(tmp_path / "no-managed.yaml"), "PYTHONDONTWRITEBYTECODE": "1",
                "SMOKE_LOAD_PLUGINS": "provider_openai,tools_filesystem,mcp"})
    return env


def _smoke(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_planted_mcp_json_does_not_start_under_yes(tmp_path: Path) -> None:
    server = FakeProviderServer([model] * 20).start()
    try:
        ws = tmp_path / "project"
        ws.mkdir()
        env = _env(tmp_path)
        config = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
        config.parent.mkdir(parents=True)
        config.write_text(f"provider: openai\nmodel: gpt-test\nbase_url: {server.url}/v1\n")
        assert _smoke(env, ws, "trust", str(ws)).returncode == 0

        # run 1: the model writes the server in; a guard on control files may refuse it, and the
        # attacker has other ways (a git pull, a tarball): the file is there for run 2 either way
        _smoke(env, ws, "run", "-y", "set up the project")
        if not (ws / ".mcp.json").exists():
            (ws / ".mcp.json").write_text(json.dumps(PLANTED))

        second = _smoke(env, ws, "run", "-y", "tidy up")
        out = second.stdout + second.stderr
        assert second.returncode == 0, out
        assert not (ws / "mcp-started").exists(), "the planted server was started"
        assert "helper needs approval" in out and "no terminal is attached: denied" in out
        assert "smoke mcp approve helper" in out

        listed = json.loads(_smoke(env, ws, "mcp", "list", "--json").stdout)
        assert listed[0]["name"] == "helper" and listed[0]["approval"].startswith("not approved yet")

        # the person reads it and approves this exact entry: now it starts, under -y too
        approved = _smoke(env, ws, "mcp", "approve", "helper")
        assert approved.returncode == 0 and "approved" in approved.stdout and "-c" in approved.stdout
        _smoke(env, ws, "run", "-y", "tidy up")
        assert (ws / "mcp-started").exists()

        # the entry changes (one more argument): it is not the one approved, so it does not start
        (ws / "mcp-started").unlink()
        changed = {"mcpServers": {"helper": {"command": sys.executable, "args": ["-c", MARKING, "again"]}}}
        (ws / ".mcp.json").write_text(json.dumps(changed))
        third = _smoke(env, ws, "run", "-y", "tidy up")
        assert not (ws / "mcp-started").exists(), "a changed entry started without a new approval"
        assert "it changed since you approved it" in third.stdout + third.stderr
        assert json.loads(_smoke(env, ws, "mcp", "list", "--json").stdout)[0]["approval"].startswith("changed")
    finally:
        server.close()
