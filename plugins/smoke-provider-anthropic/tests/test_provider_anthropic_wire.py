"""Registration, history mapping, thinking and usage details of the Anthropic adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_provider_anthropic
from smoke_provider_anthropic import make_provider
from smoke_provider_anthropic._wire import build_body, to_wire_messages

from smoke_core import create_agent, tool
from smoke_core.plugin import user_message
from smoke_core.providers import (
    Finished,
    ModelRequest,
    ProviderRegistry,
    RetryPolicy,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    UsageReport,
)
from smoke_core.testing import FakeProviderServer, Reply, collect_events

FAST = RetryPolicy(base_delay=0.001, max_delay=0.01)
PNG = "iVBORw0KGgo="


def event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def start(input_tokens: int = 10, **usage: int) -> str:
    return event("message_start", {"message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage}}})


def end(stop: str, output_tokens: int) -> list[str]:
    return [event("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": output_tokens}}),
            event("message_stop", {})]


def test_registration_and_defaults() -> None:
    registry = ProviderRegistry()
    smoke_provider_anthropic.register_providers(registry.register)
    spec = registry.get("anthropic")
    assert registry.names() == ["anthropic"]
    assert spec.env_var == "ANTHROPIC_API_KEY"
    provider = spec.factory(model=None, api_key=None, user_id=None)
    assert provider.url == "https://api.anthropic.com/v1/messages"
    assert provider.model == "claude-sonnet-4-5"
    assert make_provider(model="m", base_url="http://127.0.0.1:1/v1").url == "http://127.0.0.1:1/v1/messages"


def test_import_does_not_load_httpx() -> None:
    code = (
        "import sys, smoke_provider_anthropic;"
        "assert 'httpx' not in sys.modules and 'httpx_sse' not in sys.modules"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_history_to_wire() -> None:
    request = ModelRequest(
        model="m", system="sys", tools=[{"name": "shot", "description": "d", "input_schema": {"type": "object"}}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image", "data": PNG, "mime_type": "image/png"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "text": "hmm", "signature": "sig1"},
                {"type": "text", "text": ""},
                {"type": "tool_call", "id": "c1", "name": "shot", "input": {"x": 1}},
                {"type": "tool_call", "id": "c2", "name": "shot", "input": {}},
            ]},
            {"role": "tool", "content": [
                {"type": "tool_result", "tool_call_id": "c1", "is_error": False,
                 "content": [{"type": "text", "text": "here"}, {"type": "image", "data": PNG, "mime_type": "image/jpeg"}]},
                {"type": "tool_result", "tool_call_id": "c2", "is_error": True, "content": [{"type": "text", "text": "boom"}]},
            ]},
            {"role": "user", "content": [{"type": "text", "text": "Your last reply was empty."}]},
            {"role": "assistant", "content": [{"type": "thinking", "text": "unsigned, from another provider"},
                                              {"type": "text", "text": "ok"}]},
        ],
    )
    assert to_wire_messages(request) == [
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig1"},
            {"type": "tool_use", "id": "c1", "name": "shot", "input": {"x": 1}},
            {"type": "tool_use", "id": "c2", "name": "shot", "input": {}},
        ]},
        {"role": "user", "content": [  # tool results and the next user text merged into one turn
            {"type": "tool_result", "tool_use_id": "c1", "is_error": False, "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}},
            ]},
            {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": True},
            {"type": "text", "text": "Your last reply was empty."},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]
    body = build_body(request, model="m", stream=True, settings={"temperature": 0.5, "idle_timeout": 1})
    assert body["system"] == "sys" and body["max_tokens"] == 8192 and body["temperature"] == 0.5
    assert body["tools"] == [{"name": "shot", "description": "d", "input_schema": {"type": "object"}}]
    assert "idle_timeout" not in body
    assert build_body(request, model="m", stream=False, settings={"max_tokens": 77})["max_tokens"] == 77


async def test_thinking_stream_and_signature_round_trip(tmp_path: Path) -> None:
    first = [
        start(20),
        event("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Need "}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "the file."}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "SIG=="}}),
        event("content_block_stop", {"index": 0}),
        event("content_block_start", {"index": 1, "content_block": {"type": "tool_use", "id": "toolu_1",
                                                                    "name": "peek", "input": {}}}),
        event("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        event("content_block_stop", {"index": 1}),
        *end("tool_use", 12),
    ]
    second = [start(40), event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": "Do"}}),
              event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ne"}}),
              *end("end_turn", 3)]

    @tool(read_only=True)
    def peek() -> str:
        "Peek."
        return "peeked"

    async with FakeProviderServer([Reply.sse(first), Reply.sse(second)]) as server:
        agent = create_agent(tmp_path, provider="anthropic", model="claude-x", base_url=server.url, api_key="k",
                             tools=[peek], plugins=[smoke_provider_anthropic], autoload_plugins=False, retry=FAST,
                             system_prompt="S", model_settings={"thinking": {"type": "enabled", "budget_tokens": 1024}})
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("q")
        finally:
            await agent.aclose()
    assert result.text == "Done"
    assert [e.data["text"] for e in events if e.type == "text.thought"] == ["Need ", "the file."]
    body = server.requests[1].json
    assert body["system"] == [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["messages"][1] == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Need the file.", "signature": "SIG=="},
        {"type": "tool_use", "id": "toolu_1", "name": "peek", "input": {}},
    ]}
    assert body["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "peeked", "is_error": False,
         "cache_control": {"type": "ephemeral"}}]}


async def test_nonstream_thinking_and_cache_usage() -> None:
    message = {
        "type": "message", "role": "assistant", "stop_reason": "max_tokens",
        "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "partial"},
                    {"type": "redacted_thinking", "data": "xxx"}],
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
                  "output_tokens": 9},
    }
    async with FakeProviderServer([Reply.json(message)]) as server:
        provider = make_provider(model="m", base_url=server.url, api_key="k")
        try:
            events = await collect_events(provider, ModelRequest("m", [user_message("q")], [],
                                                                 settings={"stream": False}))
        finally:
            await provider.aclose()
    assert events[0] == ThoughtDelta("t", signature="s")
    assert events[1] == TextDelta("partial")
    usage = events[2].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        125, 100, 20, 9)
    assert events[3] == Finished("length")
    assert server.requests[0].json["stream"] is False


async def test_stream_cache_usage_and_stop_sequence() -> None:
    chunks = [start(3, cache_read_input_tokens=50), event("content_block_start", {"index": 0, "content_block":
                                                                                  {"type": "text", "text": ""}}),
              event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "x"}}),
              *end("stop_sequence", 4)]
    async with FakeProviderServer([Reply.sse(chunks)]) as server:
        provider = make_provider(model="m", base_url=server.url, api_key="k")
        try:
            events = await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    usage = [e.usage for e in events if isinstance(e, UsageReport)]
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in usage] == [(53, 50, 4)]
    assert events[-1] == Finished("stop")
    assert not [e for e in events if isinstance(e, ToolCallRequest)]


@pytest.mark.parametrize(
    ("etype", "code"),
    [("overloaded_error", "provider_unavailable"), ("rate_limit_error", "provider_rate_limited"),
     ("api_error", "provider_unavailable"), ("authentication_error", "provider_auth"),
     ("invalid_request_error", "provider_error"), ("timeout_error", "provider_timeout"),
     ("something_new", "provider_error")],
)
async def test_in_band_error_types(etype: str, code: str) -> None:
    from smoke_core.plugin import AgentError

    chunks = [start(), event("error", {"error": {"type": etype, "message": "m"}})]
    async with FakeProviderServer([Reply.sse(chunks)]) as server:
        provider = make_provider(model="m", base_url=server.url, api_key="k")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert caught.value.info.code == code
    assert caught.value.info.details["in_band"] is True


async def test_model_facts_from_genai_prices_and_the_models_endpoint() -> None:
    provider = make_provider(model="claude-sonnet-4-5", api_key="k")
    assert (provider.context_window, provider.model_facts().source) == (200_000, "genai-prices")
    listing = {"data": [{"type": "model", "id": "claude-x", "display_name": "X", "max_input_tokens": 1_000_000,
                         "max_output_tokens": 64_000}]}
    async with FakeProviderServer([Reply.json(listing)]) as server:
        provider = make_provider(model="claude-x", base_url=server.url, api_key="k")
        try:
            facts = await provider.fetch_model_facts()
        finally:
            await provider.aclose()
    assert server.requests[0].path == "/v1/models" and server.requests[0].headers["x-api-key"] == "k"
    assert (facts.context_window, facts.max_output_tokens, facts.source) == (1_000_000, 64_000, "server")
