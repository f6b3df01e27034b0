"""Prompt caching on the OpenAI-compatible family (issue 16, item 3): a
cache-routing key where the preset takes one (OpenAI and Mistral:
``prompt_cache_key``; xAI: the ``x-grok-conv-id`` header), one per
conversation, off by ``prompt_cache=False``; cache hits reach usage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from smoke_provider_openai import PRESETS, make_provider
from smoke_provider_openai._wire import usage_from

from smoke_core.plugin import user_message
from smoke_core.providers import ModelRequest, UsageReport
from smoke_core.testing import FakeProviderServer, Reply, collect_events

DONE = {"id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 300,
                  "prompt_tokens_details": {"cached_tokens": 1920}}}


def request(first: str, *more: str) -> ModelRequest:
    messages: list[Any] = [user_message(first)]
    for text in more:
        messages += [{"role": "assistant", "content": [{"type": "text", "text": "..."}]}, user_message(text)]
    return ModelRequest(model="m", messages=messages, tools=[], system="Be brief.", settings={"stream": False})


async def sent(preset: str, *requests: ModelRequest, **options: Any) -> list[Any]:
    async with FakeProviderServer([Reply.json(DONE)] * len(requests)) as server:
        provider = make_provider(preset, model="m", base_url=server.url, api_key="k", **options)
        try:
            for req in requests:
                events = await collect_events(provider, req)
                usage = next(e.usage for e in events if isinstance(e, UsageReport))
                assert (usage.input_tokens, usage.cache_read_tokens) == (2006, 1920)
        finally:
            await provider.aclose()
    return server.requests


async def test_one_key_per_conversation_in_the_body() -> None:
    first, later, other = await sent("openai", request("task A"), request("task A", "go on"), request("task B"))
    key = first.json["prompt_cache_key"]
    assert key.startswith("smoke-") and later.json["prompt_cache_key"] == key
    assert other.json["prompt_cache_key"] != key
    assert "x-grok-conv-id" not in first.headers


async def test_mistral_takes_the_key_xai_a_header_and_others_nothing() -> None:
    (mistral,) = await sent("mistral", request("t"))
    assert "prompt_cache_key" in mistral.json
    (xai,) = await sent("xai", request("t"))
    assert "prompt_cache_key" not in xai.json and xai.headers["x-grok-conv-id"].startswith("smoke-")
    for preset in ("groq", "deepseek", "openrouter", "ollama"):
        (req,) = await sent(preset, request("t"))
        assert "prompt_cache_key" not in req.json and "x-grok-conv-id" not in req.headers, preset
    assert {p.name for p in PRESETS.values() if p.cache_routing} == {"openai", "mistral", "xai"}


async def test_off_by_option_and_an_explicit_key_wins() -> None:
    (off,) = await sent("openai", request("t"), prompt_cache=False)
    assert "prompt_cache_key" not in off.json
    (fixed,) = await sent("openai", request("t"), prompt_cache_key="tenant-7")
    assert fixed.json["prompt_cache_key"] == "tenant-7"
    custom = request("t")
    custom.settings["prompt_cache_key"] = "from-settings"
    (setting,) = await sent("openai", custom)
    assert setting.json["prompt_cache_key"] == "from-settings"
    with pytest.raises(ValueError, match="cache_routing"):
        make_provider("openai", model="m", api_key="k", cache_routing="cookie")


def test_deepseek_cache_hits_reach_usage() -> None:
    usage = usage_from({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 64,
                        "prompt_cache_miss_tokens": 36})
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens) == (100, 64)
    assert json.dumps(usage.input_tokens)  # plain ints
