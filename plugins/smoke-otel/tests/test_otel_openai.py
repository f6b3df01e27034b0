"""The real OpenAI-compatible adapter over HTTP on 127.0.0.1: a 429 retried
then failing, and retried then answered, as spans. Needs smoke-provider-openai."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import StatusCode

from smoke_core import Guards, create_agent
from smoke_core.providers import RetryPolicy
from smoke_core.testing import FakeProviderServer, Reply

pytestmark = pytest.mark.integration
openai_plugin = pytest.importorskip("smoke_provider_openai")


def too_many() -> Reply:
    return Reply.json({"error": {"message": "Rate limit reached for gpt-test", "type": "rate_limit_error"}},
                      status=429, headers={"retry-after": "0"})


def answer(text: str) -> Reply:
    chunks = [
        {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test", "choices": [],
         "usage": {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}},
    ]
    return Reply.sse([f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"])


def agent_on(server: FakeProviderServer, workspace, telemetry, **kwargs):
    provider = openai_plugin.make_provider("openai", model="gpt-test", base_url=server.url + "/v1",
                                           api_key="sk-test-key-123456")
    return create_agent(workspace, provider=provider, autoload_plugins=False, plugins=[telemetry.plugin],
                        **kwargs)


async def test_a_429_retried_then_failing(workspace, telemetry):
    async with FakeProviderServer([too_many(), too_many(), too_many()]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        agent = agent_on(server, workspace, telemetry, retry=RetryPolicy(max_retries=2, base_delay=0.001,
                                                                          max_delay=0.002),
                         guards=Guards(repeated_error=0))
        result = await agent.run("hello")
        await agent.provider.aclose()
    assert result.status == "failed" and result.error.code == "provider_rate_limited"
    assert len(server.requests) == 3
    chat = telemetry.one("chat gpt-test")
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["server.address"] == "127.0.0.1"
    assert chat.attributes["server.port"] == port
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes["error.type"] == "provider_rate_limited"
    assert chat.attributes["smoke.model_call.attempts"] == 3
    retries = [e for e in chat.events if e.name == "smoke.retry"]
    assert [e.attributes["smoke.retry.attempt"] for e in retries] == [1, 2]
    assert all(e.attributes["error.type"] == "provider_rate_limited" for e in retries)
    assert all(e.attributes["smoke.retry.delay_ms"] == 0 for e in retries)  # Retry-After: 0 honoured
    root = telemetry.one("invoke_agent smoke")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "provider_rate_limited"
    assert "sk-test-key-123456" not in str([dict(s.attributes) for s in telemetry.spans()])


async def test_a_429_then_an_answer_is_one_successful_chat_span(workspace, telemetry):
    async with FakeProviderServer([too_many(), answer("hi there")]) as server:
        agent = agent_on(server, workspace, telemetry, retry=RetryPolicy(base_delay=0.001, max_delay=0.002))
        result = await agent.run("hello")
        await agent.provider.aclose()
    assert result.status == "completed" and result.text == "hi there"
    chat = telemetry.one("chat gpt-test")
    assert chat.status.status_code is StatusCode.UNSET
    assert chat.attributes["smoke.model_call.attempts"] == 2
    assert [e.name for e in chat.events] == ["smoke.retry"]
    assert (chat.attributes["gen_ai.usage.input_tokens"], chat.attributes["gen_ai.usage.output_tokens"]) == (21, 4)
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    warnings = {p.attributes["error.type"]: p.value for p in telemetry.metrics()["smoke.warnings"]}
    assert warnings == {"provider_rate_limited": 1}
