"""Benchmark 6 — streaming.

A small SSE server (its own process, asyncio streams, 127.0.0.1) answers
``POST .../v1/chat/completions`` with N OpenAI-style ``chat.completion.chunk``
events, each delta's text holding ``time.monotonic_ns()`` taken just before
the write (CLOCK_MONOTONIC is system-wide on Linux, so the two processes'
clocks agree). Two clients read the same stream, alternating:

- Smoke: ``create_agent(ws, provider="openai-compatible", base_url=...,
  model="x", api_key="k")`` (every installed plugin loaded), a listener on
  ``text.delta`` records the arrival time of each delta;
- baseline: a raw ``httpx`` + ``httpx-sse`` client that parses each event's
  JSON and records the same arrival time.

Latency run: N deltas paced every ``--interval-us`` (default 2 ms);
latency = arrival − timestamp; "added" = Smoke's p99 − the baseline's p99
(median over repetitions). Throughput run: N deltas written back to back;
deltas/s between the first and the last arrival.

    python bench/bench_stream.py [--deltas 1000] [--burst 20000] [--reps 3]
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import PY, finish, fmt_table, installed_version, median, parser, percentile, verdict

TARGET_ADDED_P99_MS = 1.0


# ---------------------------------------------------------------- server


def _chunk(content: str | None, finish: str | None = None, role: bool = False) -> bytes:
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = "assistant"
    if content is not None:
        delta["content"] = content
    obj = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "x",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        _, path, _ = lines[0].split(" ", 2)
        length = 0
        for line in lines[1:]:
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        if length:
            await reader.readexactly(length)
        # path: /<n>/<interval_us>/v1/chat/completions
        parts = path.strip("/").split("/")
        n, interval = int(parts[0]), int(parts[1]) / 1e6
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                     b"connection: close\r\n\r\n")
        writer.write(_chunk(None, role=True))
        await writer.drain()
        if interval:
            nxt = time.monotonic()
            for _ in range(n):
                writer.write(_chunk(f"{time.monotonic_ns()};"))
                await writer.drain()
                nxt += interval
                delay = nxt - time.monotonic()
                await asyncio.sleep(max(0.0, delay))
        else:
            batch: list[bytes] = []
            for _ in range(n):
                batch.append(_chunk(f"{time.monotonic_ns()};"))
                if len(batch) == 50:
                    writer.write(b"".join(batch))
                    batch.clear()
                    await writer.drain()
            writer.write(b"".join(batch))
        writer.write(_chunk(None, finish="stop"))
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve() -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until stdin closes


# ---------------------------------------------------------------- clients


def _latencies(arrivals: list[tuple[int, str]]) -> tuple[list[float], int, int]:
    lat: list[float] = []
    first = last = 0
    for arrived, text in arrivals:
        for ts in text.split(";"):
            if ts:
                lat.append((arrived - int(ts)) / 1e6)
        last = arrived
        first = first or arrived
    return lat, first, last


async def smoke_client(ws: str, base: str) -> list[tuple[int, str]]:
    from smoke_core import create_agent

    arrivals: list[tuple[int, str]] = []
    # a remote-like endpoint: no questions to the server before the run (its one route streams the benchmark)
    agent = create_agent(ws, provider="openai-compatible", base_url=base, model="x", api_key="k",
                         provider_options={"ask_server_facts": False, "server": None})
    agent.on("text.delta", lambda ev: arrivals.append((time.monotonic_ns(), ev.data["text"])))
    try:
        result = await agent.run("go")
        assert result.status == "completed", result.error
    finally:
        await agent.aclose()
    return arrivals


async def raw_client(base: str) -> list[tuple[int, str]]:
    import httpx
    from httpx_sse import aconnect_sse

    arrivals: list[tuple[int, str]] = []
    body = {"model": "x", "messages": [{"role": "user", "content": "go"}], "stream": True}
    async with (
        httpx.AsyncClient(trust_env=False) as client,
        aconnect_sse(client, "POST", f"{base}/chat/completions", json=body,
                     headers={"authorization": "Bearer k"}) as source,
    ):
        async for sse in source.aiter_sse():
            if sse.data == "[DONE]":
                break
            chunk = json.loads(sse.data)
            text = (chunk["choices"][0].get("delta") or {}).get("content")
            if text:
                arrivals.append((time.monotonic_ns(), text))
    return arrivals


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", help=argparse_hidden())
    ap.add_argument("--deltas", type=int, default=1000, help="deltas in the paced (latency) run")
    ap.add_argument("--interval-us", type=int, default=2000)
    ap.add_argument("--burst", type=int, default=20000, help="deltas in the throughput run")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve())
        return
    try:
        import httpx_sse  # noqa: F401
        import smoke_provider_openai  # noqa: F401
    except ImportError as exc:
        finish(args, {"name": "stream", "error": f"needs smoke-provider-openai and httpx-sse ({exc})"}, str)
        return
    server = subprocess.Popen([PY, os.path.abspath(__file__), "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        paced = f"http://127.0.0.1:{port}/{args.deltas}/{args.interval_us}/v1"
        burst = f"http://127.0.0.1:{port}/{args.burst}/0/v1"
        stats: dict[str, dict[str, list[float]]] = {
            k: {"p50": [], "p99": [], "max": [], "rate": []} for k in ("smoke", "raw")
        }
        with tempfile.TemporaryDirectory() as ws:
            clients = {"smoke": lambda b: smoke_client(ws, b), "raw": raw_client}
            asyncio.run(clients["smoke"](burst.replace(f"/{args.burst}/", "/10/")))  # warm-up: imports
            asyncio.run(clients["raw"](burst.replace(f"/{args.burst}/", "/10/")))
            for _ in range(args.reps):
                for name, client in clients.items():
                    arrivals = asyncio.run(client(paced))
                    lat, _, _ = _latencies(arrivals)
                    assert len(lat) == args.deltas, (name, len(lat))
                    stats[name]["p50"].append(percentile(lat, 50))
                    stats[name]["p99"].append(percentile(lat, 99))
                    stats[name]["max"].append(max(lat))
                    arrivals = asyncio.run(client(burst))
                    lat, first, last = _latencies(arrivals)
                    assert len(lat) == args.burst, (name, len(lat))
                    stats[name]["rate"].append((len(lat) - 1) / ((last - first) / 1e9))
    finally:
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    summary = {
        name: {"p50_ms": round(median(s["p50"]), 3), "p99_ms": round(median(s["p99"]), 3),
               "max_ms": round(median(s["max"]), 3), "deltas_per_s": round(median(s["rate"]))}
        for name, s in stats.items()
    }
    added = round(summary["smoke"]["p99_ms"] - summary["raw"]["p99_ms"], 3)
    result = {
        "name": "stream",
        "deltas": args.deltas, "interval_us": args.interval_us, "burst": args.burst, "reps": args.reps,
        "clients": summary,
        "added_p50_ms": round(summary["smoke"]["p50_ms"] - summary["raw"]["p50_ms"], 3),
        "added_p99_ms": added,
        "throughput_ratio": round(summary["smoke"]["deltas_per_s"] / summary["raw"]["deltas_per_s"], 2),
        "versions": {"httpx": installed_version("httpx"), "httpx-sse": installed_version("httpx-sse"),
                     "smoke-provider-openai": installed_version("smoke-provider-openai")},
        "raw": {k: {m: [round(x, 3) for x in v] for m, v in s.items()} for k, s in stats.items()},
        "targets": {"added_p99_ms": TARGET_ADDED_P99_MS},
        "verdicts": {"added_p99_ms": verdict(added, TARGET_ADDED_P99_MS)},
    }
    finish(args, result, table)


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Streaming: {r['error']}"
    rows = [[k, v["deltas_per_s"], v["p50_ms"], v["p99_ms"], v["max_ms"]] for k, v in r["clients"].items()]
    return (f"Streaming ({r['deltas']} deltas every {r['interval_us']} µs for latency; {r['burst']} back to back "
            f"for throughput; median of {r['reps']})\n"
            + fmt_table(["client", "deltas/s", "p50 ms", "p99 ms", "max ms"], rows)
            + f"\nadded p99 latency: {r['added_p99_ms']} ms (target <= {TARGET_ADDED_P99_MS})")


if __name__ == "__main__":
    main()
