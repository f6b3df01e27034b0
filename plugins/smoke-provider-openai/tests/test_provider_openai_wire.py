"""Presets, keys, history mapping and stream details of the Chat Completions adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_provider_openai
from smoke_provider_openai import PRESETS, make_provider
from smoke_provider_openai._wire import to_wire_messages

from smoke_core import create_agent, tool
from smoke_core.plugin import AgentError, user_message
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


def sse(*objs: Any) -> Reply:
    parts = [f"data: {json.dumps(o)}\n\n" if not isinstance(o, str) else f"data: {o}\n\n" for o in objs]
    return Reply.sse(parts)


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra}


def test_every_preset_is_registered() -> None:
    registry = ProviderRegistry()
    smoke_provider_openai.register_providers(registry.register)
    assert registry.names() == sorted([
        "openai", "nvidia", "openrouter", "groq", "together", "deepseek", "mistral", "xai", "fireworks",
        "cerebras", "gemini", "huggingface", "ollama", "vllm", "lmstudio", "llamacpp", "openai-compatible",
    ])
    assert registry.get("nvidia").env_var == "NVIDIA_API_KEY"
    assert registry.get("openai").env_var == "OPENAI_API_KEY"
    assert registry.get("ollama").env_var is None
    assert PRESETS["nvidia"].base_url == "https://integrate.api.nvidia.com/v1"
    assert registry.get("nvidia").default_model == "meta/llama-3.3-70b-instruct"
    provider = registry.get("nvidia").factory(model=None, api_key=None, user_id=None)
    assert provider.url == "https://integrate.api.nvidia.com/v1/chat/completions"
    assert provider.model == "meta/llama-3.3-70b-instruct"


def test_import_does_not_load_httpx() -> None:
    code = (
        "import sys, smoke_provider_openai;"
        "assert 'httpx' not in sys.modules and 'httpx_sse' not in sys.modules, sorted(sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_openai_compatible_needs_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="needs base_url="):
        make_provider("openai-compatible", model="qwen")
    provider = make_provider("openai-compatible", model="qwen", base_url="http://127.0.0.1:8000/v1/")
    assert provider.url == "http://127.0.0.1:8000/v1/chat/completions"


def test_history_to_wire() -> None:
    request = ModelRequest(
        model="m",
        system="sys",
        tools=[],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image", "data": PNG, "mime_type": "image/png"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "text": "hmm", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_call", "id": "c1", "name": "shot", "input": {"x": 1}},
                {"type": "tool_call", "id": "c2", "name": "fail", "input": {}},
            ]},
            {"role": "tool", "content": [
                {"type": "tool_result", "tool_call_id": "c1", "is_error": False,
                 "content": [{"type": "text", "text": "here"}, {"type": "image", "data": PNG, "mime_type": "image/jpeg"}]},
                {"type": "tool_result", "tool_call_id": "c2", "is_error": True,
                 "content": [{"type": "text", "text": "boom"}]},
            ]},
            {"role": "user", "content": [{"type": "text", "text": "next"}]},
        ],
    )
    wire = to_wire_messages(request)
    assert wire == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": '{"x":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "fail", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1",
         "content": "here\n[1 image(s) from this tool result follow in the next user message]"},
        {"role": "tool", "tool_call_id": "c2", "content": "boom"},
        {"role": "user", "content": [
            {"type": "text", "text": "Images returned by the tool call(s) above:"},
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{PNG}"}},
        ]},
        {"role": "user", "content": "next"},
    ]
    assert "thinking" not in json.dumps(wire) and "hmm" not in json.dumps(wire)


async def test_reasoning_deltas_and_settings(tmp_path: Path) -> None:
    replies = [sse(
        chunk({"role": "assistant", "reasoning_content": "Let me "}),
        chunk({"reasoning": "think."}),
        chunk({"content": "Answer"}),
        chunk({}, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 7, "prompt_tokens_details":
                                  {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 5}}},
        "[DONE]",
    )]
    async with FakeProviderServer(replies) as server:
        agent = create_agent(
            tmp_path, provider="deepseek", model="deepseek-reasoner", base_url=server.url, api_key="k",
            model_settings={"temperature": 0.2, "max_tokens": 99, "idle_timeout": 5},
            plugins=[smoke_provider_openai], autoload_plugins=False, retry=FAST, system_prompt="S",
        )
        events: list[Any] = []
        agent.on_any(events.append)
        try:
            result = await agent.run("q")
        finally:
            await agent.aclose()
    assert result.text == "Answer"
    assert [e.data["text"] for e in events if e.type == "text.thought"] == ["Let me ", "think."]
    assert result.messages[-1]["content"][0] == {"type": "thinking", "text": "Let me think."}
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens) == (10, 7, 4, 5)
    body = server.requests[0].json
    assert body["temperature"] == 0.2 and body["max_tokens"] == 99
    assert "idle_timeout" not in body
    assert body["messages"][0] == {"role": "system", "content": "S"}
    assert server.requests[0].path == "/chat/completions"


async def test_api_key_callable_gets_provider_and_user(tmp_path: Path) -> None:
    seen: list[tuple[str, str | None]] = []

    def key(provider: str, user_id: str | None) -> str:
        seen.append((provider, user_id))
        return f"key-for-{user_id}"

    async with FakeProviderServer([sse(chunk({"content": "hi"}, "stop"), "[DONE]")]) as server:
        agent = create_agent(
            tmp_path, model="groq:llama", base_url=server.url, api_key=key, user_id="u1",
            plugins=[smoke_provider_openai], autoload_plugins=False, retry=FAST,
        )
        try:
            result = await agent.run("q")
        finally:
            await agent.aclose()
    assert result.text == "hi"
    assert seen == [("groq", "u1")]
    assert server.requests[0].headers["authorization"] == "Bearer key-for-u1"


async def test_ollama_needs_no_key(tmp_path: Path) -> None:
    async with FakeProviderServer([sse(chunk({"content": "local"}, "stop"), "[DONE]")]) as server:
        provider = make_provider("ollama", base_url=server.url + "/v1")
        try:
            events = await collect_events(provider, ModelRequest("llama3.2", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["local"]
    assert "authorization" not in server.requests[0].headers


async def test_missing_nvidia_key_fails_the_run_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    async with FakeProviderServer() as server:
        agent = create_agent(
            tmp_path, model="nvidia:meta/llama-3.3-70b-instruct", base_url=server.url,
            plugins=[smoke_provider_openai], autoload_plugins=False, retry=FAST,
        )
        try:
            result = await agent.run("q")
        finally:
            await agent.aclose()
    assert result.status == "failed"
    assert result.error.code == "provider_auth"
    assert result.error.hint == "Set NVIDIA_API_KEY or pass api_key=."
    assert server.requests == []


async def test_server_that_ignores_stream_flag() -> None:
    completion = {"choices": [{"index": 0, "finish_reason": "length",
                               "message": {"role": "assistant", "content": "plain", "reasoning_content": "r"}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    async with FakeProviderServer([Reply.json(completion)]) as server:
        provider = make_provider("openai-compatible", model="m", base_url=server.url)
        try:
            events = await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert events[0] == ThoughtDelta("r")
    assert events[1] == TextDelta("plain")
    assert isinstance(events[2], UsageReport) and events[2].usage.input_tokens == 3
    assert events[3] == Finished("length")


async def test_tool_calls_without_index_and_groq_usage() -> None:
    # Gemini-style: whole calls without "index"; Groq-style usage under x_groq.
    replies = [sse(
        chunk({"tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"n":1}'}}]}),
        chunk({"tool_calls": [{"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls", x_groq={"usage": {"prompt_tokens": 5, "completion_tokens": 6}}),
        "[DONE]",
    )]
    async with FakeProviderServer(replies) as server:
        provider = make_provider("gemini", model="gemini-2.0-flash", base_url=server.url, api_key="g")
        try:
            events = await collect_events(provider, ModelRequest("gemini-2.0-flash", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert [e for e in events if isinstance(e, ToolCallRequest)] == [
        ToolCallRequest("a", "f", '{"n":1}'), ToolCallRequest("b", "g", "{}"),
    ]
    assert [(e.usage.input_tokens, e.usage.output_tokens) for e in events if isinstance(e, UsageReport)] == [(5, 6)]
    assert events[-1] == Finished("tool_calls")


async def test_presentation_never_sent(tmp_path: Path) -> None:
    @tool(presentation={"label": "Secret label", "icon": "🔍", "tone": "info", "group": "x"})
    def probe(q: str) -> str:
        "Probe."
        return q

    async with FakeProviderServer([sse(chunk({"content": "ok"}, "stop"), "[DONE]")]) as server:
        agent = create_agent(tmp_path, provider="openai", model="m", base_url=server.url, api_key="k",
                             tools=[probe], plugins=[smoke_provider_openai], autoload_plugins=False, retry=FAST)
        try:
            await agent.run("q")
        finally:
            await agent.aclose()
    raw = server.requests[0].body.decode()
    assert '"probe"' in raw
    assert "presentation" not in raw and "Secret label" not in raw


async def test_truncated_stream_is_retryable() -> None:
    # a clean end of body without finish_reason or [DONE]
    async with FakeProviderServer([sse(chunk({"content": "half"}))]) as server:
        provider = make_provider("openai", model="m", base_url=server.url, api_key="k")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert caught.value.info.code == "provider_unavailable"
    assert caught.value.info.details["transport"] == "truncated"


async def test_insufficient_quota_is_not_retried() -> None:
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                      "code": "insufficient_quota"}}
    async with FakeProviderServer([Reply.json(body, status=429)]) as server:
        provider = make_provider("openai", model="m", base_url=server.url, api_key="k")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert caught.value.info.code == "provider_error"
    assert caught.value.info.retryable is False


async def test_retry_after_ms_header() -> None:
    body = {"error": {"message": "slow", "type": "requests", "code": "rate_limit_exceeded"}}
    async with FakeProviderServer([Reply.json(body, status=429, headers={"retry-after-ms": "1500"})]) as server:
        provider = make_provider("openai", model="m", base_url=server.url, api_key="k")
        try:
            with pytest.raises(AgentError) as caught:
                await collect_events(provider, ModelRequest("m", [user_message("q")], []))
        finally:
            await provider.aclose()
    assert caught.value.info.code == "provider_rate_limited"
    assert caught.value.info.details["retry_after"] == 1.5


def test_the_provider_door_resolves_every_name_it_lists() -> None:
    import smoke_core.providers as door

    for name in door.__all__:
        assert getattr(door, name) is not None, name
    for name in ("ResponseLimits", "ModelFacts", "model_facts", "rejected_tool_call", "TRANSPORT_SETTINGS"):
        assert name in door.__all__
