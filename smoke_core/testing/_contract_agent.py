"""Provider contract cases through real agent runs: retries, no replay
after text, a tool call never run twice, abort."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from ..wire.types import (
    RetryPolicy,
)
from ._contract_base import ContractBase, http_date, upto
from ._fake_server import FakeProviderServer, Reply, ReplySource


class AgentCases(ContractBase):
    """Whole runs against the fake server, with a fast RetryPolicy."""

    def _agent(self, tmp_path: Path, provider: Any, *tools: Any, **kwargs: Any) -> Any:
        from ..run.factory import create_agent

        kwargs.setdefault("retry", RetryPolicy(base_delay=0.001, max_delay=0.01))
        return create_agent(tmp_path, provider=provider, tools=list(tools), autoload_plugins=False,
                            auto_approve=True, system_prompt="Be brief.", **kwargs)

    @staticmethod
    def _counting_tool() -> tuple[Any, list[dict[str, Any]]]:
        from ..tools.decorator import tool

        calls: list[dict[str, Any]] = []

        @tool(name="lookup")
        def lookup(key: str) -> str:
            """Look a key up."""
            calls.append({"key": key})
            return f"value of {key}"

        return lookup, calls

    async def _run(self, tmp_path: Path, replies: list[ReplySource], *, max_retries: int = 4,
                   provider_kwargs: dict[str, Any] | None = None) -> tuple[Any, list[Any], FakeProviderServer,
                                                                          list[dict[str, Any]]]:
        lookup, executions = self._counting_tool()
        async with FakeProviderServer(replies) as server:
            provider = self.make_provider(server.url, "sk-test", **(provider_kwargs or {}))
            agent = self._agent(tmp_path, provider, lookup,
                                retry=RetryPolicy(max_retries=max_retries, base_delay=0.001, max_delay=0.01))
            events: list[Any] = []
            agent.on_any(events.append)
            try:
                result = await agent.run("look up k")
            finally:
                await provider.aclose()
                await agent.aclose()
        return result, events, server, executions

    @staticmethod
    def _types(events: list[Any]) -> list[str]:
        return [e.type for e in events]

    async def test_contract_agent_retries_429_with_retry_after(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.error_reply(429, "slow", {"retry-after": "3"}),
            self.error_reply(429, "slow", {"retry-after": http_date(30)}),
            self.sse(self.text_stream(["done"], input_tokens=5, output_tokens=1)),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "done"
        assert len(server.requests) == 3
        warnings = [e.data for e in events if e.type == "run.warning"]
        assert [w["error"]["code"] for w in warnings] == ["provider_rate_limited"] * 2
        assert warnings[0]["error"]["details"]["retry_after"] == 3.0
        assert warnings[1]["error"]["details"]["retry_after"] > 20
        assert all(w["retry_in_ms"] <= 10 for w in warnings)  # capped by max_delay
        assert "text.discarded" not in self._types(events)

    async def test_contract_agent_retries_503_and_529(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.error_reply(503, "down"),
            self.error_reply(529, "overloaded"),
            self.sse(self.text_stream(["up"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "up"
        assert len(server.requests) == 3
        codes = [e.data["error"]["details"]["status"] for e in events if e.type == "run.warning"]
        assert codes == [503, 529]

    async def test_contract_agent_gives_up_after_max_retries(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.error_reply(503, "down")] * 3
        result, events, server, _ = await self._run(tmp_path, replies, max_retries=1)
        assert result.status == "failed"
        assert result.error.code == "provider_unavailable"
        assert len(server.requests) == 2
        assert self._types(events).count("run.warning") == 1
        assert self._types(events).count("run.failed") == 1

    async def test_contract_agent_auth_is_not_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.error_reply(401, "bad key"), self.sse(self.text_stream(["x"]))]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "failed" and result.error.code == "provider_auth"
        assert self.env_var in (result.error.hint or "")
        assert len(server.requests) == 1
        assert "run.warning" not in self._types(events)

    async def test_contract_agent_drop_after_text_discards(self, tmp_path: Path) -> None:
        partial = self.text_stream(["Hello ", "wor"])
        replies: list[ReplySource] = [
            self.sse(upto(partial, "wor"), then="drop"),
            self.sse(self.text_stream(["Hello ", "world"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "Hello world"
        assert len(server.requests) == 2
        types = self._types(events)
        assert types.count("text.discarded") == 1
        discarded = next(e for e in events if e.type == "text.discarded")
        assert discarded.data["reason"] == "provider_unavailable"
        assert discarded.data["text"].startswith("Hello")
        # the discard comes before the warning and before the replayed deltas
        d = types.index("text.discarded")
        assert types.index("run.warning") > d
        replay = [e.data["text"] for e in events[d:] if e.type == "text.delta"]
        assert "".join(replay) == "Hello world"
        assert result.messages[-1]["content"] == [{"type": "text", "text": "Hello world"}]

    async def test_contract_agent_stall_times_out_and_retries(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.sse(upto(self.text_stream(["x"]), '"x"'), then="stall"),
            self.sse(self.text_stream(["fine"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"idle_timeout": 0.3})
        assert result.status == "completed" and result.text == "fine"
        warnings = [e.data["error"]["code"] for e in events if e.type == "run.warning"]
        assert warnings == ["provider_timeout"]
        assert len(server.requests) == 2

    async def test_contract_agent_garbage_is_not_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [self.sse([b"\x00\x01\x02garbage\xff"]), self.sse(self.text_stream(["x"]))]
        result, _events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "failed" and result.error.code == "provider_error"
        assert len(server.requests) == 1

    async def test_contract_agent_in_band_error_retried(self, tmp_path: Path) -> None:
        replies: list[ReplySource] = [
            self.sse(self.in_band_error_stream("overloaded", text_before="Thinking")),
            self.sse(self.in_band_error_stream("rate_limited")),
            self.sse(self.text_stream(["ok"])),
        ]
        result, events, server, _ = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "ok"
        warnings = [e.data["error"]["code"] for e in events if e.type == "run.warning"]
        assert warnings == ["provider_unavailable", "provider_rate_limited"]
        assert self._types(events).count("text.discarded") == 1
        assert len(server.requests) == 3

    async def test_contract_agent_tool_call_never_runs_twice(self, tmp_path: Path) -> None:
        call = [("call_1", "lookup", ['{"key"', ': "k"}'])]
        full = self.tool_call_stream(call, input_tokens=3, output_tokens=2)
        replies: list[ReplySource] = [
            self.sse(full[: max(1, len(full) // 2)], then="drop"),  # dropped while the call streams
            self.sse(full),  # the call, complete: runs once
            self.sse(upto(self.text_stream(["after"]), "after"), then="drop"),  # dropped after the tool ran
            self.error_reply(503, "down"),
            self.sse(self.text_stream(["answer"])),
        ]
        result, events, server, executions = await self._run(tmp_path, replies)
        assert result.status == "completed" and result.text == "answer"
        assert executions == [{"key": "k"}]
        assert self._types(events).count("tool.started") == 1
        assert len(server.requests) == 5
        # every request after the tool ran carries its result exactly once
        for req in server.requests[2:]:
            assert json.dumps(req.json).count("value of k") == 1

    async def test_contract_agent_no_progress_is_retried_deadline_is_not(self, tmp_path: Path) -> None:
        stuck = itertools.chain(self.stream_prefix(), itertools.repeat(b": keep-alive\n\n"))
        replies: list[ReplySource] = [self.sse(stuck, interval=0.002), self.sse(self.text_stream(["fine"]))]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"progress_timeout": 0.3})
        assert result.status == "completed" and result.text == "fine"
        assert [e.data["error"]["code"] for e in events if e.type == "run.warning"] == ["provider_timeout"]

        replies = [Reply.no_answer(), self.sse(self.text_stream(["never"]))]
        result, events, server, _ = await self._run(tmp_path, replies, provider_kwargs={"response_timeout": 0.3})
        assert result.status == "failed" and result.error.code == "provider_timeout"
        assert result.error.details["limit"] == "response_timeout"
        assert len(server.requests) == 1  # not retried

    async def test_contract_agent_rejected_tool_call_then_valid_call(self, tmp_path: Path) -> None:
        failed = '<function=lookup>{"key": k}</function>'
        forms = self.rejected_tool_call_replies(failed)
        for n, rejected in enumerate(forms):
            call = [(f"call_ok_{n}", "lookup", ['{"key": "k"}'])]
            replies: list[ReplySource] = [
                rejected,
                self.sse(self.tool_call_stream(call, input_tokens=3, output_tokens=2)),
                self.sse(self.text_stream(["done"])),
            ]
            workspace = tmp_path / f"form{n}"
            workspace.mkdir()
            result, events, server, executions = await self._run(workspace, replies)
            assert result.status == "completed" and result.text == "done", (n, result.error)
            assert executions == [{"key": "k"}], n  # the valid call ran once; the rejected one never
            warnings = [e.data["error"] for e in events if e.type == "run.warning"]
            assert [w["code"] for w in warnings] == ["tool_invalid_input"], n
            assert len(server.requests) == 3
            # text streamed before the rejection is withdrawn before the warning
            types = self._types(events)
            before = types[: types.index("run.warning")]
            if "text.delta" in before:
                assert "text.discarded" in before, n
            # the model was told what failed before it was asked again
            retry = json.dumps(server.requests[1].json)
            assert "rejected" in retry
            if warnings[0]["details"].get("failed_generation"):
                assert json.dumps(failed)[1:-1] in retry

    async def test_contract_agent_abort_closes_stalled_stream(self, tmp_path: Path) -> None:
        stalled = self.sse(upto(self.text_stream(["partial"]), "partial"), then="stall")
        async with FakeProviderServer([stalled]) as server:
            provider = self.make_provider(server.url, "sk-test")
            agent = self._agent(tmp_path, provider)
            got_text = asyncio.Event()
            agent.on("text.delta", lambda e: got_text.set())
            try:
                runner = asyncio.ensure_future(agent.run("go"))
                await asyncio.wait_for(got_text.wait(), 10)
                agent.abort()
                # far below the 60 s idle timeout: abort itself closed the stream
                result = await asyncio.wait_for(runner, 5)
                assert result.status == "interrupted"
                assert result.error is None
                assert await server.wait(server.disconnected, 10), "the server never saw the connection close"
            finally:
                await provider.aclose()
                await agent.aclose()
