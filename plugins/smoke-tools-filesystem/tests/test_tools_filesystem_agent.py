"""A real agent loop (ScriptedProvider) calling the filesystem tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import smoke_tools_filesystem

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider


def _tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if m["role"] == "tool" for b in m["content"] if b.get("type") == "tool_result"]


async def test_agent_reads_edits_and_patches(tmp_path: Path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "list_directory", "input": {}}, {"name": "read_file", "input": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {
            "path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"tool_calls": [{"name": "apply_patch", "input": {"patch": (
            "*** Begin Patch\n*** Add File: test_calc.py\n+from calc import add\n+assert add(2, 3) == 5\n"
            "*** End Patch")}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "../escape.txt"}}]},
        "Fixed add().",
    ])
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_tools_filesystem],
                         auto_approve=True)
    events: list[Any] = []
    agent.on_any(events.append)
    result = await agent.run("fix add")
    assert result.status == "completed" and result.text == "Fixed add()."
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (tmp_path / "test_calc.py").read_text() == "from calc import add\nassert add(2, 3) == 5\n"
    sent = {t["name"] for t in provider.requests[0].tools}
    assert set(smoke_tools_filesystem.TOOL_NAMES) <= sent
    results = _tool_results(result.messages)
    assert [r["is_error"] for r in results] == [False, False, False, False, True]
    completed = [e for e in events if getattr(e, "type", None) == "tool.completed"
                 or (isinstance(e, dict) and e.get("type") == "tool.completed")]
    assert len(completed) == 5
    first = completed[0] if isinstance(completed[0], dict) else completed[0].to_dict()
    assert first["data"]["presentation"]["group"] == "filesystem"


async def test_edit_needs_approval_without_auto_approve(tmp_path: Path):
    (tmp_path / "a.txt").write_text("old\n")
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "new\n"}}]},
        "done",
    ])
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_tools_filesystem],
                         permission="deny-all")
    result = await agent.run("write")
    assert result.status == "completed"
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert _tool_results(result.messages)[0]["is_error"] is True
