"""The loop: permissions, guards, retries, events, the up-front rule, bad input."""

from __future__ import annotations

import asyncio
import json

import pytest

from smoke_core import (
    AgentError,
    AgentErrorInfo,
    Guards,
    RetryPolicy,
    ToolResult,
    create_agent,
    tool,
)
from smoke_core.base.events import EVENT_FIELDS
from smoke_core.plugin import EVENT_TYPES
from smoke_core.testing import ScriptedProvider

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.005)


@tool
def write_note(path: str, content: str) -> str:
    """Write a note."""
    return f"wrote {path}"


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo."""
    return text


def call(name, **input):
    return {"tool_calls": [{"name": name, "input": input}]}


def make(workspace, turns, **kw):
    provider = ScriptedProvider(turns)
    kw.setdefault("tools", [write_note, echo])
    kw.setdefault("retry", FAST)
    return create_agent(workspace, provider=provider, **kw), provider


# ------------------------------------------------------------ permissions


@pytest.mark.parametrize("answer,allowed", [("allow", True), ("allow_run", True), ("deny", False)])
async def test_permission_answers(workspace, answer, allowed):
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"])
    asked = []

    def on_required(event):
        asked.append(event.data)
        agent.resolve_permission(event.data["tool_call_id"], answer)

    agent.on("permission.required", on_required)
    resolved = []
    agent.on("permission.resolved", resolved.append)
    result = await agent.run("go")
    assert result.status == "completed"  # a denial does not end the run
    assert asked[0]["tool_name"] == "write_note" and asked[0]["kind"] == "tool"
    assert asked[0]["input"] == {"path": "a", "content": "b"}
    assert resolved[0].data["decision"] == answer
    block = provider.requests[1].messages[-1]["content"][0]
    assert block["is_error"] is (not allowed)
    if not allowed:
        assert "permission denied" in block["content"][0]["text"]


async def test_allow_run_covers_later_calls_of_same_tool(workspace):
    agent, _ = make(
        workspace, [call("write_note", path="a", content="1"), call("write_note", path="b", content="2"), "ok"]
    )
    asked = []
    agent.on("permission.required", lambda e: (asked.append(1), agent.resolve_permission(e.data["tool_call_id"], "allow_run")))
    await agent.run("go")
    assert len(asked) == 1


async def test_answer_before_pause_is_kept(workspace):
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"])
    # the caller knows the id from tool.started, which comes before the pause
    agent.on("tool.started", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    result = await agent.run("go")
    assert result.status == "completed"
    assert provider.requests[1].messages[-1]["content"][0]["is_error"] is False


async def test_abort_while_paused(workspace):
    agent, _ = make(workspace, [call("write_note", path="a", content="b"), "never"])
    agent.on("permission.required", lambda e: agent.abort())
    events = []
    agent.on_any(events.append)
    result = await agent.run("go")
    assert result.status == "interrupted"
    types = [e.type for e in events]
    assert types[-1] == "run.interrupted"
    assert "run.failed" not in types and "run.completed" not in types


async def test_read_only_auto_allowed_but_secret_paths_ask(workspace):
    @tool(read_only=True)
    def peek(path: str) -> str:
        """Peek."""
        return "content"

    agent, _ = make(workspace, [call("peek", path="src/a.py"), call("peek", path="config/.env"), "ok"], tools=[peek])
    asked = []
    agent.on("permission.required", lambda e: (asked.append(e.data), agent.resolve_permission(e.data["tool_call_id"], "deny")))
    await agent.run("go")
    assert [a["input"]["path"] for a in asked] == ["config/.env"]
    assert "secret" in asked[0]["reason"]


async def test_permission_callable(workspace):
    seen = []

    async def policy(request):
        seen.append(request.tool_name)
        return "deny" if request.input.get("path", "").startswith("/etc") else "allow"

    agent, provider = make(
        workspace, [call("write_note", path="/etc/x", content="b"), call("write_note", path="ok", content="b"), "ok"],
        permission=policy,
    )
    await agent.run("go")
    assert seen == ["write_note", "write_note"]
    assert provider.requests[1].messages[-1]["content"][0]["is_error"] is True
    assert provider.requests[2].messages[-1]["content"][0]["is_error"] is False


def test_bad_permission_mode(workspace):
    with pytest.raises(ValueError, match="ask-default"):
        create_agent(workspace, provider=ScriptedProvider([]), permission="sometimes")


# ------------------------------------------------------------ guards


async def test_max_steps(workspace):
    agent, _ = make(workspace, [call("echo", text="x")] * 5, max_steps=3)
    failed = []
    agent.on("run.failed", failed.append)
    result = await agent.run("go")
    assert result.status == "failed" and result.error.code == "run_max_steps"
    assert result.steps == 3
    assert len(failed) == 1


async def test_repeated_error_guard(workspace):
    err = AgentErrorInfo.from_code("provider_unavailable", "503 from upstream")
    agent, provider = make(workspace, [err, err, err, "never"])
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.error.code == "run_repeated_error"
    assert result.error.details["cause"]["code"] == "provider_unavailable"
    assert len(provider.requests) == 3
    assert len(warnings) == 2


async def test_hard_stop_after_failing_commands(workspace):
    # effects come from declared kinds, never from the tools' names
    @tool(name="run_command", kind="execute")
    def run_command(command: str) -> ToolResult:
        """Run."""
        return ToolResult.text("exit code 1", data={"exit_code": 1})

    @tool(name="edit_file", kind="edit")
    def edit_file(path: str) -> str:
        """Edit."""
        return "edited"

    turns = [call("run_command", command="make")] * 3 + [call("edit_file", path="x")] + \
        [call("run_command", command="make")] * 5 + ["never"]
    agent, _provider = make(workspace, turns, tools=[run_command, edit_file], auto_approve=True)
    result = await agent.run("go")
    assert result.error.code == "run_hard_stop"
    assert result.steps == 9  # the edit reset the count after 3 failures


async def test_empty_responses_guard(workspace):
    agent, provider = make(workspace, [{"text": ""}, {"text": "  "}, {"text": ""}, "never"])
    result = await agent.run("go")
    assert result.error.code == "run_empty_responses"
    assert len(provider.requests) == 3
    # the model was nudged after each empty reply
    assert "empty" in provider.requests[1].messages[-1]["content"][0]["text"]


async def test_empty_reply_then_progress_recovers(workspace):
    agent, _ = make(workspace, [{"text": ""}, "answer"])
    result = await agent.run("go")
    assert result.status == "completed" and result.text == "answer"


async def test_guards_can_be_disabled(workspace):
    agent, _ = make(workspace, [{"text": ""}] * 4 + ["fine"], guards=Guards(empty_responses=0))
    result = await agent.run("go")
    assert result.text == "fine"


# ------------------------------------------------------------ retries


async def test_retries_end_in_success_with_warnings(workspace):
    turns = [
        AgentErrorInfo.from_code("provider_rate_limited", "429 a", details={"retry_after": 0.001}),
        AgentErrorInfo.from_code("provider_unavailable", "503"),
        "recovered",
    ]
    agent, _provider = make(workspace, turns)
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed" and result.text == "recovered"
    assert [w.data["error"]["code"] for w in warnings] == ["provider_rate_limited", "provider_unavailable"]
    assert [w.data["attempt"] for w in warnings] == [1, 2]
    assert warnings[0].data["retry_in_ms"] == 1  # Retry-After honoured


async def test_retries_exhausted_fail_once(workspace):
    errs = [AgentErrorInfo.from_code("provider_unavailable", f"503 #{i}") for i in range(6)]
    agent, provider = make(workspace, errs, retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.002))
    failed = []
    agent.on("run.failed", failed.append)
    result = await agent.run("go")
    assert result.error.code == "provider_unavailable"
    assert len(provider.requests) == 3
    assert len(failed) == 1


async def test_fatal_error_is_not_retried(workspace):
    agent, provider = make(workspace, [AgentError.from_code("provider_auth", "bad key", hint="Set X_API_KEY")])
    result = await agent.run("go")
    assert result.error.code == "provider_auth" and result.error.hint == "Set X_API_KEY"
    assert len(provider.requests) == 1


async def test_retries_disabled(workspace):
    agent, provider = make(workspace, [AgentErrorInfo.from_code("provider_timeout", "slow"), "x"],
                           retry=RetryPolicy(max_retries=0))
    result = await agent.run("go")
    assert result.error.code == "provider_timeout" and len(provider.requests) == 1


async def test_unexpected_provider_exception_is_classified(workspace):
    agent, _ = make(workspace, [KeyError("choices")])
    result = await agent.run("go")
    assert result.error.code == "provider_error"
    assert "KeyError" in result.error.message


async def test_partial_text_is_discarded_before_a_retry(workspace):
    class Flaky:
        name, model = "flaky", "m"

        def __init__(self):
            self.calls = 0

        async def stream(self, request):
            from smoke_core.providers import Finished, TextDelta

            self.calls += 1
            yield TextDelta("partial ")
            if self.calls == 1:
                raise AgentError.from_code("transport_disconnected", "connection dropped")
            yield TextDelta("whole answer")
            yield Finished("stop")

    agent = create_agent(workspace, provider=Flaky(), retry=FAST)
    events = []
    agent.on_any(events.append)
    result = await agent.run("go")
    assert result.text == "partial whole answer"
    types = [e.type for e in events]
    i = types.index("text.discarded")
    assert events[i].data["text"] == "partial "
    assert types.index("run.warning") > i


# ------------------------------------------------------------ events


async def test_event_order_of_a_full_run(workspace):
    agent, _ = make(
        workspace,
        [{"text": "let me look", "tool_calls": [{"name": "echo", "input": {"text": "x"}}]},
         call("write_note", path="a", content="b"), "all done"],
        auto_approve=False,
    )
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    events = []
    agent.on_any(events.append)
    result = await agent.run("task")
    assert result.status == "completed" and result.text == "all done"
    types = [e.type for e in events if e.type != "text.delta"]
    assert types == [
        "run.started",
        "step.started", "text.end", "usage.updated",
        "tool.started", "tool.completed", "phase.changed", "step.ended",
        "step.started", "usage.updated",
        "tool.started", "permission.required", "permission.resolved", "tool.completed",
        "step.ended",
        "step.started", "text.end", "usage.updated", "step.ended",
        "phase.changed", "run.completed",
    ]
    for e in events:
        d = e.to_dict()
        json.dumps(d)  # JSON-serialisable
        assert set(d) == {"type", "session_id", "run_id", "timestamp", "data"}
        assert d["type"] in EVENT_TYPES
        assert set(EVENT_FIELDS[d["type"]]) <= set(d["data"]) | {"presentation", "data"}
    started = [e for e in events if e.type == "tool.started"]
    assert started[0].data["presentation"]["label"]


async def test_stream_yields_events_until_terminal(workspace):
    agent, _ = make(workspace, [call("echo", text="x"), "done"])
    types = [e.type async for e in agent.stream("go")]
    assert types[0] == "run.started" and types[-1] == "run.completed"


async def test_listener_that_raises_never_breaks_the_run(workspace, caplog):
    agent, _ = make(workspace, ["fine"])

    def bad(event):
        raise RuntimeError("listener bug")

    agent.on_any(bad)
    result = await agent.run("go")
    assert result.status == "completed"


async def test_unsubscribe(workspace):
    agent, _ = make(workspace, ["a", "b"])
    seen = []
    off = agent.on("run.completed", seen.append)
    await agent.run("1")
    off()
    await agent.run("2")
    assert len(seen) == 1


async def test_run_failed_exactly_once_and_terminal(workspace):
    agent, _ = make(workspace, [AgentErrorInfo.from_code("provider_error", "nope")])
    events = []
    agent.on_any(events.append)
    await agent.run("go")
    assert [e.type for e in events].count("run.failed") == 1
    assert events[-1].type == "run.failed"


# ------------------------------------------------------------ tools: up-front rule, registry


async def test_tool_registered_after_run_start_is_not_exposed(workspace):
    @tool(read_only=True)
    def late() -> str:
        """Registered late."""
        return "late"

    @tool(read_only=True)
    def register_late() -> str:
        """Registers another tool mid-run."""
        agent.register_tool(late)
        return "registered"

    provider = ScriptedProvider([call("register_late"), call("late"), "done"])
    agent = create_agent(workspace, provider=provider, tools=[register_late])
    result = await agent.run("go")
    assert result.status == "completed"
    assert [t["name"] for t in provider.requests[1].tools] == ["register_late"]
    block = provider.requests[2].messages[-1]["content"][0]
    assert block["is_error"] and "registered after this run started" in block["content"][0]["text"]
    # the next run sees it
    provider.add("bye")
    await agent.run("again")
    assert "late" in [t["name"] for t in provider.requests[-1].tools]


async def test_presentation_never_reaches_provider(workspace):
    @tool(read_only=True, presentation={"label": "Shiny", "icon": "✨", "tone": "success", "group": "demo"})
    def shiny() -> str:
        """Shiny."""
        return "x"

    agent, provider = make(workspace, ["ok"], tools=[shiny])
    await agent.run("go")
    assert provider.requests[0].tools == [shiny.provider_schema()]
    assert "presentation" not in json.dumps(provider.requests[0].tools)
    assert agent.get_tool_presentations()["shiny"] == {"label": "Shiny", "icon": "✨", "tone": "success", "group": "demo"}


def test_duplicate_tool_names_name_both_sources(workspace):
    from smoke_core import ToolDefinition, hookimpl

    def make_tool():
        return ToolDefinition(name="dup", description="d", execute=lambda i, c: "x")

    class A:
        __name__ = "plugin-a"

        @hookimpl
        def register_tools(self, register):
            register(make_tool())

    class B:
        __name__ = "plugin-b"

        @hookimpl
        def register_tools(self, register):
            register(make_tool())

    with pytest.raises(ValueError) as exc:
        create_agent(workspace, provider=ScriptedProvider([]), plugins=[A(), B()])
    assert "plugin-a" in str(exc.value) and "plugin-b" in str(exc.value) and "'dup'" in str(exc.value)


def test_tools_group_names_restrict_and_definitions_add(workspace):
    from smoke_core import hookimpl

    @tool(read_only=True, group="search")
    def find() -> str:
        """Find."""
        return ""

    @tool(read_only=True, group="git")
    def log() -> str:
        """Log."""
        return ""

    class P:
        @hookimpl
        def register_tools(self, register):
            register(find)
            register(log)

    agent = create_agent(workspace, provider=ScriptedProvider([]), plugins=[P()])
    assert set(agent.tools) == {"find", "log"}
    agent = create_agent(workspace, provider=ScriptedProvider([]), plugins=[P()], tools=["git"])
    assert set(agent.tools) == {"log"}
    agent = create_agent(workspace, provider=ScriptedProvider([]), plugins=[P()], tools=[echo])
    assert set(agent.tools) == {"find", "log", "echo"}
    with pytest.raises(ValueError, match="unknown tool group"):
        create_agent(workspace, provider=ScriptedProvider([]), plugins=[P()], tools=["gti"])


# ------------------------------------------------------------ bad input at create_agent


def test_workspace_missing_or_not_a_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        create_agent(tmp_path / "nope", provider=ScriptedProvider([]))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        create_agent(f, provider=ScriptedProvider([]))


def test_unknown_provider_lists_installed(workspace):
    with pytest.raises(ValueError) as exc:
        create_agent(workspace, provider="openia")
    assert "unknown provider 'openia'" in str(exc.value)
    assert "demo" in str(exc.value)  # the built-in provider is listed


def test_model_prefix_selects_provider(workspace):
    agent = create_agent(workspace, model="demo:whatever")
    assert agent.provider.name == "demo" and agent.provider.model == "whatever"


def test_no_provider_is_a_clear_error(workspace):
    with pytest.raises(ValueError, match="no provider given"):
        create_agent(workspace)


# ------------------------------------------------------------ sessions, instructions, spill, compaction


async def test_session_keeps_history_across_runs(workspace):
    provider = ScriptedProvider(["first answer", "second answer"])
    agent = create_agent(workspace, provider=provider, session_id="s1")
    await agent.run("one")
    await agent.run("two")
    texts = [m["content"][0]["text"] for m in provider.requests[1].messages]
    assert texts == ["one", "first answer", "two"]
    agent2 = create_agent(workspace, provider=ScriptedProvider(["x"]), session_id="s1", store=agent.store)
    assert len(agent2.store.load("s1")) == 4


async def test_add_instructions_injected_once_and_kept(workspace):
    @tool(read_only=True)
    def guide(ctx=None) -> str:
        """Adds guidance."""
        ctx.add_instructions("## Skill: testing\nAlways test.")
        ctx.add_instructions("## Skill: testing\nAlways test.")
        return "ok"

    agent, provider = make(workspace, [call("guide"), call("guide"), "done"], tools=[guide])
    await agent.run("go")
    # injected as one message in the transcript, never into the system prompt (which stays the same)
    assert len({r.system for r in provider.requests}) == 1 and "Always test." not in provider.requests[0].system
    assert "Always test." not in str(provider.requests[0].messages)
    assert str(provider.requests[1].messages).count("Always test.") == 1
    assert str(provider.requests[2].messages).count("Always test.") == 1


async def test_large_output_is_spilled(workspace):
    big = "".join(f"line {i}\n" for i in range(20000))

    @tool(read_only=True)
    def dump() -> str:
        """Dump."""
        return big

    agent, provider = make(workspace, [call("dump"), "ok"], tools=[dump], max_tool_output_chars=2000)
    result = await agent.run("go")
    text = provider.requests[1].messages[-1]["content"][0]["content"][0]["text"]
    assert len(text) < 3000
    assert text.startswith("line 0") and "line 19999" in text
    spilled = list((workspace / ".smoke" / "runs" / result.run_id).glob("*.txt"))
    assert len(spilled) == 1 and spilled[0].read_text() == big
    assert str(spilled[0].relative_to(workspace)) in text


async def test_compaction_keeps_tool_pairs(workspace):
    turns = [call("echo", text="x" * 4000) for _ in range(8)] + ["summary of things", "final"]
    agent, provider = make(workspace, turns, context_window=6000)
    events = []
    agent.on("compaction.completed", events.append)
    agent.on("compaction.started", events.append)
    result = await agent.run("go")
    assert result.status == "completed"
    assert events, "compaction never happened"
    after = provider.requests[-1].messages
    assert after[0]["content"][0]["text"].startswith("[Summary of the earlier conversation]")
    # every tool result has its call right before it
    for i, m in enumerate(after):
        if m["role"] == "tool":
            ids = {b["id"] for b in after[i - 1]["content"] if b["type"] == "tool_call"}
            assert {b["tool_call_id"] for b in m["content"]} <= ids


async def test_read_only_calls_run_concurrently(workspace):
    both = asyncio.Event()
    arrived = []

    @tool(read_only=True)
    async def meet(name: str) -> str:
        """Waits for the other call."""
        arrived.append(name)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)
        return name

    turns = [{"tool_calls": [{"name": "meet", "input": {"name": "a"}}, {"name": "meet", "input": {"name": "b"}}]}, "ok"]
    agent, provider = make(workspace, turns, tools=[meet])
    result = await agent.run("go")
    assert result.status == "completed"
    assert [b["content"][0]["text"] for b in provider.requests[1].messages[-1]["content"]] == ["a", "b"]


async def test_sync_tools_do_not_block_the_loop(workspace):
    import threading

    loop_thread = threading.get_ident()
    seen = []

    @tool(read_only=True)
    def blocking() -> str:
        """Runs in a worker thread."""
        seen.append(threading.get_ident())
        return "done"

    agent, _ = make(workspace, [call("blocking"), "ok"], tools=[blocking])
    await agent.run("go")
    assert seen and seen[0] != loop_thread


async def test_one_run_at_a_time(workspace):
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.Event().wait()
        return ""

    agent, _ = make(workspace, [call("wait")], tools=[wait])
    task = asyncio.ensure_future(agent.run("a"))
    await started.wait()
    with pytest.raises(RuntimeError, match="already running"):
        await agent.run("b")
    agent.abort()
    assert (await task).status == "interrupted"


def test_run_sync(workspace):
    agent, _ = make(workspace, ["sync ok"])
    assert agent.run_sync("go").text == "sync ok"


async def test_identical_failing_calls_warn_the_model_then_stop_the_run(workspace):
    @tool(read_only=True, kind="read")
    def read_file(path: str) -> str:
        """Read."""
        raise FileNotFoundError(path)

    turns = [call("read_file", path="missing.txt")] * 10
    agent, provider = make(workspace, turns, tools=[read_file])
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.error.code == "run_repeated_error"
    assert result.steps == 4  # warned after the third, stopped at the fourth, not ten
    assert len(provider.requests) == 4
    third = provider.requests[3].messages[-1]["content"][0]["content"]
    assert "failed 3 times in a row" in third[-1]["text"]
    assert [w.data["error"]["code"] for w in warnings] == ["run_repeated_error"]
    # the transcript stays valid: every call has its result
    assert result.messages[-1]["role"] == "tool"


async def test_a_different_input_or_a_success_resets_the_repeat_count(workspace):
    outcomes = iter([False, False, True, False, False, False, False])

    @tool(read_only=True)
    def flaky(n: int) -> str:
        """Flaky."""
        if not next(outcomes):
            raise RuntimeError("no")
        return "ok"

    turns = [call("flaky", n=1), call("flaky", n=1), call("flaky", n=1), call("flaky", n=1),
             call("flaky", n=2), call("flaky", n=1), call("flaky", n=1), "done"]
    agent, _ = make(workspace, turns, tools=[flaky])
    result = await agent.run("go")
    assert result.status == "completed", result.error


async def test_a_tool_call_the_provider_rejects_goes_back_to_the_model_and_the_run_goes_on(workspace):
    from smoke_core import AgentErrorInfo

    calls = []

    @tool(kind="edit")
    def note(text: str) -> str:
        """Note."""
        calls.append(text)
        return "noted"

    rejected = AgentErrorInfo.from_code(
        "tool_invalid_input", "tool call validation failed: parameters for tool note did not match schema",
        details={"failed_generation": '{"name": "note", "arguments": {"txt": 1}}'},
    )

    agent, provider = make(workspace, [rejected, call("note", text="hi"), "done"], tools=[note],
                           auto_approve=True)
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed", result.error
    assert calls == ["hi"]  # the valid call ran exactly once
    assert [w.data["error"]["code"] for w in warnings] == ["tool_invalid_input"]
    feedback = provider.requests[1].messages[-1]["content"][0]["text"]
    assert "rejected by the model provider" in feedback and '"txt": 1' in feedback


async def test_rejections_in_a_row_end_the_run(workspace):
    from smoke_core import AgentErrorInfo

    rejected = AgentErrorInfo.from_code("tool_invalid_input", "bad tool call")
    agent, _ = make(workspace, [rejected] * 6)
    result = await agent.run("go")
    assert result.error.code == "run_repeated_error"
    assert result.error.details["count"] == 4
