"""The core provider contract, run against the Chat Completions adapter."""

from __future__ import annotations

import json
from typing import Any

from smoke_provider_openai import make_provider

from smoke_core.testing import ProviderContract, Reply

_WIRE_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls", "content_filter": "content_filter"}


def chunk(choices: list[dict[str, Any]] | None = None, **extra: Any) -> bytes:
    data = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "test-model",
            "choices": choices if choices is not None else [], **extra}
    return f"data: {json.dumps(data)}\n\n".encode()


def delta(d: dict[str, Any], finish: str | None = None) -> bytes:
    return chunk([{"index": 0, "delta": d, "finish_reason": finish}])


def usage_chunk(input_tokens: int, output_tokens: int) -> bytes:
    return chunk([], usage={"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                            "total_tokens": input_tokens + output_tokens})


DONE = b"data: [DONE]\n\n"


class TestOpenAIContract(ProviderContract):
    env_var = "OPENAI_API_KEY"

    def make_provider(self, base_url: str, api_key: str | None, **kwargs: Any) -> Any:
        return make_provider("openai", model=self.model, base_url=base_url, api_key=api_key, **kwargs)

    def text_stream(self, chunks: list[str], *, finish: str = "stop", input_tokens: int = 0,
                    output_tokens: int = 0) -> list[bytes]:
        out = [delta({"role": "assistant", "content": ""})]
        out += [delta({"content": text}) for text in chunks]
        out.append(delta({}, _WIRE_FINISH[finish]))
        out.append(usage_chunk(input_tokens, output_tokens))
        out.append(DONE)
        return out

    def tool_call_stream(self, calls: list[tuple[str, str, list[str]]], *, input_tokens: int = 0,
                         output_tokens: int = 0) -> list[bytes]:
        out = []
        # headers of every call first, then the argument fragments interleaved: assembly goes by index
        for index, (call_id, name, frags) in enumerate(calls):
            out.append(delta({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                              "function": {"name": name, "arguments": frags[0]}}]}))
        longest = max(len(frags) for _, _, frags in calls)
        for step in range(1, longest):
            for index, (_, _, frags) in enumerate(calls):
                if step < len(frags):
                    out.append(delta({"tool_calls": [{"index": index, "function": {"arguments": frags[step]}}]}))
        out.append(delta({}, "tool_calls"))
        out.append(usage_chunk(input_tokens, output_tokens))
        out.append(DONE)
        return out

    def error_body(self, message: str) -> bytes:
        return json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": None}}).encode()

    def in_band_error_stream(self, kind: str, *, text_before: str = "") -> list[bytes]:
        out = [delta({"role": "assistant", "content": ""})]
        if text_before:
            out.append(delta({"content": text_before}))
        if kind == "overloaded":
            err = {"message": "The server is overloaded", "type": "server_error", "code": "overloaded"}
        else:
            err = {"message": "Rate limit reached", "code": 429}  # OpenRouter sends numeric codes
        out.append(f"data: {json.dumps({'error': err})}\n\n".encode())
        return out

    def rejected_tool_call_replies(self, failed_generation: str) -> list[Reply]:
        groq = {"message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more "
                           "details.", "type": "invalid_request_error", "code": "tool_use_failed",
                "failed_generation": failed_generation}
        vllm_message = "Expecting ',' delimiter: line 1 column 54 (char 53)"
        return [
            # Groq, streaming: the error arrives inside the 200 stream, after some text
            self.sse([delta({"role": "assistant", "content": ""}), delta({"content": "Let me look"}),
                      f"data: {json.dumps({'error': groq})}\n\n".encode()]),
            # Groq, the same as an HTTP 400
            Reply.json({"error": groq}, status=400),
            # vLLM: 400 with the JSON parser's message (old and new error shapes)
            Reply.json({"error": {"message": vllm_message, "type": "BadRequestError", "param": None, "code": 400}},
                       status=400),
            Reply.json({"object": "error", "message": vllm_message, "type": "BadRequestError", "code": 400},
                       status=400),
        ]


class TestOpenAIInlineContract(TestOpenAIContract):
    """The same contract with tool calls inline: tools offered in the system
    prompt, calls written as Hermes ``<tool_call>`` text, split across deltas."""

    def make_provider(self, base_url: str, api_key: str | None, **kwargs: Any) -> Any:
        return make_provider("openai", model=self.model, base_url=base_url, api_key=api_key, tool_calls="inline",
                             **kwargs)

    def request(self, text: str = "hi", *, tools: list[dict[str, Any]] | None = None,
                settings: dict[str, Any] | None = None) -> Any:
        tools = tools or [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {}}}
                          for n in ("read_file", "grep", "lookup")]
        return super().request(text, tools=tools, settings=settings)

    def tool_call_stream(self, calls: list[tuple[str, str, list[str]]], *, input_tokens: int = 0,
                         output_tokens: int = 0) -> list[bytes]:
        pieces: list[str] = []
        for _call_id, name, frags in calls:
            pieces += ["<tool", f'_call>{{"name": "{name}", "arguments": ', *frags, "}</tool_", "call>"]
        return self.text_stream(pieces, input_tokens=input_tokens, output_tokens=output_tokens)

    async def test_contract_tool_call_assembly(self) -> None:
        # inline calls carry no ids of their own: check names and arguments, not ids
        calls = [("call_a", "read_file", ['{"pa', 'th": "a', '.txt"}']), ("call_b", "grep", ["", '{"pattern": ', '"x"}'])]
        from smoke_core.providers import Finished, ToolCallRequest
        from smoke_core.testing import FakeProviderServer

        async with FakeProviderServer([self.sse(self.tool_call_stream(calls))]) as server:
            events = await self._call(server)
        got = [e for e in events if isinstance(e, ToolCallRequest)]
        assert [(c.name, c.arguments) for c in got] == [("read_file", {"path": "a.txt"}), ("grep", {"pattern": "x"})]
        assert isinstance(events[-1], Finished) and events[-1].reason == "tool_calls"

    def rejected_tool_call_replies(self, failed_generation: str) -> list[Reply]:
        # no tools parameter is sent inline, so a JSON parser's 400 is not about a tool call; Groq's code still is
        return super().rejected_tool_call_replies(failed_generation)[:2]
