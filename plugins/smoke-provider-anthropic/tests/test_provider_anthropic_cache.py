"""Prompt caching (issue 16, item 3): the request bodies a real local server
captures over an agent run carry ``cache_control`` breakpoints on the tools,
the system prompt and the moving end of the conversation, at most four."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import smoke_provider_anthropic
from smoke_provider_anthropic import make_provider
from smoke_provider_anthropic._wire import add_cache_breakpoints

from smoke_core import create_agent, tool
from smoke_core.providers import RetryPolicy
from smoke_core.testing import FakeProviderServer, Reply

EPHEMERAL = {"type": "ephemeral"}


def event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def turn(*, text: str = "", call: tuple[str, dict[str, Any]] | None = None, n: int = 0) -> Reply:
    usage = {"input_tokens": 3, "cache_read_input_tokens": 1000 * n, "cache_creation_input_tokens": 50,
             "output_tokens": 1}
    out = [event("message_start", {"message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                               "model": "claude-x", "usage": usage}})]
    if text:
        out += [event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
                event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
                event("content_block_stop", {"index": 0})]
    if call:
        out += [event("content_block_start", {"index": 1, "content_block": {"type": "tool_use", "id": f"toolu_{n}",
                                                                            "name": call[0], "input": {}}}),
                event("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta",
                                                                    "partial_json": json.dumps(call[1])}}),
                event("content_block_stop", {"index": 1})]
    out += [event("message_delta", {"delta": {"stop_reason": "tool_use" if call else "end_turn"},
                                    "usage": {"output_tokens": 5}}),
            event("message_stop", {})]
    return Reply.sse(out)


def breakpoints(body: Any, path: str = "") -> list[str]:
    """Where ``cache_control`` sits in ``body`` (JSON paths)."""
    found: list[str] = []
    if isinstance(body, dict):
        if "cache_control" in body:
            assert body["cache_control"] == EPHEMERAL
            found.append(path)
        for key, value in body.items():
            found += breakpoints(value, f"{path}.{key}")
    elif isinstance(body, list):
        for i, value in enumerate(body):
            found += breakpoints(value, f"{path}[{i}]")
    return found


def without_markers(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)

    def strip(value: Any) -> None:
        if isinstance(value, dict):
            value.pop("cache_control", None)
            for v in value.values():
                strip(v)
        elif isinstance(value, list):
            for v in value:
                strip(v)

    strip(body)
    return body


async def run(tmp_path: Path, **provider_options: Any) -> tuple[Any, list[dict[str, Any]]]:
    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    @tool(read_only=True)
    def other(x: int) -> str:
        """Another tool."""
        return "x"

    replies = [turn(text="Looking.", call=("lookup", {"key": "a"}), n=0),
               turn(call=("lookup", {"key": "b"}), n=1),
               turn(text="a and b found", n=2)]
    async with FakeProviderServer(replies) as server:
        agent = create_agent(tmp_path, provider="anthropic", model="claude-x", base_url=server.url, api_key="k",
                             tools=[lookup, other], plugins=[smoke_provider_anthropic], autoload_plugins=False,
                             system_prompt="You are careful.", provider_options=provider_options,
                             retry=RetryPolicy(base_delay=0.001, max_delay=0.01))
        try:
            result = await agent.run("look up a and b")
        finally:
            await agent.aclose()
    return result, [r.json for r in server.requests]


async def test_breakpoints_on_tools_system_and_the_moving_end(tmp_path: Path) -> None:
    result, bodies = await run(tmp_path)
    assert result.status == "completed" and result.text == "a and b found"
    assert len(bodies) == 3
    last_tool = f".tools[{len(bodies[0]['tools']) - 1}]"
    assert sorted(breakpoints(bodies[0])) == sorted([last_tool, ".system[0]", ".messages[0].content[0]"])
    for body in bodies[1:]:
        n = len(body["messages"])
        marks = breakpoints(body)
        assert len(marks) == 4
        # the last block of the conversation, and of the user turn before it (the previous request's end)
        assert sorted(marks) == sorted([last_tool, ".system[0]", f".messages[{n - 3}].content[0]",
                                        f".messages[{n - 1}].content[0]"])
    # each request starts with the previous one (markers aside): what was cached is read back
    for before, after in itertools.pairwise(bodies):
        old, new = without_markers(before), without_markers(after)
        assert (new["tools"], new["system"]) == (old["tools"], old["system"])
        assert new["messages"][: len(old["messages"])] == old["messages"]
    assert (result.usage.cache_read_tokens, result.usage.cache_write_tokens) == (3000, 150)
    assert result.usage.input_tokens == 3 * (3 + 50) + 3000


async def test_caching_off_by_a_provider_option(tmp_path: Path) -> None:
    result, bodies = await run(tmp_path, prompt_cache=False)
    assert result.status == "completed"
    assert all(breakpoints(b) == [] for b in bodies)
    assert bodies[0]["system"] == "You are careful."


def test_never_more_than_four_and_callers_markers_count() -> None:
    body = {"tools": [{"name": "t"}], "system": [{"type": "text", "text": "s", "cache_control": EPHEMERAL}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "u1", "cache_control": EPHEMERAL}]},
                         {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "x"}]},
                         {"role": "user", "content": [{"type": "text", "text": "u2"}]}]}
    marked = add_cache_breakpoints(copy.deepcopy(body))
    assert len(breakpoints(marked)) == 4
    assert "cache_control" not in marked["messages"][1]["content"][0]  # thinking blocks cannot carry one
    empty_tail = {"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}]}
    assert breakpoints(add_cache_breakpoints(empty_tail)) == []


def test_ttl_option() -> None:
    provider = make_provider(model="m", api_key="k", prompt_cache_ttl="1h")
    assert provider.prompt_cache_ttl == "1h"
    assert add_cache_breakpoints({"system": "s"}, ttl="1h")["system"][0]["cache_control"] == {
        "type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ValueError, match="prompt_cache_ttl"):
        make_provider(model="m", api_key="k", prompt_cache_ttl="forever")
