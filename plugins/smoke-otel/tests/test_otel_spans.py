"""Span structure with the SDK's in-memory exporter: every span, parent
links, attributes, and the status on each failure path."""

from __future__ import annotations

import asyncio
import logging
import types
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from smoke_core import Guards, create_agent, hookimpl, tool
from smoke_core.plugin import AgentErrorInfo, ToolDefinition, ToolError
from smoke_core.providers import Finished, RetryPolicy, Usage, UsageReport
from smoke_core.testing import ScriptedProvider

FAST = RetryPolicy(base_delay=0.001, max_delay=0.002)
U = {"usage": {"input_tokens": 12, "output_tokens": 5}}


def call(name: str, id: str | None = None, **input: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "input": input}
    if id:
        c["id"] = id
    return c


@tool(read_only=True)
async def look(what: str) -> str:
    """Look at something."""
    return f"saw {what}"


@tool(kind="edit")
def edit(path: str) -> str:
    """Edit a file (needs approval)."""
    return f"edited {path}"


@tool(read_only=True)
def broken(what: str) -> str:
    """Always fails."""
    raise ToolError(f"cannot look at {what}")


def agent_for(ws: Any, telemetry: Any, turns: list[Any], *tools: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("permission", "allow-all")
    return create_agent(ws, provider=ScriptedProvider(turns), tools=list(tools) or [look], autoload_plugins=False,
                        plugins=[telemetry.plugin, *kwargs.pop("plugins", [])], **kwargs)


def parent_id(span: Any) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def sid(span: Any) -> int:
    return span.context.span_id


# ---------------------------------------------------------------- the shape of a run


async def test_a_run_is_one_trace_invoke_agent_over_chat_and_tool_spans(workspace, telemetry):
    agent = agent_for(workspace, telemetry,
                      [{"tool_calls": [call("look", id="c1", what="logs")], **U}, {"text": "all clean", **U}],
                      session_id="ses_42")
    result = await agent.run("check the logs")
    assert result.status == "completed"

    spans = telemetry.spans()
    assert sorted(s.name for s in spans) == [
        "chat scripted-model", "chat scripted-model", "execute_tool look", "invoke_agent smoke",
    ]
    root = telemetry.one("invoke_agent smoke")
    assert root.parent is None and root.kind is SpanKind.INTERNAL
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    for span in spans:
        if span is not root:
            assert parent_id(span) == sid(root), span.name
            assert root.start_time <= span.start_time <= span.end_time <= root.end_time, span.name
        assert span.status.status_code is StatusCode.UNSET, span.name  # success is left unset

    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "smoke", "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted-model", "gen_ai.conversation.id": "ses_42", "smoke.run.id": result.run_id,
        "smoke.run.status": "completed", "smoke.run.steps": 2,
        "gen_ai.usage.input_tokens": 24, "gen_ai.usage.output_tokens": 10,
    }
    first, second = sorted(telemetry.named("chat"), key=lambda s: s.start_time)
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted-model",
        "gen_ai.conversation.id": "ses_42", "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    tool_span = telemetry.one("execute_tool look")
    assert tool_span.kind is SpanKind.INTERNAL
    assert dict(tool_span.attributes) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "look", "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function", "gen_ai.tool.description": "Look at something.", "smoke.tool.outcome": "ok",
    }
    # the order of the work: model call, then its tool call, then the next model call
    assert first.end_time <= tool_span.start_time <= tool_span.end_time <= second.start_time


async def test_request_settings_and_the_server_are_recorded(workspace, telemetry):
    provider = ScriptedProvider(["hi"], model="m-1")
    provider.base_url = "https://llm.example.com:8443/v1"  # type: ignore[attr-defined]
    provider.name = "openai"  # type: ignore[misc]
    agent = create_agent(workspace, provider=provider, tools=[look], autoload_plugins=False,
                         plugins=[telemetry.plugin], model_settings={"temperature": 0.2, "max_tokens": 300,
                                                                     "stop": ["END"]})
    await agent.run("hello")
    chat = telemetry.one("chat m-1")
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["server.address"] == "llm.example.com"
    assert chat.attributes["server.port"] == 8443
    assert chat.attributes["gen_ai.request.temperature"] == 0.2
    assert chat.attributes["gen_ai.request.max_tokens"] == 300
    assert chat.attributes["gen_ai.request.stop_sequences"] == ("END",)
    assert telemetry.one("invoke_agent smoke").attributes["server.address"] == "llm.example.com"


async def test_the_agent_name_comes_from_the_setting_or_the_constructor(workspace, make_telemetry):
    named = make_telemetry(agent_name="triage-bot")
    await agent_for(workspace, named, ["ok"]).run("hi")
    assert named.one("invoke_agent triage-bot").attributes["gen_ai.agent.name"] == "triage-bot"


# ---------------------------------------------------------------- tool outcomes


async def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("broken", what="x")]}, "gave up"], broken)
    result = await agent.run("go")
    assert result.status == "completed"
    span = telemetry.one("execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "cannot look at x"
    assert span.attributes["error.type"] == "tool_failed"
    assert span.attributes["smoke.tool.outcome"] == "error"
    assert telemetry.one("invoke_agent smoke").status.status_code is StatusCode.UNSET


class Refuser:
    """A policy plugin: refuses every call to edit."""

    __name__ = "refuser"

    @hookimpl
    def before_tool_call(self, tool_name: str) -> dict[str, Any] | None:
        return {"block": True, "reason": "no edits today"} if tool_name == "edit" else None


async def test_a_blocked_call_is_an_error_span_naming_the_blocker(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("edit", path="a.py")]}, "ok"], edit,
                      plugins=[Refuser()])
    await agent.run("go")
    span = telemetry.one("execute_tool edit")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "tool_blocked"
    assert span.attributes["smoke.tool.outcome"] == "blocked"
    assert span.attributes["smoke.tool.blocked_by"] == "refuser"
    assert "no edits today" in span.status.description
    assert parent_id(span) == sid(telemetry.one("invoke_agent smoke"))
    assert span.start_time <= span.end_time


async def test_a_denied_permission_is_an_error_span_with_the_approval_events(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("edit", path="a.py")]}, "ok"], edit,
                      permission="ask-default")
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "deny"))
    result = await agent.run("go")
    assert result.status == "completed"
    span = telemetry.one("execute_tool edit")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "permission_denied"
    assert span.attributes["smoke.tool.outcome"] == "denied"
    events = [(e.name, dict(e.attributes)) for e in span.events]
    assert events == [
        ("smoke.permission.required", {"smoke.permission.kind": "tool", "smoke.permission.name": "edit"}),
        ("smoke.permission.resolved", {"smoke.permission.decision": "deny"}),
    ]


async def test_an_approved_call_is_ok_and_its_wait_is_inside_the_span(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("edit", path="a.py")]}, "ok"], edit,
                      permission="ask-default")
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    await agent.run("go")
    span = telemetry.one("execute_tool edit")
    assert span.attributes["smoke.tool.outcome"] == "ok"
    assert [e.attributes.get("smoke.permission.decision") for e in span.events] == [None, "allow"]


async def test_invalid_input_and_unknown_tools_get_spans_too(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [
        {"tool_calls": [call("look", wat="typo"), call("nope", x=1)]}, "done",
    ])
    await agent.run("go")
    invalid = telemetry.one("execute_tool look")
    unknown = telemetry.one("execute_tool nope")
    assert (invalid.attributes["error.type"], invalid.attributes["smoke.tool.outcome"]) == (
        "tool_invalid_input", "invalid_input")
    assert (unknown.attributes["error.type"], unknown.attributes["smoke.tool.outcome"]) == (
        "tool_not_found", "not_found")
    assert "gen_ai.tool.description" not in unknown.attributes
    assert all(s.status.status_code is StatusCode.ERROR for s in (invalid, unknown))


async def test_mcp_tools_carry_the_server_name(workspace, telemetry):
    async def echo(input: dict[str, Any], ctx: Any) -> str:
        return input["text"]

    mcp_tool = ToolDefinition(name="files__read_text", description="[files] Read a text file.",
                              input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
                              execute=echo, group="mcp")
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("files__read_text", text="hi")]}, "ok"],
                      mcp_tool)
    await agent.run("go")
    span = telemetry.one("execute_tool files__read_text")
    assert span.attributes["gen_ai.tool.type"] == "extension"
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["smoke.mcp.server"] == "files"
    assert span.attributes["smoke.mcp.tool"] == "read_text"


# ---------------------------------------------------------------- model-call failures


async def test_retries_are_events_on_one_chat_span_that_then_succeeds(workspace, telemetry):
    limited = AgentErrorInfo.from_code("provider_rate_limited", "slow down", retryable=True)
    agent = agent_for(workspace, telemetry, [limited, "fine now"], retry=FAST)
    result = await agent.run("go")
    assert result.status == "completed"
    chat = telemetry.one("chat scripted-model")
    assert chat.status.status_code is StatusCode.UNSET
    assert chat.attributes["smoke.model_call.attempts"] == 2
    assert "error.type" not in chat.attributes
    [retry] = chat.events
    assert retry.name == "smoke.retry"
    assert retry.attributes["error.type"] == "provider_rate_limited"
    assert retry.attributes["smoke.retry.attempt"] == 1
    assert retry.attributes["smoke.retry.delay_ms"] >= 0
    assert retry.attributes["smoke.error.message"] == "slow down"


async def test_a_model_call_retried_then_failing_ends_the_run_in_error(workspace, telemetry):
    limited = AgentErrorInfo.from_code("provider_rate_limited", "slow down", retryable=True)
    agent = agent_for(workspace, telemetry, [limited] * 3, retry=RetryPolicy(max_retries=2, base_delay=0.001,
                                                                              max_delay=0.002),
                      guards=Guards(repeated_error=0))
    result = await agent.run("go")
    assert result.status == "failed" and result.error.code == "provider_rate_limited"
    chat = telemetry.one("chat scripted-model")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "provider_rate_limited"
    assert chat.attributes["smoke.model_call.attempts"] == 3
    assert [e.attributes["smoke.retry.attempt"] for e in chat.events] == [1, 2]
    root = telemetry.one("invoke_agent smoke")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "provider_rate_limited"
    assert root.attributes["smoke.run.status"] == "failed"
    assert root.status.description == "slow down"

    metrics = telemetry.metrics()
    warnings = {p.attributes["error.type"]: p.value for p in metrics["smoke.warnings"]}
    assert warnings == {"provider_rate_limited": 2}
    failures = {(p.attributes["gen_ai.operation.name"], p.attributes["error.type"]): p.value
                for p in metrics["smoke.failures"]}
    assert failures == {("chat", "provider_rate_limited"): 1, ("invoke_agent", "provider_rate_limited"): 1}
    [duration] = metrics["gen_ai.client.inference.duration"]
    assert duration.attributes["error.type"] == "provider_rate_limited"
    [failed_tokens] = metrics["gen_ai.client.inference.operation.input_tokens"]  # failed calls count, with 0
    assert (failed_tokens.count, failed_tokens.sum) == (1, 0)


async def test_the_repeated_error_guard_names_the_run_error_and_keeps_the_call_error(workspace, telemetry):
    limited = AgentErrorInfo.from_code("provider_rate_limited", "slow down", retryable=True)
    agent = agent_for(workspace, telemetry, [limited] * 5, retry=FAST)
    result = await agent.run("go")
    assert result.error.code == "run_repeated_error"
    assert telemetry.one("chat scripted-model").attributes["error.type"] == "provider_rate_limited"
    assert telemetry.one("invoke_agent smoke").attributes["error.type"] == "run_repeated_error"


async def test_a_hook_that_blocks_the_model_call_fails_the_run_span(workspace, telemetry):
    class Stop:
        __name__ = "stopper"

        @hookimpl
        def before_model_call(self) -> dict[str, Any]:
            return {"block": True, "reason": "budget spent"}

    agent = agent_for(workspace, telemetry, ["never"], plugins=[Stop()])
    result = await agent.run("go")
    assert result.error.code == "hook_blocked"
    assert [s.name for s in telemetry.spans()] == ["invoke_agent smoke"]  # no model call was made
    assert telemetry.one("invoke_agent smoke").attributes["error.type"] == "hook_blocked"


# ---------------------------------------------------------------- abort


async def test_abort_during_a_tool_ends_the_tool_and_run_spans_cancelled(workspace, telemetry):
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait_forever(what: str) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("wait_forever", what="x")]}], wait_forever)
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    agent.abort()
    result = await task
    assert result.status == "interrupted"
    span = telemetry.one("execute_tool wait_forever")
    assert span.attributes["error.type"] == "tool_cancelled"
    assert span.attributes["smoke.tool.outcome"] == "cancelled"
    root = telemetry.one("invoke_agent smoke")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "run_cancelled"
    assert root.attributes["smoke.run.status"] == "interrupted"


class HangingProvider:
    """A provider whose first call never answers (until cancelled)."""

    name = "hanging"
    model = "slow-1"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def stream(self, request: Any) -> Any:
        self.started.set()
        await asyncio.Event().wait()
        yield UsageReport(Usage())  # pragma: no cover
        yield Finished("stop")  # pragma: no cover


async def test_abort_during_a_model_call_ends_the_chat_span_cancelled(workspace, telemetry):
    provider = HangingProvider()
    agent = create_agent(workspace, provider=provider, tools=[look], autoload_plugins=False,
                         plugins=[telemetry.plugin])
    task = asyncio.ensure_future(agent.run("go"))
    await provider.started.wait()
    agent.abort()
    result = await task
    assert result.status == "interrupted"
    chat = telemetry.one("chat slow-1")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "provider_cancelled"
    assert parent_id(chat) == sid(telemetry.one("invoke_agent smoke"))
    assert telemetry.one("invoke_agent smoke").attributes["error.type"] == "run_cancelled"


# ---------------------------------------------------------------- subagents


def task_tool() -> ToolDefinition:
    @tool(read_only=True, name="task")
    async def task(prompt: str, ctx: Any = None) -> str:
        """Delegate to a subagent."""
        result = await ctx.run_subagent(prompt, system_prompt="You are a helper.")
        return result.text or f"subagent {result.status}"

    return task


def by_prompt(answers: dict[str, list[Any]]) -> Any:
    def turn(request: Any) -> Any:
        return answers[request.messages[0]["content"][0]["text"]].pop(0)
    return turn


async def test_a_subagent_run_is_a_child_of_its_task_tool_span(workspace, telemetry):
    answers = {
        "parent task": [{"tool_calls": [call("task", id="t1", prompt="look at the logs")], **U}, {"text": "done", **U}],
        "look at the logs": [{"tool_calls": [call("look", id="c9", what="logs")], **U}, {"text": "clean", **U}],
    }
    agent = create_agent(workspace, provider=ScriptedProvider([by_prompt(answers)] * 4),
                         tools=[task_tool(), look], autoload_plugins=False, plugins=[telemetry.plugin])
    result = await agent.run("parent task")
    assert result.status == "completed"

    root = telemetry.one("invoke_agent smoke")
    task_span = telemetry.one("execute_tool task")
    child = telemetry.one("invoke_agent smoke/task")  # ctx.run_subagent without a name: parent/tool
    assert parent_id(task_span) == sid(root)
    assert parent_id(child) == sid(task_span)
    assert child.attributes["smoke.run.depth"] == 1
    assert child.attributes["gen_ai.agent.name"] == "smoke/task"
    look_span = telemetry.one("execute_tool look")
    assert parent_id(look_span) == sid(child)
    child_chats = [s for s in telemetry.named("chat") if parent_id(s) == sid(child)]
    root_chats = [s for s in telemetry.named("chat") if parent_id(s) == sid(root)]
    assert len(child_chats) == 2 and len(root_chats) == 2
    # chat spans carry their finish reasons, a subagent's too
    assert sorted(tuple(s.attributes["gen_ai.response.finish_reasons"]) for s in child_chats) == [
        ("stop",), ("tool_calls",)]
    assert all(s.attributes["gen_ai.usage.input_tokens"] == 12 for s in child_chats)
    assert len({s.context.trace_id for s in telemetry.spans()}) == 1
    assert task_span.start_time <= child.start_time <= child.end_time <= task_span.end_time
    # the parent's totals include what its subagent spent
    assert root.attributes["gen_ai.usage.input_tokens"] == 48


# ---------------------------------------------------------------- context


async def test_a_run_inside_an_application_span_is_its_child(workspace, telemetry):
    app_tracer = telemetry.tracer_provider.get_tracer("app")
    agent = agent_for(workspace, telemetry, ["ok"])
    with app_tracer.start_as_current_span("handle request") as app_span:
        await agent.run("go")
    root = telemetry.one("invoke_agent smoke")
    assert parent_id(root) == app_span.get_span_context().span_id
    assert root.context.trace_id == app_span.get_span_context().trace_id


async def test_spans_made_inside_a_tool_nest_under_its_span_and_nothing_leaks(workspace, telemetry, caplog):
    inner_tracer = telemetry.tracer_provider.get_tracer("tool-code")

    @tool(read_only=True)
    async def traced(what: str) -> str:
        """Does work in its own span."""
        with inner_tracer.start_as_current_span(f"inner {what}"):
            return what

    @tool(read_only=True)
    def traced_sync(what: str) -> str:
        """Does work in its own span, in a worker thread."""
        with inner_tracer.start_as_current_span(f"inner sync {what}"):
            return what

    before = otel_context.get_current()
    agent = agent_for(workspace, telemetry, [
        {"tool_calls": [call("traced", what="a"), call("traced", what="b")]},   # concurrent: read-only
        {"tool_calls": [call("traced_sync", what="c")]},
        "done",
    ], traced, traced_sync)
    with caplog.at_level(logging.ERROR):
        await agent.run("go")
    assert otel_context.get_current() == before  # the run left no context attached
    assert not [r for r in caplog.records if "detach" in r.getMessage()]
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in telemetry.named("execute_tool")}
    inner = {s.name: s for s in telemetry.named("inner")}
    assert parent_id(inner["inner a"]) == sid(tools["call_1_1"])
    assert parent_id(inner["inner b"]) == sid(tools["call_1_2"])
    assert parent_id(inner["inner sync c"]) == sid(tools["call_2_1"])
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_an_agent_given_its_own_plugin_is_not_traced_twice(workspace, telemetry):
    import smoke_otel

    agent = create_agent(workspace, provider=ScriptedProvider(["ok"]), tools=[look], autoload_plugins=True,
                         plugins=[telemetry.plugin])
    assert any(p is smoke_otel for p in agent.plugin_manager.get_plugins())  # the installed plugin is loaded
    await agent.run("go")
    assert len(telemetry.named("invoke_agent")) == 1
    assert not smoke_otel._default._runs


# ---------------------------------------------------------------- metrics


async def test_metrics_follow_the_conventions(workspace, telemetry):
    agent = agent_for(workspace, telemetry,
                      [{"tool_calls": [call("look", what="a")], **U}, {"tool_calls": [call("broken", what="b")], **U},
                       {"text": "ok", **U}], look, broken)
    await agent.run("go")
    m = telemetry.metrics()
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
            "gen_ai.request.model": "scripted-model"}
    assert "gen_ai.client.token.usage" not in m and "gen_ai.client.operation.duration" not in m
    for name, total in (("gen_ai.client.inference.usage.input_tokens", 36),
                        ("gen_ai.client.inference.usage.output_tokens", 15)):
        [point] = m[name]
        assert dict(point.attributes) == {**base, "gen_ai.token.modality": "unknown"} and point.value == total
    assert "gen_ai.client.inference.usage.cache_read.input_tokens" not in m  # none was reported
    per_call = {name: m[f"gen_ai.client.inference.operation.{name}"][0] for name in ("input_tokens", "output_tokens")}
    assert (per_call["input_tokens"].count, per_call["input_tokens"].sum) == (3, 36)
    assert (per_call["output_tokens"].count, per_call["output_tokens"].sum) == (3, 15)
    assert list(per_call["input_tokens"].explicit_bounds)[:3] == [1, 4, 16]  # the advised buckets
    [duration] = m["gen_ai.client.inference.duration"]
    assert dict(duration.attributes) == base and duration.count == 3
    assert list(duration.explicit_bounds)[:2] == [0.01, 0.02]
    [inference_calls] = m["gen_ai.invoke_agent.inference_calls"]
    [tool_calls] = m["gen_ai.invoke_agent.tool_calls"]
    assert (inference_calls.count, inference_calls.sum, tool_calls.sum) == (1, 3, 2)
    assert inference_calls.attributes["gen_ai.agent.name"] == "smoke"
    tools = {(p.attributes["gen_ai.tool.name"], p.attributes.get("error.type")): p.count
             for p in m["gen_ai.execute_tool.duration"]}
    assert tools == {("look", None): 1, ("broken", "tool_failed"): 1}
    assert {(p.attributes["gen_ai.operation.name"], p.attributes["error.type"]): p.value
            for p in m["smoke.failures"]} == {("execute_tool", "tool_failed"): 1}
    [agent_duration] = m["gen_ai.invoke_agent.duration"]
    assert agent_duration.attributes["gen_ai.agent.name"] == "smoke" and agent_duration.count == 1
    assert "smoke.warnings" not in m


async def test_without_a_configured_sdk_the_plugin_records_nothing_and_runs(workspace):
    """The installed plugin with no provider anywhere: API no-ops, the run is unchanged."""
    import smoke_otel

    agent = create_agent(workspace, provider=ScriptedProvider([{"tool_calls": [call("look", what="x")]}, "ok"]),
                         tools=[look], autoload_plugins=False, plugins=[types.SimpleNamespace(
                             __name__="otel-default", **{name: getattr(smoke_otel, name) for name in (
                                 "before_run", "after_run", "before_model_call", "after_model_call",
                                 "before_tool_call", "after_tool_call")})])
    result = await agent.run("go")
    assert result.status == "completed" and result.steps == 2
    assert not smoke_otel._default._runs
    assert not trace.get_current_span().is_recording()


@pytest.mark.parametrize("value", [True, False])
async def test_the_otel_agent_name_setting_is_validated(workspace, value):
    import smoke_otel

    from smoke_core.settings import SettingsError

    plugin = types.SimpleNamespace(__name__="otel-settings", register_settings=smoke_otel.register_settings)
    if value:
        agent = create_agent(workspace, provider=ScriptedProvider(["ok"]), autoload_plugins=False,
                             plugins=[plugin], otel_agent_name="reviewer/v2")
        assert agent.options.get("otel_agent_name") == "reviewer/v2"
    else:
        with pytest.raises(SettingsError, match="otel_agent_name"):
            create_agent(workspace, provider=ScriptedProvider(["ok"]), autoload_plugins=False,
                         plugins=[plugin], otel_agent_name="x" * 100)


async def test_broken_telemetry_never_stops_a_run_or_blocks_a_call(workspace, caplog):
    """The before-hooks fail closed in Smoke; smoke-otel's must not turn a telemetry fault into a block."""
    from opentelemetry.sdk.trace import TracerProvider
    from smoke_otel import OtelPlugin

    class FlakyProvider(TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            real = super().get_tracer(*args, **kwargs)

            class Flaky:
                def start_span(self, name: str, **kw: Any) -> Any:
                    if not name.startswith("invoke_agent"):
                        raise RuntimeError("exporter on fire")
                    return real.start_span(name, **kw)

            return Flaky()

    ran = []

    @tool(kind="edit")
    def write(path: str) -> str:
        """Write."""
        ran.append(path)
        return "written"

    agent = create_agent(workspace, provider=ScriptedProvider([{"tool_calls": [call("write", path="a")]}, "ok"]),
                         tools=[write], permission="allow-all", autoload_plugins=False,
                         plugins=[OtelPlugin(tracer_provider=FlakyProvider())])
    warnings = []
    agent.on("run.warning", lambda e: warnings.append(e.data["error"]["code"]))
    with caplog.at_level(logging.ERROR, logger="smoke"):
        result = await agent.run("go")
    assert result.status == "completed" and ran == ["a"]
    assert "could not start the chat span" in caplog.text and "could not start the tool span" in caplog.text
    assert "hook_failed" in warnings  # after_tool_call fails open, reported


async def test_a_subagent_is_named_by_its_definition(workspace, telemetry):
    @tool(read_only=True)
    async def review(prompt: str, ctx: Any = None) -> str:
        """Delegate to the reviewer."""
        result = await ctx.run_subagent(prompt, system_prompt="You review.", name="code-reviewer")
        return result.text or "none"

    answers = {"parent": [{"tool_calls": [call("review", id="r1", prompt="review it")], **U}, {"text": "done", **U}],
               "review it": [{"text": "looks fine", **U}]}
    agent = create_agent(workspace, provider=ScriptedProvider([by_prompt(answers)] * 3), tools=[review],
                         autoload_plugins=False, plugins=[telemetry.plugin])
    assert (await agent.run("parent")).status == "completed"
    child = telemetry.one("invoke_agent code-reviewer")
    assert child.attributes["gen_ai.agent.name"] == "code-reviewer"
    assert parent_id(child) == sid(telemetry.one("execute_tool review"))
    calls = {p.attributes["gen_ai.agent.name"]: p.sum for p in telemetry.metrics()["gen_ai.invoke_agent.inference_calls"]}
    assert calls == {"smoke": 2, "code-reviewer": 1}


async def test_chat_spans_carry_finish_reasons_and_the_response_model(workspace, telemetry):
    agent = agent_for(workspace, telemetry, [{"tool_calls": [call("look", what="a")], **U},
                                             {"text": "ok", "response_model": "scripted-model-2026",
                                              "response_id": "resp_7", **U}])
    await agent.run("go")
    chats = sorted(telemetry.named("chat"), key=lambda s: s.start_time)
    assert [tuple(s.attributes["gen_ai.response.finish_reasons"]) for s in chats] == [("tool_calls",), ("stop",)]
    assert chats[1].attributes["gen_ai.response.model"] == "scripted-model-2026"
    assert chats[1].attributes["gen_ai.response.id"] == "resp_7"
    assert "gen_ai.response.model" not in chats[0].attributes


async def test_the_legacy_names_from_the_constructor(workspace, make_telemetry):
    telemetry = make_telemetry(semconv="legacy")
    agent = agent_for(workspace, telemetry, [{"text": "ok", "usage": {"input_tokens": 3, "output_tokens": 2,
                                                                       "cache_write_tokens": 1}}])
    await agent.run("go")
    m = telemetry.metrics()
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= set(m)
    assert not [n for n in m if n.startswith("gen_ai.client.inference") or "inference_calls" in n]
    usage = {p.attributes["gen_ai.token.type"]: p.sum for p in m["gen_ai.client.token.usage"]}
    assert usage == {"input": 3, "output": 2}
    chat = telemetry.one("chat scripted-model")
    assert chat.attributes["gen_ai.usage.cache_creation.input_tokens"] == 1


def test_a_bad_semconv_value_is_refused():
    from smoke_otel import OtelPlugin

    with pytest.raises(ValueError, match="semconv must be 'latest', 'legacy' or None"):
        OtelPlugin(semconv="newest")


@pytest.mark.parametrize("value, mode", [
    (None, "latest"), ("", "latest"), ("gen_ai_latest_experimental", "latest"), ("http,gen_ai_legacy", "legacy"),
    ("gen_ai_legacy, gen_ai_latest_experimental", "latest"), ("database", "latest"),
])
def test_the_opt_in_variable(value, mode):
    from smoke_otel._conventions import names_from_env

    env = {} if value is None else {"OTEL_SEMCONV_STABILITY_OPT_IN": value}
    assert names_from_env(env).mode == mode


async def test_usage_counters_are_summed_then_added_exactly(workspace, telemetry):
    """Counters reach the meter in batches (every USAGE_FLUSH_CALLS calls and at the run's end); totals are exact."""
    from smoke_otel._plugin import USAGE_FLUSH_CALLS

    steps = USAGE_FLUSH_CALLS + 5
    turns = [{"tool_calls": [call("look", what=str(i))], "usage": {"input_tokens": 2, "output_tokens": 1,
                                                                    "cache_read_tokens": 1}}
             for i in range(steps - 1)] + [{"text": "ok", "usage": {"input_tokens": 2, "output_tokens": 1}}]
    agent = agent_for(workspace, telemetry, turns, max_steps=steps + 1)
    await agent.run("go")
    m = telemetry.metrics()
    assert m["gen_ai.client.inference.usage.input_tokens"][0].value == 2 * steps
    assert m["gen_ai.client.inference.usage.output_tokens"][0].value == steps
    assert m["gen_ai.client.inference.usage.cache_read.input_tokens"][0].value == steps - 1
