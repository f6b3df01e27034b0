"""The core provider contract, run against the Anthropic Messages adapter."""

from __future__ import annotations

import json
from typing import Any

from smoke_provider_anthropic import make_provider

from smoke_core.testing import ProviderContract

_WIRE_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}


def event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def message_start(input_tokens: int) -> bytes:
    return event("message_start", {"message": {
        "id": "msg_test", "type": "message", "role": "assistant", "model": "test-model", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }})


def message_end(stop: str, output_tokens: int) -> list[bytes]:
    return [
        event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": output_tokens}}),
        event("message_stop", {}),
    ]


class TestAnthropicContract(ProviderContract):
    env_var = "ANTHROPIC_API_KEY"

    def make_provider(self, base_url: str, api_key: str | None, **kwargs: Any) -> Any:
        return make_provider(model=self.model, base_url=base_url, api_key=api_key, **kwargs)

    def text_stream(self, chunks: list[str], *, finish: str = "stop", input_tokens: int = 0,
                    output_tokens: int = 0) -> list[bytes]:
        out = [message_start(input_tokens),
               event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
               event("ping", {})]
        out += [event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": t}})
                for t in chunks]
        out.append(event("content_block_stop", {"index": 0}))
        out += message_end(_WIRE_STOP[finish], output_tokens)
        return out

    def tool_call_stream(self, calls: list[tuple[str, str, list[str]]], *, input_tokens: int = 0,
                         output_tokens: int = 0) -> list[bytes]:
        out = [message_start(input_tokens)]
        for index, (call_id, name, frags) in enumerate(calls):
            out.append(event("content_block_start", {"index": index, "content_block": {
                "type": "tool_use", "id": call_id, "name": name, "input": {}}}))
            out += [event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta",
                                                                            "partial_json": f}}) for f in frags]
            out.append(event("content_block_stop", {"index": index}))
        out += message_end("tool_use", output_tokens)
        return out

    def error_body(self, message: str) -> bytes:
        return json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}}).encode()

    def in_band_error_stream(self, kind: str, *, text_before: str = "") -> list[bytes]:
        out = [message_start(5)]
        if text_before:
            out.append(event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
            out.append(event("content_block_delta", {"index": 0, "delta": {"type": "text_delta",
                                                                          "text": text_before}}))
        etype = "overloaded_error" if kind == "overloaded" else "rate_limit_error"
        out.append(event("error", {"error": {"type": etype, "message": etype.replace("_", " ")}}))
        return out
