"""Plan mode at a real terminal (issue 33, Done when): ``smoke run --plan``
and ``smoke chat`` with ``/plan`` in a pseudo-terminal, against a model
served over HTTP on 127.0.0.1 (smoke-provider-openai) with the real file
tools: a change is refused while planning, a rejection's words reach the
model, an edit in $EDITOR is the plan the model is told to carry out, and
approving with "accept edits" lets the edit run without a prompt."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from smoke_core.cli.chat import PROMPT
from smoke_core.testing import FakeProviderServer, RecordedRequest, Reply

from .test_cli import Pty, clean_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("smoke_provider_openai", "smoke_tools_filesystem")),
        reason="needs smoke-provider-openai and smoke-tools-filesystem installed",
    ),
]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(data)}\n\n".encode()


def _call(name: str, arguments: dict[str, Any], n: int) -> Reply:
    call = {"index": 0, "id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply.sse([_chunk({"role": "assistant", "tool_calls": [call]}), _chunk({}, "tool_calls"),
                      b"data: [DONE]\n\n"])


def _text(text: str) -> Reply:
    return Reply.sse([_chunk({"role": "assistant", "content": text}), _chunk({}, "stop"), b"data: [DONE]\n\n"])


def planner(request: RecordedRequest) -> Reply:
    """A model that tries to write first, then plans, revises a rejected plan, and writes once approved."""
    if not request.path.endswith("/chat/completions"):
        return Reply.json({"error": {"message": "not here"}}, status=404)
    messages = request.json["messages"]
    n = len(messages)
    last = messages[-1]
    said = str(last.get("content") or "") if last["role"] == "tool" else ""
    if last["role"] == "user":
        return _call("write_file", {"path": "NOTES.md", "content": "too early"}, n)
    if "plan mode is on" in said:
        return _call("exit_plan_mode", {"plan": "## Plan\n1. write notes.txt"}, n)
    if "rejected the plan" in said:
        return _call("exit_plan_mode", {"plan": "## Plan\n1. write NOTES.md"}, n)
    if "approved the plan" in said:
        return _call("write_file", {"path": "NOTES.md", "content": "hello\n"}, n)
    return _text("all done")


def tool_results(server: FakeProviderServer) -> list[str]:
    return [str(m.get("content")) for r in server.requests if r.path.endswith("/chat/completions")
            for m in r.json["messages"][-1:] if m["role"] == "tool"]


def env_for(tmp_path: Path, server: FakeProviderServer, **extra: str) -> dict[str, str]:
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai,tools_filesystem", OPENAI_API_KEY="sk-test",
                    COLUMNS="160", TERM="xterm", **extra)
    config = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"provider: openai\nmodel: gpt-test\nbase_url: {server.url}/v1\n")
    return env


def test_smoke_run_plan_reject_then_approve_with_accept_edits(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeProviderServer([planner] * 20) as server:
        term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--plan", "add notes"], ws, env_for(tmp_path, server))
        out = term.read_until("reject [n]")
        assert "plan to approve" in out and "write notes.txt" in out
        term.send("n\n")
        term.read_until("what should change?")
        term.send("call it NOTES.md\n")
        out = term.read_until("reject [n]")
        assert "write NOTES.md" in out and "rejected 1 of 3 times" in out
        term.send("a\n")
        assert term.finish() == 0, term.buffer[-3000:]
        shown = term.buffer
    results = tool_results(server)
    assert "plan mode is on" in results[0]  # the early write was refused, and the model was told why
    assert "rejected the plan: call it NOTES.md" in results[1]
    assert "approved the plan" in results[2] and "accept-edits" in results[2]
    assert (ws / "NOTES.md").read_text() == "hello\n"
    assert "allow once [y]" not in shown  # accept-edits: the edit ran without a prompt
    assert "permission mode: accept-edits" in shown


def test_chat_plan_command_edit_in_the_editor_then_approve(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text() + '2. and say so in README\\n')\n")
    with FakeProviderServer([planner] * 20) as server:
        env = env_for(tmp_path, server, EDITOR=f"{sys.executable} {editor}", VISUAL="")
        term = Pty([sys.executable, "-m", "smoke_core.cli", "chat"], ws, env)
        term.read_until(PROMPT)
        term.send("/plan add notes\n")
        out = term.read_until("reject [n]")
        assert "plan mode on" in out
        term.send("n\n")
        term.read_until("what should change?")
        term.send("NOTES.md please\n")
        term.read_until("reject [n]")
        term.send("e\n")
        term.read_until("accept edits [a]?")
        term.send("y\n")
        term.read_until("allow once [y]")  # ask-default: the write asks
        term.send("y\n")
        term.read_until("all done")
        term.read_until(PROMPT)
        term.send("/exit\n")
        assert term.finish() == 0, term.buffer[-3000:]
    approved = tool_results(server)[2]
    assert "after editing it" in approved and "2. and say so in README" in approved and "ask-default" in approved
    assert (ws / "NOTES.md").read_text() == "hello\n"


def test_without_a_terminal_a_plan_is_not_approved_and_nothing_changes(tmp_path):
    from .test_cli import smoke

    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeProviderServer([planner] * 20) as server:
        proc = smoke("run", "--plan", "--yes", "add notes", cwd=ws, env=env_for(tmp_path, server))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("no terminal is attached to approve it: rejected") == 3  # then the model is told to stop
    assert "rejected 3 plans" in tool_results(server)[-1]
    assert not (ws / "NOTES.md").exists()  # --yes does not answer a plan, and plan mode refused the write
