"""fallback_models against a real HTTP server on 127.0.0.1 through the
OpenAI-compatible adapter: two 529s, then the same request to the fallback
model; two 429s: no fallback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smoke_core import RetryPolicy, create_agent
from smoke_core.testing import FakeProviderServer, Reply

pytestmark = pytest.mark.integration
openai_plugin = pytest.importorskip("smoke_provider_openai")

FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)


def done(model: str, text: str) -> Reply:
    return Reply.json({"id": "r1", "object": "chat.completion", "model": model,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 12, "completion_tokens": 3}})


def overloaded() -> Reply:
    return Reply.json({"error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529)


def limited() -> Reply:
    return Reply.json({"error": {"type": "rate_limit_error", "message": "slow down"}}, status=429,
                      headers={"retry-after": "0"})


def posts(*replies: Reply) -> list[Any]:
    """``replies`` to the model calls; the GETs an openai-compatible server is asked before a run
    (``/models``, llama.cpp's ``/props``: what it serves) are answered 404, as a server that says nothing."""
    queue = list(replies)

    def answer(request: Any) -> Reply:
        return Reply.json({"error": "not found"}, status=404) if request.method == "GET" else queue.pop(0)

    return [answer] * (len(replies) + 2)


def agent_for(workspace: Any, server: FakeProviderServer) -> Any:
    return create_agent(workspace, provider="openai-compatible", model="primary-model", base_url=server.url,
                        api_key="k-test", retry=FAST, fallback_models=["backup-model"], autoload_plugins=False,
                        plugins=[openai_plugin],
                        model_settings={"stream": False})


async def test_two_529s_then_the_fallback_model(workspace):
    async with FakeProviderServer(posts(overloaded(), overloaded(), done("backup-model", "answered by backup"))) as server:
        async with agent_for(workspace, server) as agent:  # closes the fallback model's client too
            events: list[Any] = []
            agent.on("run.warning", events.append)
            result = await agent.run("hello")
        bodies = [json.loads(r.body) for r in server.requests if r.method == "POST"]
    assert result.status == "completed" and result.text == "answered by backup"
    assert [b["model"] for b in bodies] == ["primary-model", "primary-model", "backup-model"]
    assert bodies[2]["messages"] == bodies[0]["messages"]  # the same request
    fallback = [e for e in events if e.data.get("fallback")]
    assert [e.data["fallback"] for e in fallback] == [{"from": "openai-compatible:primary-model",
                                                       "to": "openai-compatible:backup-model"}]
    assert result.usage_by_model["openai-compatible:backup-model"].input_tokens == 12


async def test_two_429s_do_not_fall_back(workspace):
    async with FakeProviderServer(posts(limited(), limited(), done("backup-model", "never"))) as server:
        async with agent_for(workspace, server) as agent:
            result = await agent.run("hello")
        models = [json.loads(r.body)["model"] for r in server.requests if r.method == "POST"]
    assert result.status == "failed" and result.error.code == "provider_rate_limited"
    assert models == ["primary-model", "primary-model"]
