"""The ``task`` tool: subagents from code and from agent files, under the
parent's policy, nested in the parent's events."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_agent
from smoke_tools_agent._subagents import parse_agent_file

from smoke_core import create_agent
from smoke_core.plugin import tool
from smoke_core.testing import ScriptedProvider

RUNNING: list[str] = []


@tool(read_only=True, kind="read", permission_key="path")
async def read_file(path: str) -> str:
    """Read a file."""
    RUNNING.append(path)
    await asyncio.sleep(0.05)
    RUNNING.append(f"done {path}")
    return f"contents of {path}"


@tool(kind="edit", permission_key="path")
def write_file(path: str, content: str, ctx: Any = None) -> str:
    """Write a file."""
    ctx.workspace.resolve(path, write=True).write_text(content)
    return f"wrote {path}"


def call(name: str, **input: Any) -> dict[str, Any]:
    return {"name": name, "input": input}


def conversations(script: dict[str, list[Any]]) -> Any:
    """A turn for every conversation, chosen by its first user message."""
    def turn(request: Any) -> Any:
        return script[request.messages[0]["content"][0]["text"]].pop(0)
    return turn


def make(tmp_path: Path, script: dict[str, list[Any]], **kw: Any) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider([conversations(script)] * sum(len(v) for v in script.values()))
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_tools_agent],
                         tools=[read_file, write_file, "agent"], **kw)
    return agent, provider


SUBAGENTS = {
    "explorer": {"description": "Reads code to answer questions.", "tools": ["read_file"],
                 "prompt": "You explore code and answer briefly."},
    "editor": {"description": "Makes one small edit.", "tools": ["read_file", "write_file"]},
}


async def test_two_read_only_tasks_run_at_once_an_editing_one_asks_and_the_parent_sees_only_answers(tmp_path):
    RUNNING.clear()
    script = {
        "fix the config": [
            {"tool_calls": [
                call("task", description="find a", prompt="where is a?", agent="explorer"),
                call("task", description="find b", prompt="where is b?", agent="explorer"),
                call("task", description="edit c", prompt="write c.txt", agent="editor"),
            ]},
            "all three done",
        ],
        "where is a?": [{"tool_calls": [call("read_file", path="a.py")]}, "a is in a.py"],
        "where is b?": [{"tool_calls": [call("read_file", path="b.py")]}, "b is in b.py"],
        "write c.txt": [{"tool_calls": [call("write_file", path="c.txt", content="c")]}, "c written"],
    }
    agent, provider = make(tmp_path, script, subagents=SUBAGENTS)
    events: list[Any] = []
    agent.on_any(events.append)
    asked: list[Any] = []

    def approve(e: Any) -> None:
        asked.append(e.data)
        agent.resolve_permission(e.data["tool_call_id"], "allow")

    agent.on("permission.required", approve)
    result = await agent.run("fix the config")
    assert result.status == "completed", result.error
    # the two explorers read at the same time; the editor ran on its own, after them
    assert RUNNING[:2] == ["a.py", "b.py"]
    # the editing subagent asked exactly as the parent would, nested under its task call
    task_ids = [b["id"] for b in result.messages[1]["content"] if b["type"] == "tool_call"]
    assert [(a["tool_name"], a["parent_tool_call_id"]) for a in asked] == [("write_file", task_ids[2])]
    assert (tmp_path / "c.txt").read_text() == "c"
    # the parent's transcript holds the answers only
    answers = [b["content"][0]["text"] for b in result.messages[2]["content"]]
    assert answers == ["a is in a.py", "b is in b.py", "c written"]
    assert "contents of a.py" not in str(result.messages)
    # the explorer got its own system prompt and only its tools
    explorer_call = next(r for r in provider.requests if r.messages[0]["content"][0]["text"] == "where is a?")
    assert explorer_call.system == "You explore code and answer briefly."
    assert [t["name"] for t in explorer_call.tools] == ["read_file"]
    # every subagent event is nested under its task call
    nested = {e.data.get("parent_tool_call_id") for e in events if e.type == "tool.started"
              and e.data["tool_name"] in ("read_file", "write_file")}
    assert nested == set(task_ids)


async def test_agent_files_from_the_workspace_and_the_home_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".claude" / "agents").mkdir(parents=True)
    (home / ".claude" / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Personal reviewer.\n---\nYou review (personal).\n")
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Project reviewer.\ntools: read_file\nmodel: inherit\n---\n"
        "You review (project).\n")
    (ws / ".claude" / "agents" / "broken.md").write_text("no front matter here")
    script = {"review": [{"tool_calls": [call("task", description="r", prompt="look", agent="reviewer")]}, "ok"],
              "look": ["looks fine"]}
    agent, provider = make(ws, script, trust_workspace=True)
    warnings: list[Any] = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("review")
    assert result.status == "completed"
    child = next(r for r in provider.requests if r.messages[0]["content"][0]["text"] == "look")
    assert child.system == "You review (project)."  # the project's file wins over the person's
    assert any("broken.md" in w.data["error"]["message"] and "front matter" in w.data["error"]["message"]
               for w in warnings)
    task = next(t for t in provider.requests[0].tools if t["name"] == "task")
    assert "reviewer: Project reviewer." in task["description"]


async def test_unknown_agent_type_and_depth_limit_are_clear_errors(tmp_path):
    script = {
        "go": [{"tool_calls": [call("task", description="x", prompt="one", agent="nope")]},
               {"tool_calls": [call("task", description="x", prompt="one")]}, "done"],
        "one": [{"tool_calls": [call("task", description="y", prompt="two")]}, "one done"],
        "two": [{"tool_calls": [call("task", description="z", prompt="three")]}, "two done"],
    }
    agent, _ = make(tmp_path, script)
    completed: list[Any] = []
    agent.on("tool.completed", completed.append)
    result = await agent.run("go")
    assert result.status == "completed"
    texts = [c.data["content"][0]["text"] for c in completed if c.data["is_error"]]
    assert any("'nope' is not one of" in t and "general-purpose" in t for t in texts)  # the schema lists the types
    assert any("nest at most 2 deep" in t for t in texts)


def test_broken_front_matter_says_what_is_wrong(tmp_path):
    bad = tmp_path / "a.md"
    bad.write_text("---\nname: Bad Name\ndescription: x\n---\nbody")
    with pytest.raises(ValueError, match="name must be lowercase"):
        parse_agent_file(bad)
    bad.write_text("---\nname: ok\n---\nbody")
    with pytest.raises(ValueError, match="description is missing"):
        parse_agent_file(bad)
    bad.write_text("---\nname: [unclosed\n---\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        parse_agent_file(bad)


async def test_a_subagent_file_from_an_untrusted_folder_can_only_tighten(tmp_path, monkeypatch):
    """Issue 28 item 7: a repository's `.smoke/agents/worker.md` with max_steps 100000
    ran 41 steps under the person's limit of 3."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    (ws / ".smoke" / "agents").mkdir(parents=True)
    (ws / ".smoke" / "agents" / "worker.md").write_text(
        "---\nname: worker\ndescription: Does the work.\nmax_steps: 100000\npermissionMode: bypassPermissions\n"
        "---\nKeep going.\n")
    (ws / ".smoke" / "agents" / "quick.md").write_text(
        "---\nname: quick\ndescription: Two steps at most.\nmax_steps: 2\n---\nBe quick.\n")
    loop = [{"tool_calls": [call("read_file", path=f"f{i}")]} for i in range(10)]
    script = {"go": [{"tool_calls": [call("task", description="w", prompt="work", agent="worker")]},
                     {"tool_calls": [call("task", description="q", prompt="hurry", agent="quick")]}, "done"],
              "work": list(loop), "hurry": list(loop)}
    agent, provider = make(ws, script, trust_workspace=False, max_steps=3)
    warnings: list[Any] = []
    agent.on("run.warning", warnings.append)
    done: list[Any] = []
    agent.on("tool.completed", lambda e: done.append(e.data) if e.data["tool_name"] == "task" else None)
    await agent.run("go")
    worker, _quick = done
    assert worker["is_error"] and worker["content"][0]["text"].startswith("the worker subagent did not finish")
    assert "max_steps=3" in worker["content"][0]["text"]
    work_calls = [r for r in provider.requests if r.messages[0]["content"][0]["text"] == "work"]
    assert len(work_calls) == 3  # the parent's limit, not the file's 100000
    hurry_calls = [r for r in provider.requests if r.messages[0]["content"][0]["text"] == "hurry"]
    assert len(hurry_calls) == 2  # a tighter limit holds
    from smoke_tools_agent import _warnings

    assert any("permissionMode" in w and "not trusted" in w for w in _warnings[str(ws.resolve())])


def test_a_trusted_folders_subagent_keeps_its_own_limit():
    from smoke_tools_agent._subagents import AgentType, step_limit

    assert step_limit(AgentType("w", "d", max_steps=100), 3) == 100
    assert step_limit(AgentType("w", "d", max_steps=100, untrusted=True), 3) == 3
    assert step_limit(AgentType("w", "d", untrusted=True), 3) == 3
    assert step_limit(AgentType("w", "d", max_steps=2, untrusted=True), 3) == 2
