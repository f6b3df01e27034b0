"""Inline tool calls (issue 16, item 1): tools described in the system prompt,
calls parsed out of the streamed text, and ``auto`` falling back to it when
a server refuses ``tools``. The parser is checked on its own (every delta
boundary, and random splits with hypothesis) and through the adapter against
a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import smoke_provider_openai
from hypothesis import given, settings
from hypothesis import strategies as st
from smoke_provider_openai import make_provider
from smoke_provider_openai._inline import InlineToolParser, inline_request

from smoke_core import create_agent, tool
from smoke_core.plugin import AgentError, user_message
from smoke_core.providers import Finished, ModelRequest, RetryPolicy, TextDelta, ToolCallRequest
from smoke_core.testing import FakeProviderServer, RecordedRequest, Reply, collect_events

FAST = RetryPolicy(base_delay=0.001, max_delay=0.01)

TOOLS = [
    {"name": "read_file", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"},
                                                       "whole": {"type": "boolean"}, "ranges": {"type": "array"}},
                      "required": ["path"]}},
    {"name": "lookup", "description": "Look a key up.",
     "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
]

# (reply text, the text a person sees, the calls: (name, arguments))
FORMS: dict[str, tuple[str, str, list[tuple[str, Any]]]] = {
    "hermes": (
        'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a <b> c.py"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "lookup", "arguments": {"key": "k}\\"]"}}\n</tool_call>\nThen I answer.',
        "Let me look.\n\n\nThen I answer.",
        [("read_file", {"path": "a <b> c.py"}), ("lookup", {"key": 'k}"]'})],
    ),
    "qwen3-coder": (
        "Reading it.\n<tool_call>\n<function=read_file>\n<parameter=path>\nstats/core.py\n</parameter>\n"
        "<parameter=limit>\n20\n</parameter>\n<parameter=whole>\ntrue\n</parameter>\n<parameter=ranges>\n[[1, 2]]\n"
        "</parameter>\n</function>\n</tool_call>",
        "Reading it.\n",
        [("read_file", {"path": "stats/core.py", "limit": 20, "whole": True, "ranges": [[1, 2]]})],
    ),
    "mistral": (
        'Sure. [TOOL_CALLS] [{"name": "lookup", "arguments": {"key": "a"}, "id": "abc123456"}, '
        '{"name": "read_file", "arguments": {"path": "x"}}] done',
        "Sure.  done",
        [("lookup", {"key": "a"}), ("read_file", {"path": "x"})],
    ),
    "mistral-args": ('[TOOL_CALLS]lookup[ARGS]{"key": "m"}', "", [("lookup", {"key": "m"})]),
    "llama3": (
        '<|python_tag|>{"name": "lookup", "parameters": {"key": "z"}}; '
        '{"name": "read_file", "parameters": {"path": "q"}}<|eom_id|>',
        "",
        [("lookup", {"key": "z"}), ("read_file", {"path": "q"})],
    ),
    "fenced-json": (
        'I will call it:\n```json\n{"name": "lookup", "arguments": {"key": "f"}}\n```\nand an example:\n'
        '```json\n{"a": 1}\n```\n',
        'I will call it:\n\nand an example:\n```json\n{"a": 1}\n```\n',
        [("lookup", {"key": "f"})],
    ),
}


def parse(pieces: list[str]) -> tuple[str, list[tuple[str, Any]], list[str]]:
    parser = InlineToolParser(tools=TOOLS)
    shown = [parser.feed(p) for p in pieces]
    rest, calls = parser.finish()
    shown.append(rest)
    return "".join(shown), [(c.name, c.arguments) for c in calls], shown


def split_at(text: str, cuts: list[int]) -> list[str]:
    points = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


# ---------------------------------------------------------------- the parser


@pytest.mark.parametrize("form", FORMS)
def test_every_form_split_at_every_delta_boundary(form: str) -> None:
    reply, text, calls = FORMS[form]
    for cut in range(len(reply) + 1):
        assert parse([reply[:cut], reply[cut:]])[:2] == (text, calls), (form, cut)
    shown, got, pieces = parse(list(reply))  # one character per delta
    assert (shown, got) == (text, calls)
    assert not any(marker in piece for piece in pieces for marker in ("<tool_call", "[TOOL_CALLS", "<|python"))


@settings(max_examples=150, deadline=None, database=None)
@given(form=st.sampled_from(sorted(FORMS)), data=st.data())
def test_any_split_gives_the_same_text_and_calls(form: str, data: st.DataObject) -> None:
    reply, text, calls = FORMS[form]
    cuts = data.draw(st.lists(st.integers(0, len(reply)), max_size=len(reply)))
    assert parse(split_at(reply, cuts))[:2] == (text, calls)


def test_text_streams_before_a_call_is_complete() -> None:
    parser = InlineToolParser(tools=TOOLS)
    assert parser.feed("Hello wor") == "Hello wor"
    assert parser.feed("ld <tool") == "ld "  # "<tool" may start a marker: held back
    assert parser.feed('_call>{"name": "lookup", ') == ""
    assert parser.feed('"arguments": {"key": "k"}}</tool_call> bye') == " bye"
    assert parser.finish()[1][0].arguments == {"key": "k"}
    parser = InlineToolParser(tools=TOOLS)
    assert parser.feed("a <toolbox> b") == "a <toolbox> b"  # not a marker after all


def test_garbage_inside_the_tags_goes_back_to_the_model_as_invalid_arguments() -> None:
    _, calls, _ = parse(['<tool_call>{"name": "lookup", "arguments": {"key": k}}</tool_call>'])
    assert calls == [("lookup", '{"key": k}')]  # raw text: the loop answers tool_invalid_input for this call


def test_a_call_naming_no_tool_raises_tool_invalid_input() -> None:
    parser = InlineToolParser(tools=TOOLS)
    parser.feed("ok <tool_call>\nthis is not a call\n</tool_call>")
    with pytest.raises(AgentError) as info:
        parser.finish()
    assert info.value.info.code == "tool_invalid_input"
    assert "this is not a call" in info.value.info.details["failed_generation"]


def test_an_unclosed_call_at_the_end_is_still_read() -> None:
    # a stop sequence on "</tool_call>" eats the closing tag
    assert parse(['<tool_call>\n{"name": "lookup", "arguments": {"key": "k"}}\n'])[:2] == ("", [("lookup", {"key": "k"})])


def test_inline_request_describes_tools_and_renders_history_as_text() -> None:
    messages: list[Any] = [
        user_message("go"),
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                          {"type": "tool_call", "id": "c1", "name": "lookup", "input": {"key": "k"}}]},
        {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c1", "is_error": False,
                                      "content": [{"type": "text", "text": "value"}]}]},
        user_message("[reminder] keep going"),
    ]
    request = ModelRequest(model="m", messages=messages, tools=TOOLS, system="Be brief.",
                           settings={"tool_choice": "auto", "temperature": 0})
    inline = inline_request(request, drop_settings=frozenset({"tool_choice"}))
    assert inline.tools == [] and inline.settings == {"temperature": 0}
    assert inline.system is not None and inline.system.startswith("Be brief.\n\n# Tools")
    assert '"name": "read_file"' in inline.system and "<tool_call>" in inline.system
    assert [m["role"] for m in inline.messages] == ["user", "assistant", "user"]  # tool result + reminder merged
    assert inline.messages[1]["content"][0]["text"] == (
        'Looking.\n<tool_call>\n{"name": "lookup", "arguments": {"key": "k"}}\n</tool_call>'
    )
    merged = "".join(b["text"] for b in inline.messages[2]["content"])
    assert merged == "<tool_response>\nvalue\n</tool_response>\n\n[reminder] keep going"


# ---------------------------------------------------------------- through the adapter, over HTTP


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(data)}\n\n".encode()


def text_reply(text: str, *, per_delta: int = 1) -> Reply:
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": text[i:i + per_delta]}) for i in range(0, len(text), per_delta)]
    chunks += [chunk({}, "stop"), b"data: [DONE]\n\n"]
    return Reply.sse(chunks)


def refuse_tools(request: RecordedRequest) -> Reply:
    if "tools" in request.json:
        return Reply.json({"object": "error", "type": "BadRequestError", "code": 400,
                           "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                                      "to be set"}, status=400)
    raise AssertionError("only a request with tools is refused")


@pytest.mark.parametrize("form", FORMS)
async def test_each_form_streamed_one_character_per_delta(form: str) -> None:
    reply, text, calls = FORMS[form]
    async with FakeProviderServer([text_reply(reply)]) as server:
        provider = make_provider("openai-compatible", model="m", base_url=server.url, tool_calls="inline")
        try:
            events = await collect_events(provider, ModelRequest(model="m", messages=[user_message("go")],
                                                                 tools=TOOLS, system="Be brief."))
        finally:
            await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert [(e.name, e.arguments) for e in events if isinstance(e, ToolCallRequest)] == calls
    assert isinstance(events[-1], Finished) and events[-1].reason == "tool_calls"
    body = server.requests[0].json
    assert "tools" not in body and "# Tools" in body["messages"][0]["content"]


async def test_auto_falls_back_to_inline_when_the_server_refuses_tools(caplog: pytest.LogCaptureFixture) -> None:
    call = '<tool_call>{"name": "lookup", "arguments": {"key": "k"}}</tool_call>'
    async with FakeProviderServer([refuse_tools, text_reply(call, per_delta=7), text_reply("plain")]) as server:
        provider = make_provider("vllm", model="qwen", base_url=server.url)
        assert provider.tool_call_mode() == "auto"
        request = ModelRequest(model="qwen", messages=[user_message("go")], tools=TOOLS, settings={"tool_choice": "auto"})
        try:
            with caplog.at_level(logging.WARNING, logger="smoke"):
                first = await collect_events(provider, request)
            second = await collect_events(provider, request)
        finally:
            await provider.aclose()
    assert [(e.name, e.arguments) for e in first if isinstance(e, ToolCallRequest)] == [("lookup", {"key": "k"})]
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == "plain"
    assert len(server.requests) == 3
    assert "tools" in server.requests[0].json
    assert all("tools" not in r.json and "tool_choice" not in r.json for r in server.requests[1:])
    assert provider.tool_call_mode() == "inline"  # remembered: the third request went inline at once
    assert "refused the tools parameter" in caplog.text


async def test_auto_does_not_fall_back_on_an_unrelated_400() -> None:
    bad = Reply.json({"error": {"message": "max_tokens is too large", "type": "BadRequestError"}}, status=400)
    async with FakeProviderServer([bad]) as server:
        provider = make_provider("vllm", model="qwen", base_url=server.url)
        try:
            with pytest.raises(AgentError) as info:
                await collect_events(provider, ModelRequest(model="qwen", messages=[user_message("go")], tools=TOOLS))
        finally:
            await provider.aclose()
    assert info.value.info.code == "provider_error" and len(server.requests) == 1
    assert provider.tool_call_mode() == "auto"


async def test_mode_per_model_and_a_wrong_mode_is_refused() -> None:
    provider = make_provider("openai", model="gpt-4o", api_key="k", tool_calls={"qwen*": "inline", "*": "native"})
    assert provider.tool_call_mode("qwen2.5-coder") == "inline"
    assert provider.tool_call_mode("gpt-4o") == "native"
    assert provider.with_model("qwen3").tool_call_mode() == "inline"
    with pytest.raises(ValueError, match="tool_calls: expected one of native, inline, constrained, auto, got 'xml'"):
        make_provider("openai", model="m", api_key="k", tool_calls="xml")


async def test_agent_run_with_inline_calls_and_a_malformed_one(tmp_path: Path) -> None:
    executed: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        executed.append(key)
        return f"value of {key}"

    replies: list[Any] = [
        Reply.json({"error": "no such route"}, status=404),  # GET /v1/models before the run (the model's limits)
        Reply.json({"error": "no such route"}, status=404),  # POST /api/show (Ollama: does the model take tools?)
        refuse_tools,
        text_reply('<tool_call>{"name": "lookup", "arguments": {"key": a}}</tool_call>', per_delta=5),  # malformed
        text_reply('Two at once:\n<tool_call>{"name": "lookup", "arguments": {"key": "a"}}</tool_call>\n'
                   '<tool_call>{"name": "lookup", "arguments": {"key": "b"}}</tool_call>', per_delta=3),
        text_reply("Both found."),
    ]
    async with FakeProviderServer(replies) as server:
        agent = create_agent(tmp_path, provider="ollama", model="llama3.2", base_url=server.url, tools=[lookup],
                             plugins=[smoke_provider_openai], autoload_plugins=False, auto_approve=True, retry=FAST)
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("look up a and b")
        finally:
            await agent.aclose()
    assert result.status == "completed" and result.text == "Both found."
    assert executed == ["a", "b"]
    errors = [e.data for e in events if e.type == "tool.completed" and e.data["is_error"]]
    assert len(errors) == 1 and errors[0]["error"]["code"] == "tool_invalid_input"
    assert "Two at once:" in "".join(e.data["text"] for e in events if e.type == "text.delta")
    # the tool results went back as <tool_response> text in the same user turn
    last = server.requests[-1].json["messages"]
    assert last[-1]["role"] == "user" and last[-1]["content"].count("<tool_response>") == 2
