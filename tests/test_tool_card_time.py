"""A tool card's time is the tool's own: the time a person took to approve the
call is shown apart (``ran 0.1 s · waited 12.8 s for approval``)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from smoke_core import create_agent, tool
from smoke_core.cli.render import TerminalUI, tool_time
from smoke_core.testing import ScriptedProvider

THINK = 0.4  # the person's time to read the prompt and answer, in seconds


@tool
def write_note(path: str, content: str) -> str:
    """Write a note."""
    return f"wrote {path}"


def test_the_card_time_without_and_with_an_approval_wait() -> None:
    assert tool_time({"duration_ms": 123.4, "waited_ms": 0}) == "123 ms"
    assert tool_time({"duration_ms": 12_916, "waited_ms": 12_816}) == "ran 0.1 s · waited 12.8 s for approval"
    assert tool_time({"duration_ms": 40}) == "40 ms"  # an event from before the field: the whole call


async def test_the_approval_wait_is_measured_and_shown_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = create_agent(tmp_path, provider=ScriptedProvider(
        [{"tool_calls": [{"name": "write_note", "input": {"path": "a", "content": "b"}}]}, "done"]),
        tools=[write_note])

    async def person(prompt: str) -> str:
        await asyncio.sleep(THINK)  # the person reads the prompt, then types y
        return "y"

    ui = TerminalUI(agent, approve="ask", reader=person)
    agent.on_any(ui.handle)
    completed = []
    agent.on("tool.completed", lambda e: completed.append(e.data))
    try:
        result = await agent.run("go")
    finally:
        await agent.aclose()
    assert result.status == "completed"
    data = completed[0]
    assert data["waited_ms"] >= THINK * 1000
    assert data["duration_ms"] >= data["waited_ms"]
    assert data["duration_ms"] - data["waited_ms"] < THINK * 1000  # writing a note is quicker than the person
    out = capsys.readouterr().out
    assert re.search(r"wrote a \(ran \d+\.\d s · waited \d+\.\d s for approval\)", out), out


async def test_a_call_nobody_was_asked_about_waited_nothing(tmp_path: Path) -> None:
    agent = create_agent(tmp_path, provider=ScriptedProvider(
        [{"tool_calls": [{"name": "write_note", "input": {"path": "a", "content": "b"}}]}, "done"]),
        tools=[write_note], permission=lambda request: "allow")
    completed = []
    agent.on("tool.completed", lambda e: completed.append(e.data))
    try:
        await agent.run("go")
    finally:
        await agent.aclose()
    assert completed[0]["waited_ms"] == 0
