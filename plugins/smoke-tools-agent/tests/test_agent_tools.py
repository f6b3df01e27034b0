"""Tests for smoke-tools-agent, mostly through real agent runs with ScriptedProvider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import smoke_tools_agent
from smoke_tools_agent._tools import TODOS_KEY, build_tools, finish_task, todo_write

from smoke_core import create_agent
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context

TOOLS = ("todo_write", "ask_user", "finish_task", "task")


def _agent(tmp_path: Path, turns: list[Any], asked: list[Any] | None = None) -> Any:
    """A read-only agent (``deny-all`` lets read-only tools run and denies the
    rest); ``asked`` records any permission prompt, which must never happen."""
    seen = asked if asked is not None else []
    agent = create_agent(
        tmp_path,
        provider=ScriptedProvider(turns),
        autoload_plugins=False,
        plugins=[smoke_tools_agent],
        permission="deny-all",
    )
    agent.on("permission.required", lambda e: seen.append(e.data["tool_name"]))
    return agent


def _tool_results(provider: ScriptedProvider, call: int) -> list[dict[str, Any]]:
    messages = provider.requests[call].messages
    return [b for m in messages if m["role"] == "tool" for b in m["content"]]


# ---------------------------------------------------------------- registration


async def test_registers_four_tools_none_needing_approval(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [])
    assert set(agent.tools) == set(TOOLS)
    presentations = agent.get_tool_presentations()
    for name in TOOLS:
        tool = agent.tools[name]
        assert tool.group == "agent"
        assert tool.annotations.read_only_hint is True
        assert presentations[name]["icon"] and presentations[name]["label"]


# ---------------------------------------------------------------- todo_write


async def test_todo_write_in_a_run_emits_todo_updated_and_needs_no_approval(tmp_path: Path) -> None:
    todos = [
        {"content": "Read the failing test", "status": "completed"},
        {"content": "Fix the parser", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
        {"content": "Rewrite everything", "status": "cancelled"},
    ]
    turns = [{"tool_calls": [{"id": "t1", "name": "todo_write", "input": {"todos": todos}}]}, "ok"]
    asked: list[str] = []
    agent = _agent(tmp_path, turns, asked)
    updates: list[Any] = []
    agent.on("todo.updated", lambda e: updates.append(e.data))
    result = await agent.run("plan it")
    assert result.status == "completed"
    assert asked == []
    assert updates == [{"tool_call_id": "t1", "todos": todos}]
    [block] = _tool_results(agent.provider, 1)
    assert block["is_error"] is False
    assert block["content"][0]["text"] == (
        "Todos (1/4 completed, 2 open):\n"
        "[x] Read the failing test\n"
        "[>] Fix the parser\n"
        "[ ] Run the tests\n"
        "[-] Rewrite everything"
    )


def test_todo_write_keeps_the_list_in_run_state(tmp_path: Path) -> None:
    events: list[Any] = []
    ctx = make_tool_context(tmp_path, tool_name="todo_write", events=events)
    todo_write({"todos": [{"content": " step one ", "status": "pending"}]}, ctx)
    assert ctx.state[TODOS_KEY] == [{"content": "step one", "status": "pending"}]
    result = todo_write({"todos": []}, ctx)
    assert result.text_content() == "Todo list cleared."
    assert ctx.state[TODOS_KEY] == []
    assert [t for t, _ in events] == ["todo.updated", "todo.updated"]


def test_todo_write_refuses_two_in_progress(tmp_path: Path) -> None:
    events: list[Any] = []
    ctx = make_tool_context(tmp_path, tool_name="todo_write", events=events)
    todos = [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "in_progress"}]
    with pytest.raises(ToolError, match="at most one may be in_progress"):
        todo_write({"todos": todos}, ctx)
    assert events == []  # nothing emitted for a refused list
    assert TODOS_KEY not in ctx.state


async def test_two_in_progress_reaches_the_model_as_a_tool_error(tmp_path: Path) -> None:
    todos = [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "in_progress"}]
    turns = [{"tool_calls": [{"name": "todo_write", "input": {"todos": todos}}]}, "ok"]
    agent = _agent(tmp_path, turns)
    result = await agent.run("plan")
    [block] = _tool_results(agent.provider, 1)
    assert result.status == "completed"
    assert block["is_error"] is True
    assert "at most one may be in_progress" in block["content"][0]["text"]


def test_todo_schema_rejects_unknown_status_and_missing_fields() -> None:
    tool = {t.name: t for t in build_tools()}["todo_write"]
    assert tool.validate_input({"todos": [{"content": "x", "status": "doing"}]}) is not None
    assert tool.validate_input({"todos": [{"content": "x"}]}) is not None
    assert tool.validate_input({"todos": [{"content": "", "status": "pending"}]}) is not None
    assert tool.validate_input({"todos": [{"content": "x", "status": "pending"}]}) is None


# ---------------------------------------------------------------- ask_user


async def test_ask_user_waits_for_respond(tmp_path: Path) -> None:
    call = {
        "id": "ask1",
        "name": "ask_user",
        "input": {"question": "Which colour?", "options": ["red", "blue"], "multiple": False},
    }
    turns = [{"tool_calls": [call]}, "Using blue."]
    asked: list[str] = []
    agent = _agent(tmp_path, turns, asked)
    questions: list[Any] = []

    def answer(event: Any) -> None:
        questions.append(event.data)
        agent.respond(event.data["tool_call_id"], "blue")

    agent.on("ask_user.required", answer)
    responses: list[Any] = []
    agent.on("ask_user.response", lambda e: responses.append(e.data))
    result = await agent.run("paint it")
    assert result.status == "completed"
    assert asked == []
    assert questions == [
        {
            "tool_call_id": "ask1",
            "question": "Which colour?",
            "options": ["red", "blue"],
            "multiple": False,
        }
    ]
    assert responses == [{"tool_call_id": "ask1", "text": "blue"}]
    [block] = _tool_results(agent.provider, 1)
    assert block["content"][0]["text"] == "The user answered: blue"


async def test_ask_user_multiple_choice_is_passed_on(tmp_path: Path) -> None:
    call = {
        "name": "ask_user",
        "input": {"question": "Which files?", "options": ["a", "b", "c"], "multiple": True},
    }
    agent = _agent(tmp_path, [{"tool_calls": [call]}, "ok"])
    seen: list[Any] = []

    def answer(event: Any) -> None:
        seen.append(event.data)
        agent.respond(event.data["tool_call_id"], "a, c")

    agent.on("ask_user.required", answer)
    await agent.run("choose")
    assert seen[0]["multiple"] is True and seen[0]["options"] == ["a", "b", "c"]
    assert _tool_results(agent.provider, 1)[0]["content"][0]["text"] == "The user answered: a, c"


async def test_abort_ends_a_pending_question(tmp_path: Path) -> None:
    call = {"name": "ask_user", "input": {"question": "Continue?"}}
    agent = _agent(tmp_path, [{"tool_calls": [call]}, "never"])
    agent.on("ask_user.required", lambda e: agent.abort())
    result = await agent.run("ask")
    assert result.status == "interrupted"
    assert agent.provider.calls == 1


async def test_empty_answer_is_reported(tmp_path: Path) -> None:
    call = {"name": "ask_user", "input": {"question": "Anything?"}}
    agent = _agent(tmp_path, [{"tool_calls": [call]}, "ok"])
    agent.on("ask_user.required", lambda e: agent.respond(e.data["tool_call_id"], ""))
    await agent.run("ask")
    assert "no answer" in _tool_results(agent.provider, 1)[0]["content"][0]["text"]


# ---------------------------------------------------------------- finish_task


async def test_finish_task_ends_the_run_with_the_summary(tmp_path: Path) -> None:
    summary = "Fixed the off-by-one in parse() and ran the tests: 12 passed."
    turns = [
        {
            "text": "Done, wrapping up.",
            "tool_calls": [{"name": "finish_task", "input": {"summary": summary}}],
        },
        "this turn must never be requested",
    ]
    asked: list[str] = []
    agent = _agent(tmp_path, turns, asked)
    completed: list[Any] = []
    agent.on("run.completed", lambda e: completed.append(e.data))
    result = await agent.run("fix it")
    assert result.status == "completed"
    assert result.text == summary
    assert completed[0]["text"] == summary
    assert agent.provider.calls == 1
    assert asked == []


def test_finish_task_mentions_open_todos(tmp_path: Path) -> None:
    ctx = make_tool_context(tmp_path, tool_name="finish_task")
    todo_write({"todos": [{"content": "Write docs", "status": "pending"}]}, ctx)
    result = finish_task({"summary": "Done mostly."}, ctx)
    assert ctx.test_finished == ["Done mostly."]  # type: ignore[attr-defined]
    assert "1 todo(s) were still open: Write docs" in result.text_content()


def test_finish_task_refuses_an_empty_summary(tmp_path: Path) -> None:
    ctx = make_tool_context(tmp_path, tool_name="finish_task")
    with pytest.raises(ToolError, match="summary is empty"):
        finish_task({"summary": "  "}, ctx)
    assert ctx.test_finished == []  # type: ignore[attr-defined]
