"""Core support for subagents (``ctx.run_subagent``): a fresh context under
the parent's policy, events forwarded with ``parent_tool_call_id``, a depth
limit, abort, concurrency of read-only delegations."""

from __future__ import annotations

import asyncio

from smoke_core import Guards, create_agent, tool
from smoke_core.testing import ScriptedProvider

CHILD_PROMPT = "You are a helper."


def delegate_tool(*, read_only: bool):
    @tool(read_only=True, name="delegate")
    async def delegate(prompt: str, tools: list[str] | None = None, ctx=None) -> str:
        """Delegate a task to a subagent."""
        result = await ctx.run_subagent(prompt, system_prompt=CHILD_PROMPT, tools=tools)
        if result.status != "completed":
            return f"subagent {result.status}: {result.error.message if result.error else ''}"
        return result.text

    return delegate.model_copy(update={"concurrent": lambda args, tools: read_only})


@tool(read_only=True)
async def look(what: str) -> str:
    """Look at something."""
    await asyncio.sleep(0.2)
    return f"saw {what}"


@tool(kind="edit")
def edit(path: str) -> str:
    """Edit a file (needs approval)."""
    return f"edited {path}"


def call(name, id=None, **input):
    c = {"name": name, "input": input}
    if id:
        c["id"] = id
    return c


def by_prompt(answers):
    """A provider turn that answers each conversation by its first user message."""
    def turn(request):
        first = request.messages[0]["content"][0]["text"]
        script = answers[first]
        return script.pop(0)
    return turn


async def test_a_subagent_gets_a_fresh_context_and_the_parent_sees_only_its_answer(workspace):
    u = {"usage": {"input_tokens": 10, "output_tokens": 2}}
    answers = {
        "parent task": [{"tool_calls": [call("delegate", prompt="look at the logs")], **u}, {"text": "all good", **u}],
        "look at the logs": [{"tool_calls": [call("look", what="logs")], **u}, {"text": "the logs are clean", **u}],
    }
    provider = ScriptedProvider([by_prompt(answers)] * 4)
    agent = create_agent(workspace, provider=provider, tools=[delegate_tool(read_only=True), look])
    events = []
    agent.on_any(events.append)
    result = await agent.run("parent task")
    assert result.status == "completed" and result.text == "all good"
    child_requests = [r for r in provider.requests if r.messages[0]["content"][0]["text"] == "look at the logs"]
    assert child_requests[0].system == CHILD_PROMPT
    assert len(child_requests[0].messages) == 1  # fresh: nothing of the parent's conversation
    # the parent's transcript holds only the subagent's answer
    parent_result = result.messages[2]["content"][0]
    assert parent_result["content"][0]["text"] == "the logs are clean"
    assert "saw logs" not in str(result.messages)  # the child's own tool results stay in the child
    # events: nested under the delegate call, lifecycle renamed, one run.completed
    delegate_id = result.messages[1]["content"][0]["id"]
    child_tool = [e for e in events if e.type == "tool.started" and e.data["tool_name"] == "look"]
    assert child_tool and child_tool[0].data["parent_tool_call_id"] == delegate_id
    assert [e.type for e in events if e.type.startswith("subagent.")] == ["subagent.started", "subagent.completed"]
    assert [e.type for e in events].count("run.completed") == 1
    assert not any(e.type == "step.started" and "parent_tool_call_id" in e.data for e in events)
    # the parent's usage includes the child's two calls (each scripted call reports 10 in / 2 out)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 8)


async def test_the_subagent_asks_permission_through_the_parent(workspace):
    answers = {
        "parent task": [{"tool_calls": [call("delegate", prompt="fix it")]}, "done"],
        "fix it": [{"tool_calls": [call("edit", path="a.py")]}, "fixed"],
    }
    provider = ScriptedProvider([by_prompt(answers)] * 4)
    agent = create_agent(workspace, provider=provider, tools=[delegate_tool(read_only=False), edit])
    asked = []

    def approve(event):
        asked.append(event)
        agent.resolve_permission(event.data["tool_call_id"], "allow")

    agent.on("permission.required", approve)
    result = await agent.run("parent task")
    assert result.status == "completed"
    (ask,) = asked
    assert ask.data["tool_name"] == "edit" and ask.data["parent_tool_call_id"]
    assert ask.data["tool_call_id"].startswith(ask.data["parent_tool_call_id"] + ".")  # never clashes with the parent's
    assert result.messages[2]["content"][0]["content"][0]["text"] == "fixed"


async def test_subagents_nest_only_as_deep_as_the_guard_allows(workspace):
    answers = {
        "top": [{"tool_calls": [call("delegate", prompt="level 1")]}, "top done"],
        "level 1": [{"tool_calls": [call("delegate", prompt="level 2")]}, "one done"],
        "level 2": [{"tool_calls": [call("delegate", prompt="level 3")]}, "two done"],
    }
    provider = ScriptedProvider([by_prompt(answers)] * 6)
    agent = create_agent(workspace, provider=provider, tools=[delegate_tool(read_only=True)],
                         guards=Guards(subagent_depth=2))
    events = []
    agent.on("tool.completed", events.append)
    result = await agent.run("top")
    assert result.status == "completed"
    refused = [e for e in events if e.data["is_error"]]
    assert len(refused) == 1 and "nest at most 2 deep" in refused[0].data["content"][0]["text"]


async def test_two_read_only_delegations_in_one_step_run_concurrently(workspace):
    answers = {
        "parent": [{"tool_calls": [call("delegate", prompt="a"), call("delegate", prompt="b")]}, "both done"],
        "a": [{"tool_calls": [call("look", what="a")]}, "a ok"],
        "b": [{"tool_calls": [call("look", what="b")]}, "b ok"],
    }
    provider = ScriptedProvider([by_prompt(answers)] * 6)
    agent = create_agent(workspace, provider=provider, tools=[delegate_tool(read_only=True), look])
    order = []
    agent.on("tool.started", lambda e: order.append(("start", e.data["tool_name"])))
    agent.on("tool.completed", lambda e: order.append(("end", e.data["tool_name"])))
    result = await agent.run("parent")
    assert result.status == "completed"
    texts = [b["content"][0]["text"] for b in result.messages[2]["content"]]
    assert texts == ["a ok", "b ok"]
    looks = [o for o in order if o[1] == "look"]
    assert looks[:2] == [("start", "look"), ("start", "look")]  # both children were looking at once


async def test_aborting_the_parent_aborts_the_subagent(workspace):
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    answers = {
        "parent": [{"tool_calls": [call("delegate", prompt="child")]}],
        "child": [{"tool_calls": [call("wait_forever")]}],
    }
    provider = ScriptedProvider([by_prompt(answers)] * 2)
    agent = create_agent(workspace, provider=provider, tools=[delegate_tool(read_only=True), wait_forever])
    types = []
    agent.on_any(lambda e: types.append(e.type))
    task = asyncio.ensure_future(agent.run("parent"))
    await started.wait()
    agent.abort()
    result = await task
    assert result.status == "interrupted"
    assert "subagent.interrupted" in types and types[-1] == "run.interrupted"
