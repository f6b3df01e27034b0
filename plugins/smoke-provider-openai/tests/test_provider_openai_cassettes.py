"""Replay real recorded OpenAI / OpenRouter traffic (tests/data, see its README)
through the adapter over HTTP on 127.0.0.1, and drive the multi-turn
cassettes through real agent runs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import smoke_provider_openai
from smoke_provider_openai import make_provider

from smoke_core import create_agent, tool
from smoke_core.plugin import AgentError, user_message
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


def cassette(name: str) -> Any:
    return load_cassette(DATA / name)


def cache_key_stripped(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the ``prompt_cache_key`` Smoke adds for OpenAI (the
    recorders did not send one), after checking it is there."""
    body = dict(body)
    key = body.pop("prompt_cache_key", None)
    assert isinstance(key, str) and key.startswith("smoke-") and len(key) == 38, key
    return body


def normalise(body: Any) -> Any:
    """Drop what differs between recorders but not in meaning: a null
    ``content`` next to ``tool_calls`` (older pydantic-ai omitted it),
    OpenAI's ``strict`` flag (a pydantic-ai choice, not ours) and the
    ``prompt_cache_key`` Smoke adds (checked by ``cache_key_stripped``)."""
    body = copy.deepcopy(body)
    body.pop("prompt_cache_key", None)
    for message in body.get("messages", []):
        if message.get("content") is None:
            message.pop("content", None)
    for t in body.get("tools", []):
        t["function"].pop("strict", None)
    return body


def request_from(recorded: dict[str, Any], settings: dict[str, Any]) -> ModelRequest:
    """The neutral request that should produce the first recorded request."""
    messages = recorded["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    users = [user_message(m["content"]) for m in messages if m["role"] == "user"]
    tools = [
        {"name": t["function"]["name"], "description": t["function"]["description"],
         "input_schema": t["function"]["parameters"]}
        for t in recorded.get("tools", [])
    ]
    return ModelRequest(model=recorded["model"], messages=users, tools=tools, system=system, settings=settings)


async def replay_one(name: str, index: int, settings: dict[str, Any], preset: str = "openai") -> tuple[list[Any], Any]:
    cas = cassette(name)
    inter = cas.interactions[index]
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider(preset, model=inter.request_body["model"], base_url=server.url + "/v1",
                                 api_key="sk-test")
        try:
            events = await collect_events(provider, request_from(inter.request_body, settings))
        finally:
            await provider.aclose()
    return events, server.requests[0]


def summary(events: list[Any]) -> dict[str, Any]:
    return {
        "text": [e.text for e in events if isinstance(e, TextDelta)],
        "calls": [(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallRequest)],
        "usage": [(e.usage.input_tokens, e.usage.output_tokens, e.usage.cache_read_tokens, e.usage.reasoning_tokens)
                  for e in events if isinstance(e, UsageReport)],
        "finish": [e.reason for e in events if isinstance(e, Finished)],
    }


# ---------------------------------------------------------------- one interaction at a time


async def test_nonstream_tool_call_first_turn() -> None:
    events, sent = await replay_one(
        "a_openai_chat_nonstream_tool_calls.yaml", 0, {"stream": False, "n": 1, "tool_choice": "required"}
    )
    assert summary(events) == {
        "text": [],
        "calls": [("call_iXFttys57ap0o16JSlC8yhYo", "get_user_country", "{}")],
        "usage": [(68, 12, 0, 0)],
        "finish": ["tool_calls"],
    }
    recorded = cassette("a_openai_chat_nonstream_tool_calls.yaml").interactions[0]
    assert cache_key_stripped(sent.json) == recorded.request_body  # byte-for-byte the same JSON body
    assert sent.path == urlparse(recorded.uri).path


async def test_nonstream_tool_call_second_turn() -> None:
    events, _ = await replay_one(
        "a_openai_chat_nonstream_tool_calls.yaml", 1, {"stream": False, "n": 1, "tool_choice": "required"}
    )
    assert summary(events) == {
        "text": [],
        "calls": [("call_gmD2oUZUzSoCkmNmp3JPUF7R", "final_result", '{"city": "Mexico City", "country": "Mexico"}')],
        "usage": [(89, 36, 0, 0)],
        "finish": ["tool_calls"],
    }


async def test_stream_tool_call_assembled_from_five_deltas() -> None:
    events, sent = await replay_one("b_openai_chat_stream_tool_calls.yaml", 0, {"tool_choice": "auto"})
    assert summary(events) == {
        "text": [],
        "calls": [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}')],
        "usage": [(53, 15, 0, 0)],
        "finish": ["tool_calls"],
    }
    recorded = cassette("b_openai_chat_stream_tool_calls.yaml").interactions[0]
    assert normalise(cache_key_stripped(sent.json)) == normalise(recorded.request_body)
    assert sent.json["stream_options"] == {"include_usage": True}


async def test_stream_text_answer() -> None:
    cas = cassette("b_openai_chat_stream_tool_calls.yaml")
    inter = cas.interactions[1]
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider("openai", model="gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-test")
        try:
            events = await collect_events(provider, ModelRequest(model="gpt-4o-mini", messages=[user_message("q")],
                                                                 tools=[]))
        finally:
            await provider.aclose()
    assert summary(events) == {
        "text": ["The", " capital", " of", " the", " UK", " is", " London", "."],
        "calls": [],
        "usage": [(78, 9, 0, 0)],
        "finish": ["stop"],
    }


async def test_stream_tool_call_recorded_through_litellm() -> None:
    events, sent = await replay_one(
        "b_openai_chat_stream_tools_litellm.yaml", 0, {"n": 1, "tool_choice": "auto"}
    )
    assert summary(events) == {
        "text": [],
        "calls": [("call_HuRWIamjJM7bLsbCamjSgf8e", "get_current_weather",
                   '{"location":"San Francisco, CA","unit":"celsius"}')],
        "usage": [(85, 24, 0, 0)],
        "finish": ["tool_calls"],
    }
    recorded = cassette("b_openai_chat_stream_tools_litellm.yaml").interactions[0]
    assert cache_key_stripped(sent.json) == recorded.request_body


async def test_401_invalid_api_key() -> None:
    inter = cassette("e_openai_chat_401_invalid_api_key.yaml").interactions[0]
    async with FakeProviderServer([inter.reply]) as server:
        provider = make_provider("openai", model="gpt-3.5-turbo", base_url=server.url + "/v1", api_key="sk-bad")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("gpt-3.5-turbo", [user_message("hi")], []))
        finally:
            await provider.aclose()
    info = caught.value.info
    assert info.code == "provider_auth"
    assert info.severity == "fatal" and info.retryable is False
    assert info.hint == "Set OPENAI_API_KEY or pass api_key=."
    assert "Incorrect API key provided" in info.message
    assert info.details["status"] == 401
    assert info.details["error_code"] == "invalid_api_key"
    assert info.details["request_id"] == "55f4f12fef392b7fbc0c647e97a8e6b2"


async def test_openrouter_429_through_an_agent_run(tmp_path: Path) -> None:
    cas = cassette("e_openrouter_429_rate_limited.yaml")
    recorded = cas.interactions[0].request_body
    async with FakeProviderServer(cas.replies()) as server:
        agent = create_agent(
            tmp_path, provider="openrouter", model=recorded["model"], base_url=server.url + "/api/v1",
            api_key="sk-or-test", system_prompt="Be helpful.", model_settings={"stream": False},
            plugins=[smoke_provider_openai], autoload_plugins=False, retry=FAST,
        )
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("Tell me a joke.")
        finally:
            await agent.aclose()
    # three 429s in a row: retried twice, then the repeated-error guard stops the run
    assert len(server.requests) == 3
    warnings = [e.data["error"] for e in events if e.type == "run.warning"]
    assert [w["code"] for w in warnings] == ["provider_rate_limited"] * 2
    assert "retry_after" not in warnings[0]["details"]  # OpenRouter sent no Retry-After
    assert "temporarily rate-limited upstream" in warnings[0]["message"]
    assert result.status == "failed"
    assert result.error.code == "run_repeated_error"
    assert result.error.details["cause"]["code"] == "provider_rate_limited"
    for req in server.requests:
        assert req.json == recorded
        assert req.path == "/api/v1/chat/completions"
        assert req.headers["authorization"] == "Bearer sk-or-test"


# ---------------------------------------------------------------- multi-turn through real agent runs


def tools_like(recorded: dict[str, Any], impls: dict[str, Any]) -> list[Any]:
    """The agent's tools, named and described as in the recording."""
    out = []
    for t in recorded["tools"]:
        fn = t["function"]
        out.append(impls[fn["name"]].model_copy(update={"description": fn["description"],
                                                        "input_schema": fn["parameters"]}))
    return out


async def test_nonstream_conversation_through_agent(tmp_path: Path) -> None:
    cas = cassette("a_openai_chat_nonstream_tool_calls.yaml")
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

    tools = tools_like(cas.interactions[0].request_body, {"get_user_country": get_user_country,
                                                          "final_result": final_result})
    async with FakeProviderServer(cas.replies()) as server:
        agent = create_agent(
            tmp_path, provider="openai", model="gpt-4o", base_url=server.url + "/v1", api_key="sk-test",
            tools=tools, system_prompt="", model_settings={"stream": False, "n": 1, "tool_choice": "required"},
            plugins=[smoke_provider_openai], autoload_plugins=False, auto_approve=True, retry=FAST,
        )
        try:
            result = await agent.run("What is the largest city in the user country?")
        finally:
            await agent.aclose()
    assert result.status == "completed"
    assert result.text == "Mexico City, Mexico"
    assert executed == ["get_user_country", "final_result"]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (68 + 89, 12 + 36)
    assert len(server.requests) == 2
    for sent, inter in zip(server.requests, cas.interactions, strict=True):
        assert normalise(cache_key_stripped(sent.json)) == normalise(inter.request_body)
        assert sent.path == urlparse(inter.uri).path
    # one conversation, one cache-routing key
    assert server.requests[0].json["prompt_cache_key"] == server.requests[1].json["prompt_cache_key"]
    # the second request carries the tool call id and the tool result as recorded
    second = server.requests[1].json["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[2] == {"role": "tool", "tool_call_id": "call_iXFttys57ap0o16JSlC8yhYo", "content": "Mexico"}


async def test_stream_conversation_through_agent(tmp_path: Path) -> None:
    cas = cassette("b_openai_chat_stream_tool_calls.yaml")
    executed: list[dict[str, Any]] = []

    @tool
    def get_capital(country: str) -> str:
        "Capital of a country."
        executed.append({"country": country})
        return "London"

    tools = tools_like(cas.interactions[0].request_body, {"get_capital": get_capital})
    async with FakeProviderServer(cas.replies()) as server:
        agent = create_agent(
            tmp_path, provider="openai", model="gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-test",
            tools=tools, system_prompt="", model_settings={"tool_choice": "auto"},
            plugins=[smoke_provider_openai], autoload_plugins=False, auto_approve=True, retry=FAST,
        )
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("What is the capital of the UK? Use the tool, then answer.")
        finally:
            await agent.aclose()
    assert result.status == "completed"
    assert result.text == "The capital of the UK is London."
    assert agent.provider._client is None  # close_agent closed the HTTP client
    assert executed == [{"country": "UK"}]
    assert "".join(e.data["text"] for e in events if e.type == "text.delta") == "The capital of the UK is London."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (53 + 78, 15 + 9)
    for sent, inter in zip(server.requests, cas.interactions, strict=True):
        assert normalise(cache_key_stripped(sent.json)) == normalise(inter.request_body)
    second = server.requests[1].json["messages"]
    assert second[1] == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_ZR5UUuTt3pf61kjwAJIYdVMj", "type": "function",
                        "function": {"name": "get_capital", "arguments": '{"country":"UK"}'}}],
    }
    assert json.loads(second[1]["tool_calls"][0]["function"]["arguments"]) == {"country": "UK"}
    assert second[2] == {"role": "tool", "tool_call_id": "call_ZR5UUuTt3pf61kjwAJIYdVMj", "content": "London"}


# ---------------------------------------------------------------- request shape per preset


@pytest.mark.parametrize(
    ("preset", "env_var", "key", "root"),
    [("openai", "OPENAI_API_KEY", "sk-live", "/v1"), ("nvidia", "NVIDIA_API_KEY", "nvapi-live", "/v1")],
)
async def test_preset_request_shape_matches_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str, env_var: str, key: str, root: str
) -> None:
    cas = cassette("b_openai_chat_stream_tool_calls.yaml")
    recorded = cas.interactions[0]
    monkeypatch.setenv(env_var, key)

    @tool
    def get_capital(country: str) -> str:
        "Capital of a country."
        return "London"

    tools = tools_like(recorded.request_body, {"get_capital": get_capital})
    async with FakeProviderServer(cas.replies()) as server:
        agent = create_agent(
            tmp_path, model=f"{preset}:gpt-4o-mini", base_url=server.url + root, tools=tools, system_prompt="",
            model_settings={"tool_choice": "auto"}, plugins=[smoke_provider_openai], autoload_plugins=False,
            auto_approve=True, retry=FAST,
        )
        try:
            assert agent.provider.name == preset and agent.provider.model == "gpt-4o-mini"
            result = await agent.run("What is the capital of the UK? Use the tool, then answer.")
        finally:
            await agent.aclose()
    assert result.status == "completed"
    sent = server.requests[0]
    assert sent.method == recorded.method == "POST"
    assert sent.path == "/v1/chat/completions" == urlparse(recorded.uri).path
    assert sent.headers["authorization"] == f"Bearer {key}"
    for name in ("content-type", "accept"):
        assert sent.headers[name] == recorded.request_headers[name]
    body = cache_key_stripped(sent.json) if preset == "openai" else sent.json  # NVIDIA takes no routing key
    assert sorted(body) == sorted(recorded.request_body)
    assert normalise(body) == normalise(recorded.request_body)


async def test_cost_from_recorded_usage_is_what_genai_prices_gives(tmp_path: Path) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    cas = cassette("a_openai_chat_nonstream_tool_calls.yaml")

    @tool
    def get_user_country() -> str:
        "Country of the user."
        return "Mexico"

    @tool
    def final_result(city: str, country: str, ctx: Any) -> str:
        "The final response."
        ctx.finish(f"{city}, {country}")
        return "done"

    tools = tools_like(cas.interactions[0].request_body, {"get_user_country": get_user_country,
                                                          "final_result": final_result})
    settings = {"stream": False, "n": 1, "tool_choice": "required"}
    costs = []
    for price_as in ("openai", None):
        async with FakeProviderServer(cas.replies()) as server:
            agent = create_agent(
                tmp_path, provider="openai", model="gpt-4o", base_url=server.url + "/v1", api_key="sk-test",
                tools=tools, system_prompt="", model_settings=settings, plugins=[smoke_provider_openai],
                autoload_plugins=False, auto_approve=True, retry=FAST, provider_options={"price_as": price_as},
            )
            updates: list[Any] = []
            agent.on("usage.updated", updates.append)
            try:
                result = await agent.run("What is the largest city in the user country?")
            finally:
                await agent.aclose()
        assert result.status == "completed"
        costs.append((result.usage.cost_usd, [u.data["usage"]["cost_usd"] for u in updates]))
    expected = sum(
        float(calc_price(PriceUsage(input_tokens=i, output_tokens=o), "gpt-4o", provider_id="openai").total_price)
        for i, o in ((68, 12), (89, 36))
    )
    priced, unpriced = costs
    assert priced[0] == pytest.approx(expected, rel=1e-9) and priced[0] > 0
    assert priced[1][-1] == pytest.approx(expected, abs=1e-8)
    # a local server is not priced unless told what it serves: no guess
    assert unpriced == (None, [None, None])
