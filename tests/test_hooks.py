"""Hook semantics, one by one (DESIGN §2)."""

from __future__ import annotations

import asyncio

import pytest

from smoke_core import ToolResult, create_agent, hookimpl, tool
from smoke_core.testing import ScriptedProvider


@tool
def write_note(path: str, content: str) -> str:
    """Write a note (test tool, needs approval)."""
    return f"wrote {len(content)} chars to {path}"


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo text back."""
    return text


def make(workspace, turns, **kw):
    provider = ScriptedProvider(turns)
    kw.setdefault("tools", [write_note, echo])
    kw.setdefault("auto_approve", True)
    agent = create_agent(workspace, provider=provider, **kw)
    return agent, provider


def call(name, **input):
    return {"tool_calls": [{"name": name, "input": input}]}


def tool_results(provider, i):
    """The tool_result blocks of request i's last message."""
    return provider.requests[i].messages[-1]["content"]


# ------------------------------------------------------------ before_tool_call


async def test_before_tool_call_rewrite_chains_across_two_plugins(workspace):
    seen = []

    class First:
        @hookimpl
        def before_tool_call(self, tool_name, input):
            seen.append(("first", dict(input)))
            return {"input": {**input, "text": input["text"] + "-a"}}

    class Second:
        @hookimpl
        def before_tool_call(self, input):  # subset signature
            seen.append(("second", dict(input)))
            return {"input": {**input, "text": input["text"] + "-b"}}

    # pluggy calls the last registered first: Second then First
    agent, provider = make(workspace, [call("echo", text="x"), "done"], plugins=[First(), Second()])
    result = await agent.run("go")
    assert result.status == "completed"
    assert seen == [("second", {"text": "x"}), ("first", {"text": "x-b"})]
    assert tool_results(provider, 1)[0]["content"][0]["text"] == "x-b-a"


async def test_first_block_wins_and_ends_chain(workspace):
    calls = []

    class Blocker:
        @hookimpl
        def before_tool_call(self, tool_name):
            calls.append("blocker")
            return {"block": True, "reason": "policy says no"}

    class Later:
        @hookimpl(trylast=True)
        def before_tool_call(self, tool_name):
            calls.append("later")

    class Audit:
        def __init__(self):
            self.seen = []

        @hookimpl
        def after_tool_call(self, tool_name, blocked, error, result):
            self.seen.append((tool_name, blocked, error.code if error else None, result.is_error))

    audit = Audit()
    agent, provider = make(
        workspace, [call("write_note", path="a", content="b"), "ok"], plugins=[Later(), Blocker(), audit]
    )
    events = []
    agent.on_any(events.append)
    await agent.run("go")
    assert calls == ["blocker"]
    assert audit.seen == [("write_note", True, "tool_blocked", True)]
    block = tool_results(provider, 1)[0]
    assert block["is_error"] is True
    assert "policy says no" in block["content"][0]["text"]
    # no separate blocked event, no permission prompt
    types = [e.type for e in events]
    assert "permission.required" not in types
    done = [e for e in events if e.type == "tool.completed"]
    assert done[0].data["is_error"] is True


async def test_before_tool_call_runs_before_permission_gate(workspace):
    class Blocker:
        @hookimpl
        def before_tool_call(self, tool_name):
            return {"block": True, "reason": "no"}

    agent, _ = make(workspace, [call("write_note", path="a", content="b"), "ok"], plugins=[Blocker()],
                    auto_approve=False)
    prompts = []
    agent.on("permission.required", prompts.append)
    result = await agent.run("go")
    assert result.status == "completed"
    assert prompts == []


async def test_before_tool_call_raise_is_fail_closed(workspace):
    class Broken:
        @hookimpl
        def before_tool_call(self, tool_name):
            raise RuntimeError("policy server down")

    executed = []

    @tool
    def side_effect() -> str:
        """Has a side effect."""
        executed.append(1)
        return "done"

    audit = []
    agent, provider = make(
        workspace, [call("side_effect"), "ok"], tools=[side_effect], plugins=[Broken()],
        hooks={"after_tool_call": lambda blocked, error: audit.append((blocked, error.code))},
    )
    result = await agent.run("go")
    assert result.status == "completed"  # the run goes on
    assert executed == []
    text = tool_results(provider, 1)[0]["content"][0]["text"]
    assert "policy server down" in text
    assert audit == [(True, "hook_failed")]


async def test_rewrite_into_invalid_input_is_refused(workspace):
    agent, provider = make(
        workspace, [call("echo", text="x"), "ok"],
        hooks={"before_tool_call": lambda input: {"input": {"text": 5}}},
    )
    await agent.run("go")
    block = tool_results(provider, 1)[0]
    assert block["is_error"] and "text" in block["content"][0]["text"]


async def test_async_hooks_are_awaited(workspace):
    order = []

    class Async:
        @hookimpl
        async def before_tool_call(self, input):
            await asyncio.sleep(0)
            order.append("before")
            return {"input": {"text": "async!"}}

        @hookimpl
        async def after_tool_call(self, result):
            await asyncio.sleep(0)
            order.append(("after", result.content[0]["text"]))

        @hookimpl
        async def before_model_call(self, messages):
            order.append("model")

    agent, _ = make(workspace, [call("echo", text="x"), "ok"], plugins=[Async()])
    await agent.run("go")
    assert order == ["model", "before", ("after", "async!"), "model"]


# ------------------------------------------------------------ before_model_call


async def test_before_model_call_rewrites_chain_and_tools(workspace):
    class AddNote:
        @hookimpl
        def before_model_call(self, messages):
            note = {"role": "user", "content": [{"type": "text", "text": "note from A"}]}
            return {"messages": [*messages, note]}

    class DropTools:
        @hookimpl(tryfirst=True)
        def before_model_call(self, tools, system):
            return {"tools": [t for t in tools if t["name"] != "write_note"], "system": system + "\nEXTRA"}

    agent, provider = make(workspace, ["hi"], plugins=[AddNote(), DropTools()])
    await agent.run("go")
    req = provider.requests[0]
    assert [t["name"] for t in req.tools] == ["echo"]
    assert req.system.endswith("EXTRA")
    assert req.messages[-1]["content"][0]["text"] == "note from A"
    # the rewrite does not change the stored history
    assert all(m["content"][0].get("text") != "note from A" for m in agent.store.load("x"))


async def test_before_model_call_block_aborts_run(workspace):
    agent, provider = make(
        workspace, ["never"], hooks={"before_model_call": lambda: {"block": True, "reason": "budget exhausted"}}
    )
    failed = []
    agent.on("run.failed", failed.append)
    result = await agent.run("go")
    assert result.status == "failed"
    assert result.error.code == "hook_blocked"
    assert "budget exhausted" in result.error.message
    assert provider.requests == []
    assert len(failed) == 1


async def test_before_model_call_raise_is_fail_closed(workspace):
    def boom(messages):
        raise ValueError("bad")

    agent, provider = make(workspace, ["never"], hooks={"before_model_call": boom})
    result = await agent.run("go")
    assert result.status == "failed"
    assert result.error.code == "hook_blocked"
    assert "ValueError" in result.error.message
    assert provider.requests == []


# ------------------------------------------------------------ after hooks fail open


async def test_after_model_call_raise_is_fail_open(workspace):
    seen = []

    def observe(usage, duration_ms, error, response):
        seen.append((usage["input_tokens"] > 0, duration_ms >= 0, error, response["role"]))
        raise RuntimeError("observer bug")

    agent, _ = make(workspace, ["fine"], hooks={"after_model_call": observe})
    result = await agent.run("go")
    assert result.status == "completed" and result.text == "fine"
    assert seen == [(True, True, None, "assistant")]


async def test_after_tool_call_raise_is_fail_open(workspace):
    def observe(tool_name):
        raise RuntimeError("audit bug")

    agent, provider = make(workspace, [call("echo", text="x"), "ok"], hooks={"after_tool_call": observe})
    result = await agent.run("go")
    assert result.status == "completed"
    assert tool_results(provider, 1)[0]["content"][0]["text"] == "x"


async def test_after_tool_call_once_per_call_on_every_path(workspace):
    @tool(read_only=True)
    def raises() -> str:
        """Always raises."""
        raise OSError("disk on fire")

    seen = []
    turns = [
        {"tool_calls": [
            {"name": "echo", "input": {"text": "ok"}},              # success
            {"name": "echo", "input": {"text": 1}},                 # invalid input
            {"name": "missing", "input": {}},                       # unknown tool
            {"name": "raises", "input": {}},                        # tool raises
            {"name": "echo", "arguments": "{not json"},             # malformed JSON
            {"name": "write_note", "input": {"path": "p", "content": "c"}},  # denied
        ]},
        "done",
    ]
    agent, provider = make(
        workspace, turns, tools=[write_note, echo, raises], auto_approve=False, permission="deny-all",
        hooks={"after_tool_call": lambda tool_call_id, error, blocked: seen.append(
            (tool_call_id, error.code if error else None, blocked))},
    )
    result = await agent.run("go")
    assert result.status == "completed"
    assert sorted(seen) == sorted([
        ("call_1_1", None, False),
        ("call_1_2", "tool_invalid_input", False),
        ("call_1_3", "tool_not_found", False),
        ("call_1_4", "tool_failed", False),
        ("call_1_5", "tool_invalid_input", False),
        ("call_1_6", "permission_denied", False),
    ])
    texts = [b["content"][0]["text"] for b in tool_results(provider, 1)]
    assert "field 'text'" in texts[1]
    assert "'missing'" in texts[2] and "echo" in texts[2]
    assert "disk on fire" in texts[3] and "Traceback" not in texts[3]
    assert "not valid JSON" in texts[4]
    assert "permission denied" in texts[5]


async def test_after_tool_call_on_abort(workspace):
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Waits forever."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    seen = []
    agent, _ = make(workspace, [call("slow")], tools=[slow],
                    hooks={"after_tool_call": lambda error: seen.append(error.code)})
    agent.on("tool.started", lambda e: None)
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    agent.abort()
    result = await task
    assert result.status == "interrupted"
    assert seen == ["tool_cancelled"]


async def test_hooks_dict_rejects_unknown_hook(workspace):
    with pytest.raises(ValueError, match="no such hook"):
        create_agent(workspace, provider=ScriptedProvider([]), hooks={"before_tool": lambda: None})


async def test_before_run_and_after_run(workspace):
    seen = []

    class Lifecycle:
        @hookimpl
        def before_run(self, run):
            seen.append(("before", run.task))

        @hookimpl
        def after_run(self, run, status, error):
            seen.append(("after", status, error))

    agent, _ = make(workspace, ["ok"], plugins=[Lifecycle()])
    await agent.run("task!")
    assert seen == [("before", "task!"), ("after", "completed", None)]


async def test_tool_result_presentation_wins(workspace):
    @tool(read_only=True, presentation={"label": "Base", "icon": "🔧", "tone": "info"})
    def styled() -> ToolResult:
        """Styled."""
        from smoke_core import ToolPresentation

        return ToolResult(content=[{"type": "text", "text": "x"}], presentation=ToolPresentation(tone="success"))

    agent, _ = make(workspace, [call("styled"), "ok"], tools=[styled])
    done = []
    agent.on("tool.completed", done.append)
    await agent.run("go")
    assert done[0].data["presentation"]["tone"] == "success"
    assert done[0].data["presentation"]["label"] == "Base"


# ------------------------------------------------------------ registration hooks


def test_register_providers_and_model_prefix(workspace, monkeypatch):
    made = []

    class Fake:
        def __init__(self, model, api_key, user_id):
            self.name, self.model, self.api_key, self.user_id = "fake", model, api_key, user_id

        async def stream(self, request):
            yield  # pragma: no cover

    class Providers:
        @hookimpl
        def register_providers(self, register):
            def factory(model=None, api_key=None, user_id=None, **kw):
                made.append(kw)
                from smoke_core.providers import resolve_api_key

                return Fake(model, resolve_api_key(api_key, "fake", user_id, "FAKE_API_KEY"), user_id)

            register("fake", factory, env_var="FAKE_API_KEY", default_model="fake-1")

    class Broken:
        @hookimpl
        def register_providers(self, register):
            raise RuntimeError("broken provider plugin")

    monkeypatch.setenv("FAKE_API_KEY", "from-env")
    agent = create_agent(workspace, provider="fake", plugins=[Providers(), Broken()])
    assert agent.provider.model == "fake-1" and agent.provider.api_key == "from-env"
    agent = create_agent(workspace, model="fake:big", api_key=lambda p, u: f"{p}-{u}", user_id="u1",
                         plugins=[Providers()])
    assert agent.provider.model == "big" and agent.provider.api_key == "fake-u1"
    assert "fake" in agent.providers.names() and "demo" in agent.providers.names()


async def test_close_agent_hook(workspace):
    closed = []

    class Holder:
        @hookimpl
        async def close_agent(self, agent):
            closed.append(agent)

    agent, _ = make(workspace, ["ok"], plugins=[Holder()])
    async with agent:
        await agent.run("go")
    assert closed == [agent]


def test_register_tools_raise_names_the_plugin(workspace):
    class Bad:
        __name__ = "bad-tools"

        @hookimpl
        def register_tools(self, register, options):
            raise OSError("cannot read config")

    with pytest.raises(RuntimeError, match=r"bad-tools.*cannot read config"):
        create_agent(workspace, provider=ScriptedProvider([]), plugins=[Bad()])


def test_register_tools_gets_plugin_options(workspace):
    seen = {}

    class Reader:
        @hookimpl
        def register_settings(self, register):
            register("mcp_servers", dict)

        @hookimpl
        def register_tools(self, options):
            seen["servers"] = options.get("mcp_servers")
            seen["root"] = options.workspace.root

    create_agent(workspace, provider=ScriptedProvider([]), plugins=[Reader()], mcp_servers={"x": {}})
    assert seen == {"servers": {"x": {}}, "root": workspace.resolve()}


async def test_before_run_can_attach_content_to_the_task(workspace):
    class Mentions:
        @hookimpl
        def before_run(self, run):
            if "@docs:readme" in run.task:
                run.add_to_task([{"type": "text", "text": "[resource docs:readme]\nHello from the readme."}])

    provider = ScriptedProvider(["ok"])
    agent = create_agent(workspace, provider=provider, plugins=[Mentions()], session_id="s", autoload_plugins=False)
    await agent.run("summarise @docs:readme")
    first = provider.requests[0].messages[-1]["content"]
    assert [b["text"] for b in first] == ["summarise @docs:readme", "[resource docs:readme]\nHello from the readme."]
    assert agent.store.load("s")[0]["content"] == first  # stored as the model saw it


async def test_after_model_call_sees_why_the_model_stopped(workspace):
    seen = []

    class Watch:
        @hookimpl
        def after_model_call(self, finish_reason, response_model, response_id, error):
            seen.append((finish_reason, response_model, response_id, error))

    agent, _ = make(workspace, [call("echo", text="x"), "done"], plugins=[Watch()])
    await agent.run("go")
    assert [s[0] for s in seen] == ["tool_calls", "stop"]
    assert all(s[3] is None for s in seen)
