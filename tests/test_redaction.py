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


@pytest.mark.slow
def test_a_key_in_a_tool_result_is_masked_in_the_session_and_the_json_stream(tmp_path):
    plug = _plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "deploy.log").write_text(f"exporting OPENAI_API_KEY={KEY} for the deploy\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(plug), SMOKE_LOAD_PLUGINS="redaction_probe", OPENAI_API_KEY=KEY,
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), SMOKE_MANAGED_SETTINGS=str(tmp_path / "none.yaml"))
    proc = subprocess.run(
        [sys.executable, "-m", "smoke_core.cli", "run", "--json", "--provider", "probe", "--session", "s1",
         "read the deploy log"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stdout and KEY not in proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    done = next(e for e in events if e["type"] == "tool.completed")
    assert "OPENAI_API_KEY=*** for the deploy" in done["data"]["content"][0]["text"]
    db = sqlite3.connect(ws / ".smoke" / "sessions.db")
    stored = " ".join(row[0] for row in db.execute("SELECT content FROM messages"))
    db.close()
    assert KEY not in stored and "OPENAI_API_KEY=***" in stored
