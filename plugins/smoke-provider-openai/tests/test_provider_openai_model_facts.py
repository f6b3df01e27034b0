"""Model facts (issue 16, item 6): a model's context window and maximum
output from the provider's options, the server's ``/models`` list (as vLLM,
OpenRouter, Groq, llama.cpp and LM Studio report it; a real local server),
``genai-prices``, else the documented default."""

from __future__ import annotations

from typing import Any

import pytest
from smoke_provider_openai import PRESETS, make_provider

from smoke_core.providers import DEFAULT_CONTEXT_WINDOW, ModelFacts, model_facts
from smoke_core.testing import FakeProviderServer, Reply, ScriptedProvider


def test_genai_prices_then_the_default() -> None:
    facts = make_provider("openai", model="gpt-4o-mini", api_key="k").model_facts()
    assert facts == ModelFacts("gpt-4o-mini", 128_000, None, "genai-prices")
    local = make_provider("ollama", model="my-finetune:7b")
    assert local.model_facts() == ModelFacts("my-finetune:7b", DEFAULT_CONTEXT_WINDOW, None, "default")
    assert local.context_window == 128_000 and local.max_output_tokens is None
    # the door's function works for any provider; one without a base URL gets the default
    assert model_facts(local) == local.model_facts()
    assert model_facts(ScriptedProvider([])).source == "default"
    assert model_facts(ScriptedProvider([], model="gpt-4o")).context_window == 128_000


def test_options_win() -> None:
    provider = make_provider("openai", model="gpt-4o-mini", api_key="k", context_window=32_768,
                             max_output_tokens=4096)
    assert provider.model_facts() == ModelFacts("gpt-4o-mini", 32_768, 4096, "options")
    with pytest.raises(ValueError, match="context_window must be a positive number of tokens"):
        make_provider("openai", model="m", api_key="k", context_window="big")


@pytest.mark.parametrize(("entry", "expected"), [
    ({"id": "qwen", "object": "model", "max_model_len": 32768}, (32768, None)),                       # vLLM
    ({"id": "qwen", "context_length": 131072, "top_provider": {"max_completion_tokens": 16384}},
     (131072, 16384)),                                                                                # OpenRouter
    ({"id": "qwen", "context_window": 131072, "max_completion_tokens": 32768}, (131072, 32768)),      # Groq
    ({"id": "qwen", "object": "model", "meta": {"n_ctx_train": 40960, "n_params": 1}}, (40960, None)),  # llama.cpp
    ({"id": "qwen", "max_context_length": 65536}, (65536, None)),                                     # LM Studio v0
])
async def test_facts_from_the_servers_model_list(entry: dict[str, Any], expected: tuple[int, int | None]) -> None:
    listing = {"object": "list", "data": [{"id": "other", "max_model_len": 1}, entry]}
    async with FakeProviderServer([Reply.json(listing)]) as server:
        provider = make_provider("vllm", model="qwen", base_url=server.url + "/v1")
        try:
            facts = await provider.fetch_model_facts()
        finally:
            await provider.aclose()
    assert server.requests[0].method == "GET" and server.requests[0].path == "/v1/models"
    assert (facts.context_window, facts.max_output_tokens, facts.source) == (*expected, "server")
    assert provider.with_model("qwen").context_window == expected[0]  # remembered, also by clones


async def test_a_server_that_cannot_say_leaves_the_other_sources() -> None:
    replies = [Reply.json({"error": "not found"}, status=404), Reply.json({"data": [{"id": "qwen"}]}),
               Reply(200, {"content-type": "application/json"}, b"<html>")]
    async with FakeProviderServer(replies) as server:
        provider = make_provider("llamacpp", model="qwen", base_url=server.url + "/v1")
        try:
            for _ in replies:
                facts = await provider.fetch_model_facts()
                assert facts.source == "default" and facts.context_window == DEFAULT_CONTEXT_WINDOW
        finally:
            await provider.aclose()
    assert len(server.requests) == 3


def test_local_presets() -> None:
    for name, port in (("vllm", 8000), ("lmstudio", 1234), ("llamacpp", 8080)):
        preset = PRESETS[name]
        assert preset.base_url == f"http://localhost:{port}/v1" and preset.local
        assert preset.key_required is False and preset.tool_calls == "auto"
        provider = make_provider(name, model="m")
        assert provider.base_url == preset.base_url and provider.key_required is False
    with pytest.raises(ValueError, match=r"needs model= .*GET http://localhost:8000/v1/models"):
        make_provider("vllm")


def test_local_preset_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMSTUDIO_BASE_URL", "http://127.0.0.1:4321/v1")
    assert make_provider("lmstudio", model="m").base_url == "http://127.0.0.1:4321/v1"
