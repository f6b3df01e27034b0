"""The hook points of issue 30, one by one: a permission answer from
``before_tool_call`` (an allow answers only an ask of the mode), context
from ``after_tool_call``, ``session_start`` / ``session_end``,
``before_prompt``, ``before_run_end`` (bounded), ``before_compaction`` and
``before_permission_prompt``."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoke_core import Guards, create_agent, hookimpl, tool
from smoke_core.plugin import ToolContext
from smoke_core.testing import ScriptedProvider


@tool
def write_note(path: str, content: str) -> str:
    """Write a note (test tool, needs approval)."""
    return f"wrote {len(content)} chars to {path}"


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo text back."""
    return text


@tool(read_only=True)
def finish_it(summary: str, ctx: ToolContext) -> str:
    """Finish the task with a summary."""
    ctx.finish(summary)
    return "finished"


def call(name, **input):
    return {"tool_calls": [{"name": name, "input": input}]}


def make(workspace, turns, *plugins, **kw):
    provider = ScriptedProvider(turns)
    kw.setdefault("tools", [write_note, echo])
    agent = create_agent(workspace, provider=provider, plugins=list(plugins), **kw)
    return agent, provider


def answer_every_prompt(agent, answer="deny"):
    asked = []

    def on_required(event):
        asked.append(event.data)
        agent.resolve_permission(event.data["tool_call_id"], answer)

    agent.on("permission.required", on_required)
    return asked


def last_result(provider, i=1):
    return provider.requests[i].messages[-1]["content"][0]


class Permission:
    def __init__(self, answer, **extra):
        self.answer = answer
        self.extra = extra

    @hookimpl
    def before_tool_call(self, tool_name, input):
        return {"permission": self.answer, "reason": "the hook says so", **self.extra}


# ------------------------------------------------------------ before_tool_call's permission answer


async def test_a_hook_allow_answers_the_ask_of_the_mode(workspace):
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], Permission("allow"))
    asked = answer_every_prompt(agent)
    result = await agent.run("go")
    assert result.status == "completed" and asked == []
    assert last_result(provider)["is_error"] is False


@pytest.mark.parametrize("rule", ["deny", "ask"])
async def test_a_hook_allow_never_passes_a_deny_or_ask_rule(workspace, rule):
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], Permission("allow"),
                           permissions={rule: ["write_note"]})
    asked = answer_every_prompt(agent, "deny")
    await agent.run("go")
    assert last_result(provider)["is_error"] is True
    assert len(asked) == (1 if rule == "ask" else 0)


async def test_a_managed_deny_rule_beats_a_hook_allow(workspace, tmp_path, monkeypatch):
    managed = tmp_path / "managed.yaml"
    managed.write_text("permissions:\n  deny: ['write_note']\n")
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], Permission("allow"),
                           permission="allow-all")
    await agent.run("go")
    block = last_result(provider)
    assert block["is_error"] is True and "managed" in block["content"][0]["text"]


async def test_a_hook_allow_does_not_cover_a_secret_looking_path(workspace):
    agent, _provider = make(workspace, [call("write_note", path=".env", content="K=v"), "ok"], Permission("allow"))
    asked = answer_every_prompt(agent, "deny")
    await agent.run("go")
    assert len(asked) == 1 and ".env" in asked[0]["reason"]


async def test_a_hook_ask_asks_even_a_read_only_call_and_yes_does_not_answer_it(workspace):
    agent, provider = make(workspace, [call("echo", text="hi"), "ok"], Permission("ask"), auto_approve=True)
    asked = answer_every_prompt(agent, "allow")
    await agent.run("go")
    assert len(asked) == 1 and "the hook says so" in asked[0]["reason"]
    assert agent._gate.asked_by_rule(asked[0]["tool_call_id"]) is False  # answered and forgotten
    assert last_result(provider)["is_error"] is False


async def test_a_hook_deny_blocks_like_a_block(workspace):
    agent, provider = make(workspace, [call("echo", text="hi"), "ok"], Permission("deny"))
    await agent.run("go")
    block = last_result(provider)
    assert block["is_error"] is True and "the hook says so" in block["content"][0]["text"]


async def test_the_strictest_answer_of_several_hooks_holds_and_a_rewrite_is_shown_in_the_prompt(workspace):
    class Rewrite:
        @hookimpl
        def before_tool_call(self, input):
            return {"input": {**input, "content": "safer"}, "permission": "allow"}

    agent, _provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], Rewrite(), Permission("ask"))
    asked = answer_every_prompt(agent, "allow")
    await agent.run("go")
    assert len(asked) == 1
    assert asked[0]["input"] == {"path": "a", "content": "safer"}
    assert "rewritten by" in asked[0]["reason"]


# ------------------------------------------------------------ after_tool_call's context


async def test_after_tool_call_context_joins_the_result_the_model_gets(workspace):
    seen = []

    class Context:
        @hookimpl
        def after_tool_call(self, tool_name):
            return {"context": f"note about {tool_name}"}

    class Quiet:
        @hookimpl
        def after_tool_call(self):
            return None

    agent, provider = make(workspace, [call("echo", text="hi"), "ok"], Context(), Quiet())
    agent.on("tool.completed", seen.append)
    await agent.run("go")
    texts = [b["text"] for b in last_result(provider)["content"]]
    assert texts == ["hi", "note about echo"]
    assert seen[0].data["content"][-1]["text"] == "note about echo"


async def test_an_after_tool_call_return_of_the_wrong_shape_is_a_warning(workspace):
    class Wrong:
        @hookimpl
        def after_tool_call(self):
            return {"contxt": "x"}

    agent, _provider = make(workspace, [call("echo", text="hi"), "ok"], Wrong())
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed"
    assert "did you mean 'context'" in warnings[0].data["error"]["message"]


# ------------------------------------------------------------ a session


class Sessions:
    def __init__(self):
        self.starts: list[str] = []
        self.ends: list[str] = []

    @hookimpl
    def session_start(self, run, source):
        self.starts.append(source)
        return {"context": f"started by {source}"}

    @hookimpl
    def session_end(self, agent, reason):
        self.ends.append(reason)


def first_user_texts(provider, i=0):
    first = next(m for m in provider.requests[i].messages if m["role"] == "user")
    return [b["text"] for b in first["content"] if b["type"] == "text"]


async def test_session_start_once_per_agent_with_its_source_and_context(workspace, tmp_path):
    from smoke_core.plugin import SQLiteStore

    store = SQLiteStore(tmp_path / "s.db")
    plugin = Sessions()
    agent, provider = make(workspace, ["one", "two"], plugin, store=store, session_id="ses_a")
    await agent.run("first")
    await agent.run("second")
    assert plugin.starts == ["startup"]
    assert first_user_texts(provider) == ["first", "started by startup"]
    await agent.aclose(reason="prompt_input_exit")
    await agent.aclose()
    assert plugin.ends == ["prompt_input_exit"]

    again, _provider2 = make(workspace, ["three"], plugin, store=store, session_id="ses_a")
    await again.run("third")
    assert plugin.starts == ["startup", "resume"]
    cleared, _ = make(workspace, ["four"], plugin)
    cleared.session_source = "clear"
    await cleared.run("fourth")
    assert plugin.starts[-1] == "clear"


async def test_session_end_is_not_called_for_an_agent_that_never_ran(workspace):
    plugin = Sessions()
    agent, _ = make(workspace, [], plugin)
    await agent.aclose()
    assert plugin.ends == []


def long_run(calls):
    """Turns for a run whose history outgrows a small window: long tool results, then "done"
    (a summary request, which has no tools, gets a summary)."""
    script = iter([call("echo", text="x" * 4000)] * calls + ["done"])

    def turn(request):
        return "the summary" if not request.tools else next(script)

    return [turn] * (calls * 2 + 2)


async def test_session_start_after_compaction_adds_its_context(workspace):
    plugin = Sessions()
    agent, provider = make(workspace, long_run(6), plugin, context_window=3000)
    result = await agent.run("go")
    assert result.status == "completed"
    assert "compact" in plugin.starts
    assert any("started by compact" in str(m["content"]) for m in provider.requests[-1].messages)


# ------------------------------------------------------------ the person's prompt


async def test_before_prompt_block_fails_the_run_and_records_nothing(workspace, tmp_path):
    from smoke_core.plugin import SQLiteStore

    class NoSecrets:
        @hookimpl
        def before_prompt(self, prompt):
            if "password" in prompt:
                return {"block": True, "reason": "no passwords here"}
            return {"context": "prompt checked"}

    store = SQLiteStore(tmp_path / "s.db")
    agent, provider = make(workspace, ["ok"], NoSecrets(), store=store, session_id="ses_p")
    result = await agent.run("my password is hunter2")
    assert result.status == "failed" and result.error.code == "hook_blocked"
    assert "no passwords here" in result.error.message
    assert store.load("ses_p") == [] and provider.requests == []
    result = await agent.run("hello")
    assert result.status == "completed"
    assert first_user_texts(provider) == ["hello", "prompt checked"]


async def test_before_prompt_raise_fails_closed(workspace):
    class Broken:
        @hookimpl
        def before_prompt(self):
            raise RuntimeError("boom")

    agent, provider = make(workspace, ["ok"], Broken())
    result = await agent.run("hi")
    assert result.error.code == "hook_failed" and "boom" in result.error.message and provider.requests == []


# ------------------------------------------------------------ the end of a run


class GoOn:
    def __init__(self, times):
        self.times = times
        self.seen: list[tuple[str | None, int]] = []

    @hookimpl
    def before_run_end(self, run, text, continued):
        self.seen.append((text, continued))
        if continued < self.times:
            return {"continue_with": f"not yet ({continued})"}
        return None


async def test_before_run_end_makes_the_run_go_on_with_its_message(workspace):
    plugin = GoOn(2)
    agent, provider = make(workspace, ["first", "second", "third"], plugin)
    result = await agent.run("go")
    assert result.status == "completed" and result.text == "third"
    assert plugin.seen == [("first", 0), ("second", 1), ("third", 2)]
    assert provider.requests[1].messages[-1]["content"][0]["text"] == "not yet (0)"


async def test_before_run_end_is_bounded(workspace):
    plugin = GoOn(100)
    agent, provider = make(workspace, ["a", "b", "c", "d"], plugin, guards=Guards(stop_continuations=2))
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed" and result.text == "c"
    assert len(provider.requests) == 3
    assert "stop_continuations=2" in warnings[0].data["error"]["message"]


async def test_before_run_end_after_finish_task_and_in_a_subagent(workspace):
    seen = []

    class Once:
        @hookimpl
        def before_run_end(self, run, text, continued):
            seen.append((run.parent is not None, text))
            if continued == 0 and run.parent is None:
                return {"continue_with": "check once more"}

    agent, _provider = make(workspace, [call("finish_it", summary="all done"), call("finish_it", summary="really")],
                           Once(), tools=[finish_it])
    result = await agent.run("go")
    assert result.text == "really"
    assert seen == [(False, "all done"), (False, "really")]


async def test_before_run_end_raise_is_fail_open(workspace):
    class Broken:
        @hookimpl
        def before_run_end(self):
            raise RuntimeError("boom")

    agent, _ = make(workspace, ["done"], Broken())
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed" and "boom" in warnings[0].data["error"]["message"]


# ------------------------------------------------------------ compaction


async def test_before_compaction_can_skip_a_compaction(workspace):
    calls = []

    class Keep:
        @hookimpl
        def before_compaction(self, run, trigger, instructions):
            calls.append((trigger, instructions, run is not None))
            return {"block": True, "reason": "keep everything"}

    agent, _provider = make(workspace, long_run(5), Keep(), context_window=3000)
    events = []
    agent.on_any(lambda e: events.append(e.type))
    warnings = []
    agent.on("run.warning", warnings.append)
    await agent.run("go")
    assert calls and calls[0] == ("auto", "", True)
    assert "compaction.started" not in events
    assert "keep everything" in warnings[0].data["error"]["message"]


# ------------------------------------------------------------ a permission prompt


class Prompted:
    def __init__(self, decision):
        self.decision = decision
        self.seen = []

    @hookimpl
    def before_permission_prompt(self, tool_name, input, tool_call_id, reason, run):
        self.seen.append((tool_name, input, reason))
        return {"decision": self.decision, "reason": "decided by the hook"}


async def test_before_permission_prompt_deny_answers_without_asking(workspace):
    plugin = Prompted("deny")
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], plugin)
    asked = answer_every_prompt(agent, "allow")
    await agent.run("go")
    assert asked == [] and plugin.seen == [("write_note", {"path": "a", "content": "b"}, None)]
    text = last_result(provider)["content"][0]["text"]
    assert "permission denied" in text and "decided by the hook" in text


async def test_before_permission_prompt_allow_only_answers_the_mode(workspace):
    plugin = Prompted("allow")
    agent, provider = make(workspace, [call("write_note", path="a", content="b"), "ok"], plugin)
    asked = answer_every_prompt(agent, "deny")
    await agent.run("go")
    assert asked == [] and last_result(provider)["is_error"] is False

    ruled, provider2 = make(workspace, [call("write_note", path="a", content="b"), "ok"], plugin,
                            permissions={"ask": ["write_note"]})
    asked = answer_every_prompt(ruled, "deny")
    await ruled.run("go")
    assert len(asked) == 1 and last_result(provider2)["is_error"] is True


def test_the_new_hooks_are_in_the_hook_reference():
    text = (Path(__file__).resolve().parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
    for name in ("session_start", "session_end", "before_prompt", "before_run_end", "before_compaction",
                 "before_permission_prompt"):
        assert f"## `{name}`" in text
