"""Provider contract cases for the bounds of a response (timeouts, sizes)
and tool calls the provider rejects."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

from ..base.errors import AgentError
from ..wire.types import (
    ToolCallRequest,
)
from ._contract_base import ContractBase, collect_events, text_of
from ._fake_server import FakeProviderServer, Reply


class LimitCases(ContractBase):
    """Endless, trickling and oversized responses; rejected tool calls."""

    async def _bounded(self, reply: Reply, **limits: Any) -> AgentError:
        async with FakeProviderServer([reply]) as server:
            exc = await asyncio.wait_for(self._call_error(server, **limits), 30)
        return exc

    async def test_contract_endless_empty_deltas_hit_progress_timeout(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(self.empty_delta_chunk()))
        exc = await self._bounded(self.sse(endless, interval=0.002), progress_timeout=0.3)
        assert exc.info.code == "provider_timeout" and exc.info.retryable is True
        assert exc.info.details["limit"] == "progress_timeout"

    async def test_contract_endless_keep_alives_hit_progress_timeout(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(b": keep-alive\n\n"))
        exc = await self._bounded(self.sse(endless, interval=0.002), progress_timeout=0.3)
        assert exc.info.code == "provider_timeout" and exc.info.details["limit"] == "progress_timeout"

    async def test_contract_text_keeps_a_stream_alive_past_progress_timeout(self) -> None:
        # content every 0.04 s for ~0.9 s: longer than the progress timeout in total, never a gap that long
        chunks = self.text_stream([f"w{i} " for i in range(22)])
        async with FakeProviderServer([Reply.sse(chunks, interval=0.04)]) as server:
            events = await self._call(server, progress_timeout=0.6)
        assert text_of(events) == "".join(f"w{i} " for i in range(22))

    async def test_contract_tool_arguments_are_progress(self) -> None:
        fragments = ['{"key": "', *["k"] * 20, '"}']
        chunks = self.tool_call_stream([("call_slow", "lookup", fragments)])
        async with FakeProviderServer([Reply.sse(chunks, interval=0.04)]) as server:
            events = await self._call(server, progress_timeout=0.6)
        calls = [e for e in events if isinstance(e, ToolCallRequest)]
        assert len(calls) == 1
        args = calls[0].arguments
        assert (json.loads(args) if isinstance(args, str) else args) == {"key": "k" * 20}

    async def test_contract_byte_trickle_hits_response_timeout(self) -> None:
        def trickle() -> Iterator[bytes]:
            yield from self.stream_prefix()
            for chunk in itertools.repeat(self.text_chunk("slow ")):
                for i in range(len(chunk)):
                    yield chunk[i : i + 1]

        exc = await self._bounded(self.sse(trickle(), interval=0.005), response_timeout=0.5)
        assert exc.info.code == "provider_timeout" and exc.info.retryable is False
        assert exc.info.details["limit"] == "response_timeout"
        assert "response_timeout" in (exc.info.hint or "")

    async def test_contract_endless_text_hits_max_response_bytes(self) -> None:
        cap = 64 * 1024
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(self.text_chunk("spam " * 40)))
        exc = await self._bounded(self.sse(endless), max_response_bytes=cap)
        assert exc.info.code == "provider_error" and exc.info.retryable is False
        assert exc.info.details["limit"] == "max_response_bytes"
        # memory stays bounded: reading stopped within one network read of the cap
        assert cap < exc.info.details["received_bytes"] <= cap + 128 * 1024

    async def test_contract_one_endless_sse_line_hits_max_line_bytes(self) -> None:
        endless = itertools.chain(self.stream_prefix(), [b'data: {"endless": "'], itertools.repeat(b"a" * 1024))
        exc = await self._bounded(self.sse(endless), max_line_bytes=16 * 1024)
        assert exc.info.code == "provider_error" and exc.info.retryable is False
        assert exc.info.details["limit"] == "max_line_bytes"
        assert exc.info.details["line_bytes"] <= 16 * 1024 + 128 * 1024

    async def test_contract_endless_json_body_hits_max_response_bytes(self) -> None:
        endless = itertools.chain([b'{"choices": [{"message": {"content": "'], itertools.repeat(b"b" * 4096))
        reply = Reply(200, {"content-type": "application/json"}, endless)
        exc = await self._bounded(reply, max_response_bytes=64 * 1024)
        assert exc.info.code == "provider_error" and exc.info.details["limit"] == "max_response_bytes"

    async def test_contract_silent_server_hits_response_timeout(self) -> None:
        exc = await self._bounded(Reply.no_answer(), response_timeout=0.4)
        assert exc.info.code == "provider_timeout" and exc.info.details["limit"] == "response_timeout"

    async def test_contract_limits_per_request_settings(self) -> None:
        endless = itertools.chain(self.stream_prefix(), itertools.repeat(b": ping\n\n"))
        async with FakeProviderServer([self.sse(endless, interval=0.002)]) as server:
            provider = self.make_provider(server.url, "sk-test")
            try:
                request = self.request(settings={"progress_timeout": 0.3})
                await asyncio.wait_for(collect_events(provider, request), 30)
            except AgentError as exc:
                assert exc.info.details["progress_timeout"] == 0.3
            else:
                raise AssertionError("endless keep-alives must end in provider_timeout")
            finally:
                await provider.aclose()
        body = server.requests[0].json
        assert "progress_timeout" not in json.dumps(body)  # a transport setting, not a body field

    # -- tool calls the provider rejects (the model's mistake) ---------------

    async def test_contract_rejected_tool_call_is_tool_invalid_input(self) -> None:
        tools = [{"name": "lookup", "description": "Look a key up.",
                  "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}}}]
        for reply in self.rejected_tool_call_replies('<function=lookup>{"key": k}</function>'):
            async with FakeProviderServer([reply]) as server:
                provider = self.make_provider(server.url, "sk-test")
                try:
                    await collect_events(provider, self.request(tools=tools))
                except AgentError as exc:
                    assert exc.info.code == "tool_invalid_input", exc.info
                    assert exc.info.layer == "tool" and exc.info.retryable is False
                else:
                    raise AssertionError(f"a rejected tool call must raise tool_invalid_input: {reply}")
                finally:
                    await provider.aclose()

    async def test_contract_400_with_tools_is_still_provider_error(self) -> None:
        tools = [{"name": "lookup", "description": "d", "input_schema": {"type": "object", "properties": {}}}]
        async with FakeProviderServer([self.error_reply(400, "max_tokens is too large")]) as server:
            provider = self.make_provider(server.url, "sk-test")
            try:
                await collect_events(provider, self.request(tools=tools))
            except AgentError as exc:
                assert exc.info.code == "provider_error"
            else:
                raise AssertionError("a 400 must raise")
            finally:
                await provider.aclose()

    # -- agent-level tests (real runs, fast retries) -------------------------
