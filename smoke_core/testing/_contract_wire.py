"""Provider contract cases at the provider level: streaming, tool-call
assembly, the key, HTTP statuses, in-band errors, dropped streams, abort."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

from ..base.errors import AgentError
from ..wire.types import (
    Finished,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    UsageReport,
)
from ._contract_base import ContractBase, collect_events, http_date, text_of, upto
from ._fake_server import FakeProviderServer, unused_port


class WireCases(ContractBase):
    """Streaming and failure classification, one request at a time."""

    async def test_contract_text_streaming(self) -> None:
        chunks = self.text_stream(["Hel", "lo", " world"], input_tokens=11, output_tokens=3)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        deltas = [e.text for e in events if isinstance(e, TextDelta)]
        assert deltas == ["Hel", "lo", " world"]
        usage = [e.usage for e in events if isinstance(e, UsageReport)]
        assert len(usage) == 1
        assert (usage[0].input_tokens, usage[0].output_tokens) == (11, 3)
        assert isinstance(events[-1], Finished) and events[-1].reason == "stop"
        assert [e for e in events if isinstance(e, Finished)] == [events[-1]]

    async def test_contract_finish_reason_length(self) -> None:
        chunks = self.text_stream(["cut"], finish="length", input_tokens=1, output_tokens=1)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        assert isinstance(events[-1], Finished) and events[-1].reason == "length"

    async def test_contract_tool_call_assembly(self) -> None:
        calls = [
            ("call_a", "read_file", ['{"pa', 'th": "a', '.txt"}']),
            ("call_b", "grep", ["", '{"pattern": ', '"x"}']),
        ]
        chunks = self.tool_call_stream(calls, input_tokens=20, output_tokens=9)
        async with FakeProviderServer([self.sse(chunks)]) as server:
            events = await self._call(server)
        got = [e for e in events if isinstance(e, ToolCallRequest)]
        assert [(c.id, c.name) for c in got] == [("call_a", "read_file"), ("call_b", "grep")]
        args = [json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments for c in got]
        assert args == [{"path": "a.txt"}, {"pattern": "x"}]
        assert isinstance(events[-1], Finished) and events[-1].reason == "tool_calls"
        usage = [e.usage for e in events if isinstance(e, UsageReport)]
        assert [(u.input_tokens, u.output_tokens) for u in usage] == [(20, 9)]
        # a tool call comes out once, complete, after the text and thoughts
        first_call = events.index(got[0])
        assert not any(isinstance(e, (TextDelta, ThoughtDelta)) for e in events[first_call:])

    async def test_contract_sends_key(self) -> None:
        chunks = self.text_stream(["ok"])
        async with FakeProviderServer([self.sse(chunks)]) as server:
            await self._call(server)
        headers = server.requests[0].headers
        assert "sk-test" in (headers.get("authorization", "") + headers.get("x-api-key", ""))
        assert headers["content-type"] == "application/json"

    async def test_contract_401_is_provider_auth(self) -> None:
        async with FakeProviderServer([self.error_reply(401, "invalid key")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_auth"
        assert exc.info.retryable is False
        assert self.env_var in (exc.info.hint or "")
        assert "invalid key" in exc.info.message

    async def test_contract_missing_key_is_provider_auth(self) -> None:
        saved = os.environ.pop(self.env_var, None)
        try:
            provider = self.make_provider("http://127.0.0.1:9", None)
            try:
                await collect_events(provider, self.request())
            except AgentError as exc:
                assert exc.info.code == "provider_auth"
                assert exc.info.hint == f"Set {self.env_var} or pass api_key=."
            else:
                raise AssertionError("a missing key must raise provider_auth")
            finally:
                await provider.aclose()
        finally:
            if saved is not None:
                os.environ[self.env_var] = saved

    async def test_contract_429_retry_after_seconds(self) -> None:
        reply = self.error_reply(429, "slow down", {"retry-after": "7"})
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"
        assert exc.info.retryable is True
        assert exc.info.details["retry_after"] == 7.0

    async def test_contract_429_retry_after_http_date(self) -> None:
        reply = self.error_reply(429, "slow down", {"retry-after": http_date(120)})
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"
        assert 100 < exc.info.details["retry_after"] <= 121

    async def test_contract_503_is_unavailable(self) -> None:
        async with FakeProviderServer([self.error_reply(503, "down")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.details["status"] == 503

    async def test_contract_529_is_unavailable(self) -> None:
        async with FakeProviderServer([self.error_reply(529, "overloaded")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"

    async def test_contract_400_is_provider_error(self) -> None:
        async with FakeProviderServer([self.error_reply(400, "bad field")]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"
        assert exc.info.retryable is False
        assert "bad field" in exc.info.message

    async def test_contract_malformed_json_is_provider_error(self) -> None:
        reply = self.sse([b"event: message_start\ndata: {not json at all\n\n"])
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"
        assert "not json" in json.dumps(exc.info.details)

    async def test_contract_garbage_bytes_is_provider_error(self) -> None:
        reply = self.sse([b"\x00\xff\xfe garbage \x89PNG\r\n\x1a\n\x00\x00", b"\xde\xad\xbe\xef"])
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_error"

    async def test_contract_dropped_stream_is_unavailable(self) -> None:
        chunks = self.text_stream(["par", "tial", " more"])
        reply = self.sse(upto(chunks, "tial"), then="drop")
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.retryable is True

    async def test_contract_stall_hits_idle_timeout(self) -> None:
        chunks = self.text_stream(["wait"])
        async with FakeProviderServer([self.sse(upto(chunks, "wait"), then="stall")]) as server:
            exc = await self._call_error(server, idle_timeout=0.3)
        assert exc.info.code == "provider_timeout"
        assert exc.info.retryable is True

    async def test_contract_connection_refused_is_unavailable(self) -> None:
        provider = self.make_provider(f"http://127.0.0.1:{unused_port()}", "sk-test")
        try:
            await collect_events(provider, self.request())
        except AgentError as exc:
            assert exc.info.code == "provider_unavailable"
            assert exc.info.details.get("transport") == "connect"
        else:
            raise AssertionError("connection refused must raise")
        finally:
            await provider.aclose()

    async def test_contract_in_band_overloaded(self) -> None:
        reply = self.sse(self.in_band_error_stream("overloaded"))
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_unavailable"
        assert exc.info.details.get("in_band") is True

    async def test_contract_in_band_rate_limited(self) -> None:
        reply = self.sse(self.in_band_error_stream("rate_limited"))
        async with FakeProviderServer([reply]) as server:
            exc = await self._call_error(server)
        assert exc.info.code == "provider_rate_limited"

    async def test_contract_abort_closes_stream(self) -> None:
        chunks = self.text_stream(["first"])
        async with FakeProviderServer([self.sse(upto(chunks, "first"), then="stall")]) as server:
            provider = self.make_provider(server.url, "sk-test")
            got_text = asyncio.Event()
            seen: list[ProviderEvent] = []

            async def consume() -> None:
                async for event in provider.stream(self.request()):
                    seen.append(event)
                    if isinstance(event, TextDelta):
                        got_text.set()

            task = asyncio.ensure_future(consume())
            try:
                await asyncio.wait_for(got_text.wait(), 10)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                assert await server.wait(server.disconnected, 10), "the server never saw the connection close"
            finally:
                await provider.aclose()
        assert text_of(seen) == "first"

    # -- bounded responses (small limits; every case ends in a classified error) --
