"""Bounded responses behind compression: the caps hold on the decoded bytes
too (a gzip stream of one endless line, a gzip bomb), against a real HTTP
server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import Iterable, Iterator

import pytest
from smoke_provider_openai import make_provider

from smoke_core.plugin import AgentError, user_message
from smoke_core.providers import ModelRequest
from smoke_core.testing import FakeProviderServer, Reply, collect_events


def gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` as one gzip stream, flushed after each chunk (as a compressing proxy would)."""
    z = zlib.compressobj(wbits=31)
    for chunk in chunks:
        out = z.compress(chunk) + z.flush(zlib.Z_SYNC_FLUSH)
        if out:
            yield out


async def call(reply: Reply, **limits: float) -> AgentError:
    async with FakeProviderServer([reply]) as server:
        provider = make_provider("openai", model="m", base_url=server.url, api_key="k", **limits)
        request = ModelRequest(model="m", messages=[user_message("hi")], tools=[])
        try:
            await asyncio.wait_for(collect_events(provider, request), 30)
        except AgentError as exc:
            return exc
        finally:
            await provider.aclose()
    raise AssertionError("the provider did not raise")


async def test_endless_line_inside_gzip_hits_max_line_bytes() -> None:
    # compressed, the line is a few hundred bytes: only the decoded line can be measured
    endless = gzipped(itertools.chain([b'data: {"x": "'], itertools.repeat(b"a" * 4096)))
    reply = Reply(200, {"content-type": "text/event-stream", "content-encoding": "gzip"}, endless)
    exc = await call(reply, max_line_bytes=32 * 1024)
    assert exc.info.code == "provider_error" and exc.info.details["limit"] == "max_line_bytes"


@pytest.mark.parametrize("ctype", ["application/json", "text/event-stream"])
async def test_gzip_bomb_hits_max_response_bytes_on_decoded_bytes(ctype: str) -> None:
    zeros = itertools.repeat(b"\n" * 65536 if ctype == "text/event-stream" else b"0" * 65536)
    reply = Reply(200, {"content-type": ctype, "content-encoding": "gzip"}, gzipped(zeros))
    exc = await call(reply, max_response_bytes=1024 * 1024, max_line_bytes=1024 * 1024)
    assert exc.info.code == "provider_error" and exc.info.details["limit"] == "max_response_bytes"
    assert exc.info.details["received_bytes"] <= 1024 * 1024 + 2 * 65536


async def test_huge_error_body_is_read_only_in_part() -> None:
    # a 400 whose body never ends: classified from its first 64 KiB, not read forever
    endless = itertools.chain([b'{"error": {"message": "bad ' ], itertools.repeat(b"x" * 4096))
    reply = Reply(400, {"content-type": "application/json"}, endless)
    exc = await call(reply)
    assert exc.info.code == "provider_error" and exc.info.details["status"] == 400
