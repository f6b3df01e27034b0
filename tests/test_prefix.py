"""Prompt caching needs a stable prefix: each request of a run repeats the
previous request byte for byte and only adds to its end — skills' instructions,
subagents and the nested AGENTS.md offers included. Only a compaction may
break the prefix (issue 16 item 3)."""

from __future__ import annotations

import itertools
import json

from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider

TASK = "the long task"


@tool(read_only=True, kind="read", permission_key="path")
def read_file(path: str, ctx=None) -> str:
    """Read a file."""
    return ctx.workspace.resolve(path).read_text()


@tool(read_only=True)
def use_skill(name: str, ctx=None) -> str:
    """Load a skill."""
    ctx.add_instructions(f"## Skill: {name}\nAlways do {name} carefully.")
    return f"skill {name} loaded"


@tool(read_only=True, name="delegate")
async def delegate(prompt: str, ctx=None) -> str:
    """Delegate to a subagent."""
    result = await ctx.run_subagent(prompt, tools=["read_file"])
    return result.text or ""


def _call(tool_name, **input):
    return {"tool_calls": [{"name": tool_name, "input": input}], "usage": {"input_tokens": 10, "output_tokens": 5}}


def _wire(request) -> list[str]:
    """The request as a provider would serialise it: one JSON string per message."""
    return [json.dumps(m, sort_keys=True) for m in request.messages]


async def test_only_compactions_break_the_prefix(workspace):
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "AGENTS.md").write_text("In pkg, use tabs.")
    (workspace / "pkg" / "mod.py").write_text("x = 1\n" * 200)
    (workspace / "notes.txt").write_text("note " * 400)

    parent: list = []
    for i in range(30):
        kind = i % 6
        if kind == 0:
            parent.append(_call("read_file", path="notes.txt"))
        elif kind == 1:
            parent.append(_call("use_skill", name=f"skill{i}"))
        elif kind == 2:
            parent.append(_call("read_file", path="pkg/mod.py"))
        elif kind == 3:
            parent.append(_call("delegate", prompt=f"child {i}"))
        else:
            parent.append(_call("read_file", path="notes.txt"))
    parent.append("all done")

    def turn(request):
        first = request.messages[0]["content"][0]["text"]
        if first.startswith("child"):
            return _call("read_file", path="notes.txt") if len(request.messages) == 1 else f"{first} done"
        if first.startswith("[Summary"):  # after a compaction the parent's script goes on
            return parent.pop(0)
        if request.tools == []:  # the compaction's own summary request
            return "summary of the work so far"
        return parent.pop(0)

    provider = ScriptedProvider([turn] * 200)
    agent = create_agent(workspace, provider=provider, tools=[read_file, use_skill, delegate],
                         context_window=12_000, max_steps=60)
    compactions = []
    agent.on("compaction.completed", compactions.append)
    result = await agent.run(TASK)
    assert result.status == "completed", result.error

    main = [r for r in provider.requests
            if r.tools and not r.messages[0]["content"][0]["text"].startswith("child")]
    assert len(main) >= 30
    breaks = 0
    for before, after in itertools.pairwise(main):
        assert after.system == before.system  # never edited during a run
        assert after.tools == before.tools
        a, b = _wire(before), _wire(after)
        if b[: len(a)] != a:
            breaks += 1
    assert compactions, "the run should have compacted at least once"
    assert breaks == len(compactions), f"{breaks} prefix breaks for {len(compactions)} compactions"
