"""The one hook runner (smoke_core.hooks.runner): what a hook returns is checked in
one place, plugins pluggy cannot honour are refused when they register, every
failure of an observing hook is reported, and pluggy's monitoring sees every
lifecycle hook call."""

from __future__ import annotations

import pytest

from smoke_core import create_agent, hookimpl, tool
from smoke_core.hooks.runner import parse_return
from smoke_core.testing import ScriptedProvider


@tool
def write_note(path: str, content: str) -> str:
    """Write a note (needs approval)."""
    return f"wrote {path}"


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo text back."""
    return text


def call(name, **input):
    return {"tool_calls": [{"name": name, "input": input}]}


def make(workspace, turns, **kw):
    provider = ScriptedProvider(turns)
    kw.setdefault("tools", [write_note, echo])
    kw.setdefault("auto_approve", True)
    return create_agent(workspace, provider=provider, **kw), provider


@pytest.mark.parametrize("returned", [True, "yes", 1, ["input"], {"inptu": {}}, {"block": "maybe"}, {"input": 5}])
async def test_before_tool_call_returning_the_wrong_shape_blocks_the_call_and_the_run_goes_on(workspace, returned):
    class Odd:
        @hookimpl
        def before_tool_call(self, tool_name):
            return returned if tool_name == "write_note" else None

    agent, _ = make(workspace, [call("write_note", path="a", content="x"), call("echo", text="hi"), "done"],
                           plugins=[Odd()])
    completed = []
    agent.on("tool.completed", completed.append)
    result = await agent.run("go")
    assert result.status == "completed", result.error
    first, second = completed
    assert first.data["is_error"] is True
    assert first.data["error"]["code"] == "hook_failed"
    assert "Odd" in first.data["error"]["message"]  # names the plugin
    assert repr(returned)[:20] in first.data["content"][0]["text"]  # and what it returned
    assert second.data["is_error"] is False  # the run went on
    assert not (workspace / "a").exists()


def test_parse_return_suggests_the_key_meant():
    parsed, problem = parse_return("before_tool_call", {"inptu": {}})
    assert parsed is None
    assert "did you mean 'input'" in problem


@pytest.mark.parametrize("option", ["wrapper", "hookwrapper"])
def test_a_wrapper_implementation_is_refused_when_the_agent_is_created(workspace, option):
    class Wrapping:
        @hookimpl(**{option: True})
        def before_tool_call(self, tool_name):
            yield

    with pytest.raises(ValueError, match=rf"before_tool_call is declared with {option}=True.*Remove {option}=True"):
        make(workspace, ["done"], plugins=[Wrapping()])


def test_an_implementation_of_a_hook_that_does_not_exist_is_refused(workspace):
    class Typo:
        @hookimpl
        def before_tool_cal(self, tool_name):
            return None

    with pytest.raises(ValueError, match=r"'before_tool_cal' is not a Smoke hook\. Did you mean 'before_tool_call'"):
        make(workspace, ["done"], plugins=[Typo()])


def test_an_argument_the_hook_does_not_have_is_refused(workspace):
    class Extra:
        @hookimpl
        def before_tool_call(self, tool_name, nonsense):
            return None

    with pytest.raises(ValueError, match=r"nonsense"):
        make(workspace, ["done"], plugins=[Extra()])


@pytest.mark.parametrize("hook", ["after_tool_call", "after_model_call", "before_run", "after_run"])
async def test_an_observing_hook_that_raises_is_a_run_warning_and_the_run_goes_on(workspace, hook):
    def boom(**kwargs):
        raise RuntimeError("audit sink down")

    agent, _ = make(workspace, [call("echo", text="x"), "done"], hooks={hook: lambda run=None: boom()})
    warnings = []
    agent.on("run.warning", warnings.append)
    result = await agent.run("go")
    assert result.status == "completed"
    codes = [w.data["error"]["code"] for w in warnings]
    assert "hook_failed" in codes
    message = next(w.data["error"]["message"] for w in warnings if w.data["error"]["code"] == "hook_failed")
    assert hook in message and "audit sink down" in message


async def test_every_implementation_of_an_observing_hook_runs_even_after_one_raises(workspace):
    seen = []

    class Broken:
        @hookimpl(tryfirst=True)
        def after_tool_call(self, tool_name):
            raise RuntimeError("first fails")

    class Audit:
        @hookimpl
        def after_tool_call(self, tool_name):
            seen.append(tool_name)

    agent, _ = make(workspace, [call("echo", text="x"), "done"], plugins=[Broken(), Audit()])
    result = await agent.run("go")
    assert result.status == "completed"
    assert seen == ["echo"]


LIFECYCLE = ("before_run", "before_model_call", "after_model_call", "before_tool_call", "after_tool_call",
             "after_run", "close_agent")


async def test_pluggy_monitoring_sees_every_lifecycle_hook_call(workspace):
    class All:
        @hookimpl
        def before_run(self, run):
            pass

        @hookimpl
        def before_model_call(self, step):
            pass

        @hookimpl
        def after_model_call(self, step):
            pass

        @hookimpl
        async def before_tool_call(self, tool_name):  # async implementations are monitored too
            pass

        @hookimpl
        def after_tool_call(self, tool_name):
            pass

        @hookimpl
        def after_run(self, status):
            pass

        @hookimpl
        def close_agent(self, agent):
            pass

    # checkpoints off: their own before_run / before_tool_call would be monitored too
    agent, _ = make(workspace, [call("echo", text="x"), "done"], plugins=[All()], checkpoints=False)
    before, after = [], []
    undo = agent.plugin_manager.add_hookcall_monitoring(
        lambda name, impls, kwargs: before.append((name, [i.plugin_name for i in impls], dict(kwargs))),
        lambda outcome, name, impls, kwargs: after.append(name),
    )
    try:
        result = await agent.run("go")
        await agent.aclose()
    finally:
        undo()
    assert result.status == "completed"
    names = [b[0] for b in before]
    # two model calls and one tool call
    assert names.count("before_model_call") == 2 and names.count("after_model_call") == 2
    assert names.count("before_tool_call") == 1 and names.count("after_tool_call") == 1
    assert set(LIFECYCLE) <= set(names)
    assert names == after
    tool_call = next(b for b in before if b[0] == "before_tool_call")
    assert tool_call[2]["tool_name"] == "echo" and tool_call[1] == [next(iter(tool_call[1]))]
    # switched off again: nothing more is seen
    before.clear()
    agent2, _ = make(workspace, ["done"], plugins=[All()])
    await agent2.run("go")
    assert before == []
