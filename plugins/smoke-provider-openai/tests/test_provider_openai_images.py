"""A user image travels in the shape OpenAI's Chat Completions API documents
(https://platform.openai.com/docs/guides/images-vision: a ``text`` part and an
``image_url`` part whose ``url`` is a ``data:`` URL or an https URL)."""

from __future__ import annotations

import base64

import pytest
from smoke_provider_openai import make_provider

from smoke_core import Image, create_agent
from smoke_core.testing import FakeProviderServer, Reply

# the smallest valid PNG (1x1, transparent)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
DONE = {"id": "c", "object": "chat.completion", "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "a dot"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


async def test_user_images_in_the_documented_shape(tmp_path):
    with FakeProviderServer([Reply.json(DONE)]) as server:
        provider = make_provider("openai", api_key="k", base_url=server.url, model="gpt-4.1-mini")
        agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, model_settings={"stream": False})
        result = await agent.run(["What is in these images?", Image.from_bytes(PNG),
                                  Image.from_url("https://example.com/cat.jpg")])
        await provider.aclose()
    assert result.status == "completed", result.error
    user = next(m for m in server.requests[0].json["messages"] if m["role"] == "user")
    b64 = base64.b64encode(PNG).decode()
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these images?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        ],
    }


def test_a_model_without_images_refuses_before_any_call(tmp_path):
    provider = make_provider("openai", api_key="k", base_url="http://127.0.0.1:9", supports_images=False)
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False)
    with pytest.raises(ValueError, match="does not take images"):
        agent.run_sync(["look", Image.from_bytes(PNG)])


def test_not_an_image_or_too_large(tmp_path):
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP image"):
        Image.from_bytes(b"%PDF-1.7 ...")
    big = tmp_path / "big.png"
    big.write_bytes(PNG + b"\0" * (6 * 1024 * 1024))
    with pytest.raises(ValueError, match=r"6\.0 MB; the limit is 5 MB"):
        Image.from_path(big)
    with pytest.raises(ValueError, match="no image at"):
        Image.from_path(tmp_path / "missing.png")
