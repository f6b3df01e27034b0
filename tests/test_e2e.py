"""Cross-plugin end-to-end runs: the real tool plugins fix a real bug."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

fs = pytest.importorskip("smoke_tools_filesystem")
search = pytest.importorskip("smoke_tools_search")
terminal = pytest.importorskip("smoke_tools_terminal")
agent_tools = pytest.importorskip("smoke_tools_agent")

from smoke_core import create_agent  # noqa: E402
from smoke_core.demo import copy_sample_project  # noqa: E402
from smoke_core.testing import ScriptedProvider  # noqa: E402

TEST_CMD = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"


def unittest_passes(project) -> bool:
    return subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=project,
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("sandbox", ["auto", "required"])
async def test_scripted_run_fixes_a_real_bug(tmp_path, sandbox):
    from smoke_core import sandbox as sandboxing

    if sandbox == "required" and not sandboxing.available():
        pytest.skip(f"the command sandbox cannot run here ({sandboxing.status().reason()})")
    project = copy_sample_project(tmp_path / "project")
    assert not unittest_passes(project)
    old = '    values = list(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
    new = old.replace("list(values)", "sorted(values)")
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "grep", "input": {"pattern": "def median"}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "stats/core.py"}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": TEST_CMD}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "stats/core.py", "old_string": old, "new_string": new}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": TEST_CMD}}]},
        {"tool_calls": [{"name": "finish_task", "input": {"summary": "median() sorts its input now"}}]},
    ])
    agent = create_agent(project, provider=provider, autoload_plugins=False,
                         plugins=[fs, search, terminal, agent_tools], sandbox={"mode": sandbox})
    asked = []
    commands = []
    agent.on("tool.completed", lambda e: commands.append(e.data) if e.data["tool_name"] == "run_test" else None)

    def approve(event):
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "allow")

    agent.on("permission.required", approve)
    phases = []
    agent.on("phase.changed", lambda e: phases.append(e.data["phase"]))
    result = await agent.run("Fix median()")
    await agent.aclose()

    assert result.status == "completed", result.error
    assert result.text == "median() sorts its input now"
    # the gate asked for the command (twice) and the edit, not for grep/read
    assert asked == ["run_test", "edit_file", "run_test"]

    def result_text(i):
        return "".join(c.get("text", "") for c in provider.requests[i].messages[-1]["content"][0]["content"])

    assert "stats/core.py" in result_text(1)              # grep found it
    assert "def median" in result_text(2)                 # read_file showed it
    assert "FAILED" in result_text(3)                     # tests failed before
    assert "OK" in result_text(5) and "FAILED" not in result_text(5)   # and pass after
    assert "sorted(values)" in (project / "stats" / "core.py").read_text()
    assert unittest_passes(project)
    assert phases[:2] == ["explore", "edit"] and "verify" in phases and phases[-1] == "complete"
    # both test runs went through the OS sandbox where it works (`auto`), and always under `required`
    assert len(commands) == 2
    assert all((c.get("data") or {}).get("sandboxed") is sandboxing.available() for c in commands), commands
