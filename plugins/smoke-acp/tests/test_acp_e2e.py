"""The scripted bug-fix run (tests/test_e2e.py) through ACP, from the SDK's
client: a plan, permission requests (allow-always remembered), the edit's
diff with its location, and the real tests passing at the end."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from acp.schema import TextContentBlock

from smoke_core.demo import copy_sample_project
from smoke_core.settings import user_settings_path

pytestmark = pytest.mark.slow

TEST_CMD = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"
OLD = '    values = list(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
NEW = OLD.replace("list(values)", "sorted(values)")
PLAN = [{"content": "Find median()", "status": "in_progress"}, {"content": "Fix it", "status": "pending"},
        {"content": "Run the tests", "status": "pending"}]
DONE = [{**t, "status": "completed"} for t in PLAN]


def unittest_passes(project: Path) -> bool:
    return subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=project,
                          capture_output=True).returncode == 0


def turns() -> list[dict]:
    return [
        {"tool_calls": [{"name": "todo_write", "input": {"todos": PLAN}}]},
        {"tool_calls": [{"name": "grep", "input": {"pattern": "def median"}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "stats/core.py"}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": TEST_CMD}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "stats/core.py", "old_string": OLD,
                                                        "new_string": NEW}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": TEST_CMD}}]},
        {"tool_calls": [{"name": "todo_write", "input": {"todos": DONE}}]},
        {"tool_calls": [{"name": "finish_task", "input": {"summary": "median() sorts its input now"}}]},
    ]


async def test_the_scripted_bug_fix_run_completes_through_acp(tmp_path: Path, spawn) -> None:
    project = copy_sample_project(tmp_path / "project")
    assert not unittest_passes(project)
    agent = await spawn(project, turns())
    client = agent.client
    client.answer = lambda r: "allow_always" if "run_test" in r.tool_call.title or "Run" in r.tool_call.title \
        else "allow_once"

    init = await agent.initialize()
    assert init.protocol_version == 1 and init.agent_capabilities.load_session is True
    session = await agent.conn.new_session(cwd=str(project), mcp_servers=[])
    assert session.modes.current_mode_id == "ask"
    response = await agent.conn.prompt(session_id=session.session_id,
                                       prompt=[TextContentBlock(type="text", text="Fix median()")])
    assert response.stop_reason == "end_turn"
    assert await agent.stop() == 0

    # permission requests: the first test command (answered allow-always) and the edit; the
    # second, identical test command was not asked
    asked = [(r.tool_call.kind, r.tool_call.title) for r in client.permissions]
    assert [k for k, _ in asked] == ["execute", "edit"], asked
    assert TEST_CMD in asked[0][1] and "stats/core.py" in asked[1][1]
    kinds = {o.kind for o in client.permissions[0].options}
    assert kinds == {"allow_once", "allow_always", "reject_once", "reject_always"}
    # the folder is not trusted, so "always" went to the person's own settings (as in the terminal)
    assert not (project / ".smoke" / "config.local.yaml").exists()
    user = yaml.safe_load(user_settings_path().read_text())
    assert user["permissions"]["allow"] == [f"run_test({TEST_CMD})"]
    assert f"rule run_test({TEST_CMD}) written to {user_settings_path()}" in client.text()

    # the edit: a diff with the exact old and new text, at the file and line of the change
    calls = {u.tool_call_id: u for u in client.of("tool_call")}
    edit = next(u for u in calls.values() if u.kind == "edit")
    diff = next(c for c in edit.content if c.type == "diff")
    assert diff.path == str(project / "stats" / "core.py")
    assert (diff.old_text, diff.new_text) == (OLD, NEW)
    assert edit.locations[0].path == str(project / "stats" / "core.py") and edit.locations[0].line == 16
    statuses = [u.status for u in client.of("tool_call_update") if u.tool_call_id == edit.tool_call_id]
    assert statuses == ["in_progress", "completed"]  # approved, then done
    read = next(u for u in calls.values() if u.kind == "read" and "core.py" in u.title)
    assert read.locations[0].path == str(project / "stats" / "core.py")
    assert {u.kind for u in calls.values()} >= {"search", "read", "execute", "edit"}

    # every call ended, in order, and the tests' output reached the editor
    finals = {u.tool_call_id: u.status for u in client.of("tool_call_update") if u.status in ("completed", "failed")}
    assert set(finals) == set(calls) and all(s == "completed" for s in finals.values()), finals
    outputs = [c.content.text for u in client.of("tool_call_update") for c in (u.content or [])
               if c.type == "content" and u.tool_call_id in calls and calls[u.tool_call_id].kind == "execute"]
    assert any("FAILED" in t for t in outputs) and any("OK" in t for t in outputs)

    # the plan, as todo_write left it each time
    plans = [[(e.content, e.status) for e in u.entries] for u in client.of("plan")]
    assert plans == [[(t["content"], t["status"]) for t in PLAN], [(t["content"], "completed") for t in PLAN]]
    assert client.of("usage_update")
    assert client.text().endswith("median() sorts its input now")  # finish_task's summary, shown

    assert "sorted(values)" in (project / "stats" / "core.py").read_text()
    assert unittest_passes(project)
    assert agent.validate() > 30
