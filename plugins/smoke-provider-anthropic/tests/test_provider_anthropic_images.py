"""A user image travels in the shape Anthropic's Messages API documents
(https://docs.anthropic.com/en/docs/build-with-claude/vision: ``image``
blocks with a ``base64`` or ``url`` source beside ``text`` blocks)."""

from __future__ import annotations

import base64

from smoke_provider_anthropic import make_provider

from smoke_core import Image, create_agent
from smoke_core.testing import FakeProviderServer, Reply

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
DONE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "a dot"}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2}}


async def test_user_images_in_the_documented_shape(tmp_path):
    with FakeProviderServer([Reply.json(DONE)]) as server:
        provider = make_provider(api_key="k", base_url=server.url, prompt_cache=False)
        agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, model_settings={"stream": False})
        result = await agent.run(["What is in these images?", Image.from_bytes(PNG),
                                  Image.from_url("https://example.com/cat.jpg")])
        await provider.aclose()
    assert result.status == "completed", result.error
    user = server.requests[0].json["messages"][0]
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these images?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(PNG).decode()}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        ],
    }
