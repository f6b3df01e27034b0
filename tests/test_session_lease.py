"""One run per session at a time (session lease) and at-most-once mutating
tool calls across crashes (call journal), with real SQLite files and a real
child process killed with SIGKILL."""

from __future__ import annotations

import asyncio
import copy
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from smoke_core import MemoryStore, create_agent
from smoke_core.plugin import SQLiteStore, ToolAnnotations, ToolDefinition
from smoke_core.run.call_journal import INTERRUPTED, NOT_RUN, RECOVERED
from smoke_core.run.history import repair_history
from smoke_core.store.protocol import CallRecord, LeaseHolder
from smoke_core.testing import ScriptedProvider


def gated_tool(gate: asyncio.Event, entered: asyncio.Event, *, read_only: bool = False) -> ToolDefinition:
    async def wait(input: dict[str, Any], ctx: Any) -> str:
        entered.set()
        await gate.wait()
        return "done waiting"

    return ToolDefinition(name="wait_here", description="Waits for the test.",
                          input_schema={"type": "object", "properties": {}},
                          annotations=ToolAnnotations(read_only_hint=read_only), execute=wait)


def agent_on(store: Any, session: str, turns: list[Any], tools: list[ToolDefinition] = ()) -> Any:
    return create_agent(".", provider=ScriptedProvider(turns), store=store, session_id=session,
                        autoload_plugins=False, tools=list(tools), permission="allow-all", setting_sources=())


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


async def test_a_second_run_on_a_busy_session_fails_with_session_busy_and_writes_nothing(tmp_path):
    gate, entered = asyncio.Event(), asyncio.Event()
    first_store = SQLiteStore(tmp_path / "s.db")
    second_store = SQLiteStore(tmp_path / "s.db", lease_wait=0)  # another handle, as another process has
    first = agent_on(first_store, "ses", [{"tool_calls": [{"name": "wait_here", "input": {}}]}, "first done"],
                     [gated_tool(gate, entered)])
    running = asyncio.ensure_future(first.run("first task"))
    await entered.wait()
    before = second_store.load("ses")
    second = agent_on(second_store, "ses", ["never asked"])
    events: list[str] = []
    second.on_any(lambda e: events.append(e.type))
    result = await second.run("second task")
    assert result.status == "failed" and result.error.code == "session_busy"
    assert f"process {os.getpid()}" in result.error.message and "wrote nothing" in result.error.message
    assert result.error.hint and "another session" in result.error.hint
    assert events == ["run.failed"]  # it never started
    assert second.provider.calls == 0
    assert second_store.load("ses") == before  # nothing written
    gate.set()
    done = await running
    assert done.status == "completed"
    assert roles(first_store.load("ses")) == ["user", "assistant", "tool", "assistant"]
    # the session is free again
    third = await agent_on(second_store, "ses", ["third done"]).run("third task")
    assert third.status == "completed"
    assert roles(second_store.load("ses")) == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    first_store.close()
    second_store.close()


async def test_a_second_run_waits_for_the_session_and_the_transcript_does_not_interleave(tmp_path):
    gate, entered = asyncio.Event(), asyncio.Event()
    store_a = SQLiteStore(tmp_path / "s.db")
    store_b = SQLiteStore(tmp_path / "s.db", lease_wait=60)
    first = agent_on(store_a, "ses", [{"tool_calls": [{"name": "wait_here", "input": {}}]}, "A done"],
                     [gated_tool(gate, entered)])
    running = asyncio.ensure_future(first.run("A"))
    await entered.wait()
    second = agent_on(store_b, "ses", ["B done"])
    started = asyncio.Event()
    second.on("run.started", lambda e: started.set())
    waiting = asyncio.ensure_future(second.run("B"))
    await asyncio.sleep(0)  # let B try once and start waiting (it cannot start: A holds the lease)
    assert not started.is_set()
    gate.set()
    assert (await running).status == "completed"
    result = await waiting
    assert result.status == "completed" and result.text == "B done"
    texts = [m["content"][0].get("text") for m in store_a.load("ses") if m["role"] in ("user", "assistant")]
    assert roles(store_a.load("ses")) == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert texts[0] == "A" and texts[-2:] == ["B", "B done"]
    store_a.close()
    store_b.close()


async def test_a_run_that_loses_its_lease_stops(tmp_path):
    gate, entered = asyncio.Event(), asyncio.Event()
    store = MemoryStore(lease_ttl=0.3)  # renewed every 0.1 s
    agent = agent_on(store, "ses", [{"tool_calls": [{"name": "wait_here", "input": {}}]}, "never"],
                     [gated_tool(gate, entered, read_only=True)])
    warnings: list[dict[str, Any]] = []
    agent.on("run.warning", lambda e: warnings.append(e.data["error"]))
    running = asyncio.ensure_future(agent.run("go"))
    await entered.wait()
    # another run takes the session as if this process had stalled past the expiry
    thief = LeaseHolder(uuid.uuid4().hex, "elsewhere.invalid", 1)
    store._leases["ses"] = (thief, 0.0, float("inf"))
    result = await running
    assert result.status == "interrupted"
    assert [w["code"] for w in warnings] == ["session_busy"] and "lost the lease" in warnings[0]["message"]
    assert store._leases["ses"][0] == thief  # its lease was left alone


async def test_runs_without_a_session_take_no_lease():
    store = MemoryStore()
    a = create_agent(".", provider=ScriptedProvider(["one"]), store=store, autoload_plugins=False,
                     setting_sources=())
    assert (await a.run("x")).status == "completed"
    assert store._leases == {}


def test_repair_history_tells_the_model_which_calls_may_have_run():
    calls = [
        {"type": "tool_call", "id": "started", "name": "write_file", "input": {}},
        {"type": "tool_call", "id": "ended", "name": "write_file", "input": {}},
        {"type": "tool_call", "id": "never", "name": "write_file", "input": {}},
        {"type": "tool_call", "id": "answered", "name": "read_file", "input": {}},
    ]
    history = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": calls},
        {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "answered", "content": [],
                                      "is_error": False}]},
    ]
    journal = {
        "started": CallRecord("started", "write_file", 1.0),
        "ended": CallRecord("ended", "write_file", 1.0, 2.0,
                            {"content": [{"type": "text", "text": "wrote it"}], "is_error": False}),
    }
    repaired = repair_history(copy.deepcopy(history), journal)
    results = {b["tool_call_id"]: b for b in repaired[2]["content"]}
    assert list(results) == ["answered", "started", "ended", "never"]
    assert results["started"]["is_error"] and results["started"]["content"][0]["text"] == INTERRUPTED
    assert "outcome is unknown" in INTERRUPTED and "check before retrying" in INTERRUPTED.lower()
    assert not results["ended"]["is_error"]
    assert [c["text"] for c in results["ended"]["content"]] == ["wrote it", RECOVERED]
    assert results["never"]["content"][0]["text"] == NOT_RUN
    # without a journal every unanswered call reads "not run", as before
    plain = repair_history(copy.deepcopy(history))
    assert {b["content"][0]["text"] for b in plain[2]["content"][1:]} == {NOT_RUN}


CHILD = textwrap.dedent("""
    import asyncio, os, sys
    from smoke_core import create_agent
    from smoke_core.plugin import SQLiteStore, ToolAnnotations, ToolDefinition
    from smoke_core.testing import ScriptedProvider

    db, ledger = sys.argv[1], sys.argv[2]

    async def append_line(input, ctx):
        with open(ledger, "a") as fh:
            fh.write(input["text"] + "\\n")
        print("appended", flush=True)
        await asyncio.Event().wait()   # killed here, mid-call

    tool = ToolDefinition(name="append_line", description="Append a line to the ledger.",
                          input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                        "required": ["text"]},
                          annotations=ToolAnnotations(read_only_hint=False), execute=append_line)
    turns = [{"tool_calls": [{"name": "append_line", "input": {"text": "A"}, "id": "call_A"},
                             {"name": "append_line", "input": {"text": "B"}, "id": "call_B"}]}]
    agent = create_agent(".", provider=ScriptedProvider(turns), store=SQLiteStore(db), session_id="ses",
                         autoload_plugins=False, tools=[tool], permission="allow-all", setting_sources=())
    asyncio.run(agent.run("append A then B"))
""")


def append_tool(ledger: Path) -> ToolDefinition:
    def append_line(input: dict[str, Any], ctx: Any) -> str:
        with open(ledger, "a") as fh:
            fh.write(input["text"] + "\n")
        return f"appended {input['text']}"

    return ToolDefinition(name="append_line", description="Append a line to the ledger.",
                          input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                        "required": ["text"]},
                          annotations=ToolAnnotations(read_only_hint=False), execute=append_line)


def careful_model(request: Any) -> dict[str, Any]:
    """Re-issues a call that did not run; never one whose outcome is unknown."""
    results = [b for m in request.messages if m["role"] == "tool" for b in m["content"]]
    if any(b["tool_call_id"] == "call_B2" for b in results):
        return {"text": "ledger checked; A may have been written already, so it was not repeated"}
    for block in results:
        text = " ".join(c.get("text", "") for c in block["content"])
        if block["tool_call_id"] == "call_B" and text.startswith("not run"):
            return {"tool_calls": [{"name": "append_line", "input": {"text": "B"}, "id": "call_B2"}]}
    return {"text": "ledger checked; A may have been written already, so it was not repeated"}


@pytest.mark.slow
async def test_a_mutating_call_in_flight_when_its_process_is_killed_is_not_executed_again(tmp_path):
    db, ledger = tmp_path / "s.db", tmp_path / "ledger.txt"
    with subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(ledger)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        try:
            line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 60)
            assert line.strip() == "appended", child.stderr.read() if child.poll() is not None else line
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    assert ledger.read_text() == "A\n"
    store = SQLiteStore(db, lease_wait=0)  # the killed process's lease is free at once: it is gone
    provider = ScriptedProvider([careful_model, careful_model])
    agent = create_agent(".", provider=provider, store=store, session_id="ses", autoload_plugins=False,
                         tools=[append_tool(ledger)], permission="allow-all", setting_sources=())
    result = await agent.run("continue")
    assert result.status == "completed", result.error
    seen = {b["tool_call_id"]: b["content"][0]["text"] for b in provider.requests[0].messages[2]["content"]}
    assert seen == {"call_A": INTERRUPTED, "call_B": NOT_RUN}
    assert ledger.read_text() == "A\nB\n"  # A once (not repeated), B once (it had not run)
    store.close()
