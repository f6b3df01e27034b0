"""Replay real recorded Anthropic traffic (tests/data, see its README) through
the adapter over HTTP on 127.0.0.1, and drive the multi-turn recordings
through real agent runs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import smoke_provider_anthropic
from smoke_provider_anthropic import make_provider

from smoke_core import create_agent, tool
from smoke_core.plugin import AgentError
from smoke_core.providers import (
    Finished,
    ModelRequest,
    RetryPolicy,
    TextDelta,
    ToolCallRequest,
    UsageReport,
)
from smoke_core.testing import FakeProviderServer, collect_events, load_cassette

DATA = Path(__file__).parent / "data"
FAST = RetryPolicy(base_delay=0.001, max_delay=0.01)
TOOL_USE = "d_anthropic_stream_tool_use_input_json_delta.yaml"
AFTER_RESULT = "d_anthropic_stream_after_tool_result.yaml"


def cassette(name: str) -> Any:
    return load_cassette(DATA / name)


def uncached(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the prompt-cache breakpoints Smoke adds (the recorders
    sent none), after checking there are some and at most four; the system
    prompt back to the plain string it was."""
    body = copy.deepcopy(body)
    found = 0

    def strip(value: Any) -> None:
        nonlocal found
        if isinstance(value, dict):
            if value.pop("cache_control", None) == {"type": "ephemeral"}:
                found += 1
            for v in value.values():
                strip(v)
        elif isinstance(value, list):
            for v in value:
                strip(v)

    strip(body)
    assert 1 <= found <= 4, found
    system = body.get("system")
    if isinstance(system, list) and len(system) == 1 and set(system[0]) == {"type", "text"}:
        body["system"] = system[0]["text"]
    return body


def normalise(body: Any) -> Any:
    """Equal in meaning: string content → one text block, a tool result's
    string content → a text block list, ``is_error: false`` and
    ``stream: false`` dropped (SDKs differ on sending defaults)."""
    body = copy.deepcopy(body)
    if body.get("stream") is False:
        del body["stream"]
    for message in body.get("messages", []):
        if isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        for block in message["content"]:
            if block.get("type") == "tool_result":
                if isinstance(block.get("content"), str):
                    block["content"] = [{"type": "text", "text": block["content"]}]
                if block.get("is_error") is False:
                    del block["is_error"]
    return body


def shape(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["type"] for b in m["content"]]) for m in normalise(body)["messages"]]


def neutral_request(recorded: dict[str, Any], settings: dict[str, Any]) -> ModelRequest:
    """The neutral request that should produce ``recorded`` (its user turns, system, tools)."""
    messages = []
    for m in normalise(recorded)["messages"]:
        if m["role"] == "user":
            messages.append({"role": "user", "content": [b for b in m["content"] if b["type"] == "text"]})
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
             for t in recorded.get("tools", [])]
    return ModelRequest(model=recorded["model"], messages=messages, tools=tools, system=recorded.get("system"),
                        settings=settings)


async def replay(name: str, index: int, settings: dict[str, Any]) -> tuple[list[Any], Any]:
    inter = cassette(name).interactions[index]
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider(model=inter.request_body["model"], base_url=server.url, api_key="sk-ant-test")
        try:
            events = await collect_events(provider, neutral_request(inter.request_body, settings))
        finally:
            await provider.aclose()
    return events, server.requests[0]


def summary(events: list[Any]) -> dict[str, Any]:
    return {
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "calls": [(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallRequest)],
        "usage": [(e.usage.input_tokens, e.usage.output_tokens) for e in events if isinstance(e, UsageReport)],
        "finish": [e.reason for e in events if isinstance(e, Finished)],
    }


# ---------------------------------------------------------------- one interaction at a time

C_SETTINGS = {"stream": False, "max_tokens": 4096, "tool_choice": {"type": "any"}}


async def test_nonstream_tool_use_first_turn() -> None:
    events, sent = await replay("c_anthropic_nonstream_tool_use.yaml", 0, C_SETTINGS)
    assert summary(events) == {
        "text": "",
        "calls": [("toolu_01X9wcHKKAZD9tBC711xipPa", "get_user_country", {})],
        "usage": [(445, 23)],
        "finish": ["tool_calls"],
    }
    recorded = cassette("c_anthropic_nonstream_tool_use.yaml").interactions[0]
    assert uncached(sent.json) == recorded.request_body  # the very same body
    assert sent.path == urlparse(recorded.uri).path == "/v1/messages"


async def test_nonstream_tool_use_second_turn() -> None:
    events, _ = await replay("c_anthropic_nonstream_tool_use.yaml", 1, C_SETTINGS)
    assert summary(events) == {
        "text": "",
        "calls": [("toolu_01LZABsgreMefH2Go8D5PQbW", "final_result", {"city": "Mexico City", "country": "Mexico"})],
        "usage": [(497, 56)],
        "finish": ["tool_calls"],
    }


async def test_stream_text_then_tool_use_with_input_json_delta() -> None:
    events, sent = await replay(TOOL_USE, 0, {"max_tokens": 200})
    got = summary(events)
    assert got["text"].startswith("<thinking>\nThe get_weather tool is relevant for answering this question")
    assert got["text"].endswith("We can proceed with calling the get_weather tool.\n</thinking>")
    assert len([e for e in events if isinstance(e, TextDelta)]) == 72  # one per text_delta event
    assert got["calls"] == [("toolu_01DYJo37oETVsCdLTTcCWcdq", "get_weather", '{"location": "San Francisco, CA"}')]
    assert got["usage"] == [(599, 135)]
    assert got["finish"] == ["tool_calls"]
    recorded = cassette(TOOL_USE).interactions[0]
    assert normalise(uncached(sent.json)) == normalise(recorded.request_body)


async def test_stream_text_after_tool_result() -> None:
    events, _ = await replay(AFTER_RESULT, 0, {"max_tokens": 500})
    assert summary(events) == {
        "text": "\n\nBased on the result from the get_weather tool, the current weather in San Francisco, CA is "
                "73°F (23°C).",
        "calls": [],
        "usage": [(762, 33)],
        "finish": ["stop"],
    }


async def test_401_invalid_api_key_and_request_shape() -> None:
    inter = cassette("e_anthropic_401_invalid_api_key.yaml").interactions[0]
    settings = {"stream": False, "max_tokens": 15, "temperature": 0.8}
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider(model="claude-3-opus-20240229", base_url=server.url, api_key="sk-ant-bad")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, neutral_request(inter.request_body, settings))
        finally:
            await provider.aclose()
    info = caught.value.info
    assert info.code == "provider_auth" and info.severity == "fatal" and not info.retryable
    assert info.hint == "Set ANTHROPIC_API_KEY or pass api_key=."
    assert "invalid x-api-key" in info.message
    assert info.details["error_type"] == "authentication_error"
    assert info.details["request_id"] == "req_013JyjhVcnhy8mfJkvBTqMNB"
    sent = server.requests[0]
    assert normalise(uncached(sent.json)) == normalise(inter.request_body)
    assert sent.headers["x-api-key"] == "sk-ant-bad"
    for name in ("anthropic-version", "content-type", "accept"):
        assert sent.headers[name] == inter.request_headers[name]
    assert sent.path == urlparse(inter.uri).path


async def test_400_invalid_request_is_not_retryable() -> None:
    inter = cassette("e_anthropic_400_invalid_request.yaml").interactions[0]
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider(model="claude-3-opus-20240229", base_url=server.url, api_key="k")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("claude-3-opus-20240229", [], [],
                                                            settings={"max_tokens": 15, "stream": False}))
        finally:
            await provider.aclose()
    info = caught.value.info
    assert info.code == "provider_error" and info.retryable is False
    assert "Input does not match the expected shape" in info.message
    assert info.details["status"] == 400 and info.details["error_type"] == "invalid_request_error"


# ---------------------------------------------------------------- multi-turn through real agent runs


def tools_like(recorded: dict[str, Any], impls: dict[str, Any]) -> list[Any]:
    return [impls[t["name"]].model_copy(update={"description": t["description"], "input_schema": t["input_schema"]})
            for t in recorded["tools"]]


async def test_nonstream_conversation_through_agent(tmp_path: Path) -> None:
    cas = cassette("c_anthropic_nonstream_tool_use.yaml")
    executed: list[str] = []

    @tool
    def get_user_country() -> str:
        "Country of the user."
        executed.append("get_user_country")
        return "Mexico"

    @tool
    def final_result(city: str, country: str, ctx: Any) -> str:
        "The final response."
        executed.append("final_result")
        ctx.finish(f"{city}, {country}")
        return "done"

    tools = tools_like(cas.interactions[0].request_body,
                       {"get_user_country": get_user_country, "final_result": final_result})
    async with FakeProviderServer(cas.replies()) as server:
        agent = create_agent(
            tmp_path, provider="anthropic", model="claude-sonnet-4-5", base_url=server.url, api_key="sk-ant",
            tools=tools, system_prompt="", model_settings=C_SETTINGS, plugins=[smoke_provider_anthropic],
            autoload_plugins=False, auto_approve=True, retry=FAST,
        )
        try:
            result = await agent.run("What is the largest city in the user country?")
        finally:
            await agent.aclose()
    assert result.status == "completed" and result.text == "Mexico City, Mexico"
    assert executed == ["get_user_country", "final_result"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (445 + 497, 23 + 56)
    for sent, inter in zip(server.requests, cas.interactions, strict=True):
        assert uncached(sent.json) == inter.request_body  # exactly what pydantic-ai sent, tool_result included
        assert sent.headers["x-api-key"] == "sk-ant"
        assert sent.headers["anthropic-version"] == "2023-06-01"


async def test_stream_conversation_through_agent(tmp_path: Path) -> None:
    first, second = cassette(TOOL_USE).interactions[0], cassette(AFTER_RESULT).interactions[0]
    executed: list[dict[str, Any]] = []

    @tool
    def get_weather(location: str) -> str:
        "Weather."
        executed.append({"location": location})
        return "The weather is 73f"

    tools = tools_like(first.request_body, {"get_weather": get_weather})
    async with FakeProviderServer([first.reply, second.reply]) as server:
        agent = create_agent(
            tmp_path, provider="anthropic", model="claude-3-opus-20240229", base_url=server.url,
            api_key="sk-ant", tools=tools, system_prompt="", model_settings={"max_tokens": 200},
            plugins=[smoke_provider_anthropic], autoload_plugins=False, auto_approve=True, retry=FAST,
        )
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("What is the weather in San Francisco, CA?")
        finally:
            await agent.aclose()
    assert agent.provider._client is None  # close_agent closed the HTTP client
    assert result.status == "completed"
    assert result.text.endswith("is 73°F (23°C).")
    assert executed == [{"location": "San Francisco, CA"}]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (599 + 762, 135 + 33)
    assert normalise(uncached(server.requests[0].json)) == normalise(first.request_body)
    sent = server.requests[1].json
    recorded = second.request_body
    assert shape(sent) == shape(recorded) == [("user", ["text"]), ("assistant", ["text", "tool_use"]),
                                              ("user", ["tool_result"])]
    assistant = sent["messages"][1]["content"]
    assert assistant[0]["text"].startswith("<thinking>")
    assert assistant[1] == {"type": "tool_use", "id": "toolu_01DYJo37oETVsCdLTTcCWcdq", "name": "get_weather",
                            "input": {"location": "San Francisco, CA"}}
    assert assistant[1]["input"] == recorded["messages"][1]["content"][1]["input"]
    result_block = sent["messages"][2]["content"][0]
    # the recording's tool_use_id comes from a hard-coded test; ours follows the streamed tool_use id
    assert result_block["tool_use_id"] == "toolu_01DYJo37oETVsCdLTTcCWcdq"
    assert normalise(sent)["messages"][2]["content"][0]["content"] == recorded["messages"][2]["content"][0]["content"]
    assert sorted(set(sent) - {"max_tokens"}) == sorted(set(recorded) - {"max_tokens"})
