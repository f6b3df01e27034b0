"""Secrets stay secret (issue 12 item 5): a provider key that lands in a tool
result is `***` in the model's transcript, the SQLite session and `--json`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

KEY = "sk-proj-0123456789abcdefSECRET"


def _plugin(root: Path) -> Path:
    info = root / "smoke_redaction_probe-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-redaction-probe\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\nredaction_probe = smoke_redaction_probe\n")
    (root / "smoke_redaction_probe.py").write_text(textwrap.dedent(
        """
        from smoke_core.plugin import hookimpl, tool

        @hookimpl
        def register_providers(register):
            def factory(**kw):
                from smoke_core.testing import ScriptedProvider
                return ScriptedProvider([
                    {"tool_calls": [{"name": "show_file", "input": {"path": "deploy.log"}}]},
                    "done",
                ])
            register("probe", factory)

            def text_factory(**kw):
                from smoke_core.testing import ScriptedProvider
                key = __import__("os").environ["OPENAI_API_KEY"]
                # the model repeats the key it saw, split across small deltas
                return ScriptedProvider([{"thought": f"the key is {key}", "text": f"Your key is {key}, keep it safe."}],
                                        chunk_size=5)
            register("probe-text", text_factory)

        @hookimpl
        def register_tools(register):
            @tool(read_only=True, kind="read", permission_key="path")
            def show_file(path: str, ctx=None) -> str:
                "Show a file."
                return ctx.workspace.resolve(path).read_text()
            register(show_file)
        """
    ))
    return root


def _run_json(tmp_path, plug, ws, provider, task):
    """`smoke run --json` with the probe plugin and the key in the environment; its events,
    after checking the key appears in neither stdout nor stderr."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(plug), SMOKE_LOAD_PLUGINS="redaction_probe", OPENAI_API_KEY=KEY,
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), SMOKE_MANAGED_SETTINGS=str(tmp_path / "none.yaml"))
    proc = subprocess.run(
        [sys.executable, "-m", "smoke_core.cli", "run", "--json", "--provider", provider, "--session", "s1", task],
        cwd=ws, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stdout and KEY not in proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_key_in_a_tool_result_is_masked_in_the_session_and_the_json_stream(tmp_path):
    plug = _plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "deploy.log").write_text(f"exporting OPENAI_API_KEY={KEY} for the deploy\n")
    events = _run_json(tmp_path, plug, ws, "probe", "read the deploy log")
    done = next(e for e in events if e["type"] == "tool.completed")
    assert "OPENAI_API_KEY=*** for the deploy" in done["data"]["content"][0]["text"]
    db = sqlite3.connect(ws / ".smoke" / "sessions.db")
    stored = " ".join(row[0] for row in db.execute("SELECT content FROM messages"))
    db.close()
    assert KEY not in stored and "OPENAI_API_KEY=***" in stored


@pytest.mark.slow
def test_the_models_own_text_is_masked_in_events_json_and_the_session(tmp_path):
    """Issue 28 item 7: the key in the model's reply was plain in text.delta, text.end,
    run.completed and sessions.db, while tool results were masked."""
    plug = _plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    events = _run_json(tmp_path, plug, ws, "probe-text", "what is my key?")
    deltas = [e["data"]["text"] for e in events if e["type"] == "text.delta"]
    assert len(deltas) > 3 and "".join(deltas) == "Your key is ***, keep it safe."
    assert next(e for e in events if e["type"] == "text.end")["data"]["text"] == "Your key is ***, keep it safe."
    assert next(e for e in events if e["type"] == "run.completed")["data"]["text"] == "Your key is ***, keep it safe."
    assert "".join(e["data"]["text"] for e in events if e["type"] == "text.thought") == "the key is ***"
    db = sqlite3.connect(ws / ".smoke" / "sessions.db")
    stored = " ".join(row[0] for row in db.execute("SELECT content FROM messages"))
    db.close()
    assert KEY not in stored and "Your key is ***" in stored


def test_a_stream_redactor_masks_a_key_split_anywhere():
    from smoke_core.policy.secrets import Redactor, StreamRedactor

    text = f"a {KEY} b {KEY[:6]}x {KEY}"
    redactor = Redactor([KEY])
    for size in range(1, len(text) + 1):
        stream = StreamRedactor(redactor)
        pieces = [stream.feed(text[i:i + size]) for i in range(0, len(text), size)] + [stream.flush()]
        assert "".join(pieces) == f"a *** b {KEY[:6]}x ***", size
        assert all(KEY not in p for p in pieces)


async def test_hooks_and_exporters_see_the_models_text_masked(tmp_path, monkeypatch):
    """What after_model_call gets (smoke-otel exports it as the output messages) is the masked reply."""
    from smoke_core import create_agent, hookimpl
    from smoke_core.testing import ScriptedProvider

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen = []

    class Exporter:
        @hookimpl
        def after_model_call(self, response):
            seen.append(response)

    agent = create_agent(tmp_path, provider=ScriptedProvider([f"it is {KEY}"], chunk_size=3), plugins=[Exporter()])
    result = await agent.run("key?")
    assert result.text == "it is ***"
    assert seen[0]["content"] == [{"type": "text", "text": "it is ***"}]
    assert KEY not in str(result.messages)
