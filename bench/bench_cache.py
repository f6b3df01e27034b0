"""Benchmark 8 — prompt caching: the share of prompt tokens a provider could serve from cache.

A 30-step scripted run on the demo project (read, search, todo list, run the
tests, edit, finish) through the real provider adapters, each talking to a
local HTTP server that records every request body. For each request, the
prompt is laid out as providers cache it (tools, system prompt, messages;
``cache_control`` markers and the routing key aside), and the part shared with
the previous request's prompt, up to the first differing character, counts as
cacheable. Tokens are o200k_base (tiktoken). Reported: cacheable tokens ÷ all
prompt tokens over the run (the first request counts as all uncached), and
the number of requests whose prefix broke (shared less than the whole of
the previous prompt).

tiktoken cannot download here: ``TIKTOKEN_CACHE_DIR`` must point at a folder
holding o200k_base (``../shared/tokenizers/tiktoken_cache`` from the repo root;
this script sets it when the folder exists).

    python bench/bench_cache.py [--steps 30]
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ROOT, finish, fmt_table, parser, verdict

TARGET = 0.90


def script(steps: int) -> list[tuple[str, dict[str, Any]]]:
    """``steps`` tool calls a model working on the demo project would make; the last one finishes."""
    test = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"
    old = "    values = list(values)\n"
    cycle: list[tuple[str, dict[str, Any]]] = [
        ("list_directory", {"path": "."}),
        ("read_file", {"path": "README.md"}),
        ("grep", {"pattern": "def median"}),
        ("read_file", {"path": "stats/core.py"}),
        ("todo_write", {"todos": [{"content": "find the bug", "status": "in_progress"},
                                  {"content": "fix it", "status": "pending"}]}),
        ("read_file", {"path": "tests/test_core.py"}),
        ("run_test", {"command": test}),
        ("grep", {"pattern": "values"}),
        ("glob", {"pattern": "**/*.py"}),
    ]
    calls = [cycle[i % len(cycle)] for i in range(max(0, steps - 3))]
    calls += [("edit_file", {"path": "stats/core.py", "old_string": old,
                             "new_string": "    values = sorted(values)\n"}),
              ("run_test", {"command": test}),
              ("finish_task", {"summary": "median() sorts its input now"})]
    return calls[-steps:] if steps >= 3 else calls[:steps]


# ---------------------------------------------------------------- wire replies


def openai_reply(n: int, name: str, args: dict[str, Any]) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "model": "m",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

    call = {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return (chunk({"role": "assistant", "content": f"Step {n}."}) + chunk({"tool_calls": [call]})
            + chunk({}, "tool_calls") + "data: [DONE]\n\n").encode()


def anthropic_reply(n: int, name: str, args: dict[str, Any]) -> bytes:
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    return (event("message_start", {"message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}})
            + event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": f"Step {n}."}})
            + event("content_block_stop", {"index": 0})
            + event("content_block_start", {"index": 1, "content_block": {"type": "tool_use", "id": f"toolu_{n}",
                                                                          "name": name, "input": {}}})
            + event("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta",
                                                                  "partial_json": json.dumps(args)}})
            + event("content_block_stop", {"index": 1})
            + event("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
            + event("message_stop", {})).encode()


def _strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_markers(v) for v in value]
    return value


def prompt_text(body: dict[str, Any]) -> str:
    """The prompt in the order providers cache it: tools, system, messages."""
    body = _strip_markers(copy.deepcopy(body))
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    parts = [json.dumps(body.get("tools") or [], ensure_ascii=False, sort_keys=True),
             json.dumps(system or "", ensure_ascii=False)]
    parts += [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in body.get("messages") or []]
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on slices: fast for long equal prefixes
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


async def run_one(adapter: str, steps: int, count: Callable[[str], int]) -> dict[str, Any]:
    from smoke_core import create_agent
    from smoke_core.demo import copy_sample_project
    from smoke_core.providers import RetryPolicy
    from smoke_core.testing import FakeProviderServer, Reply

    calls = script(steps)
    reply_for = openai_reply if adapter == "openai" else anthropic_reply

    def reply(i: int) -> Reply:
        return Reply.sse([reply_for(i + 1, *calls[i])])

    with tempfile.TemporaryDirectory() as tmp:
        project = copy_sample_project(os.path.join(tmp, "project"))
        async with FakeProviderServer([reply(i) for i in range(len(calls))]) as server:
            kwargs: dict[str, Any] = {"api_key": "k", "base_url": server.url + ("/v1" if adapter == "openai" else "")}
            agent = create_agent(project, provider=adapter, model="gpt-4o" if adapter == "openai" else "claude-x",
                                 auto_approve=True, max_steps=steps + 5,
                                 retry=RetryPolicy(base_delay=0.001, max_delay=0.01), **kwargs)
            try:
                result = await agent.run("Fix median(): it gives wrong answers for unsorted input.")
            finally:
                await agent.aclose()
    bodies = [r.json for r in server.requests]
    prompts = [prompt_text(b) for b in bodies]
    totals = [count(p) for p in prompts]
    cached = [0]
    breaks = []
    for i in range(1, len(prompts)):
        shared = common_prefix(prompts[i - 1], prompts[i])
        cached.append(count(prompts[i][:shared]))
        if shared < len(prompts[i - 1]):
            breaks.append(i + 1)
    share = sum(cached) / sum(totals) if totals else 0.0
    later = sum(cached[1:]) / sum(totals[1:]) if len(totals) > 1 else 0.0
    markers = [json.dumps(b).count('"cache_control"') for b in bodies]
    return {
        "adapter": adapter, "status": result.status, "requests": len(bodies), "prompt_tokens": sum(totals),
        "cacheable_tokens": sum(cached), "share": round(share, 4), "share_after_first": round(later, 4),
        "prefix_breaks": breaks, "first_prompt_tokens": totals[0] if totals else 0,
        "last_prompt_tokens": totals[-1] if totals else 0, "max_cache_markers": max(markers, default=0),
        "routing_keys": sorted({b.get("prompt_cache_key") for b in bodies if b.get("prompt_cache_key")}),
    }


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    cache = ROOT.parent / "shared" / "tokenizers" / "tiktoken_cache"
    if "TIKTOKEN_CACHE_DIR" not in os.environ and cache.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        import tiktoken

        enc = tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # no tiktoken, or no cached encoding
        finish(args, {"name": "cache", "error": f"o200k_base unavailable: {type(exc).__name__}: {exc}"}, str)
        return

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    runs = [asyncio.run(run_one(adapter, args.steps, count)) for adapter in ("openai", "anthropic")]
    worst = min(r["share"] for r in runs)
    result = {
        "name": "cache", "encoding": "o200k_base", "steps": args.steps, "runs": runs, "worst_share": worst,
        "targets": {"share": TARGET},
        "verdicts": {"share": verdict(worst, TARGET, lower_is_better=False)},
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Cache: {r['error']}"
    rows = [[x["adapter"], x["status"], x["requests"], x["prompt_tokens"], x["cacheable_tokens"],
             f"{x['share']:.1%}", f"{x['share_after_first']:.1%}", len(x["prefix_breaks"]), x["max_cache_markers"]]
            for x in r["runs"]]
    return (f"Prompt caching over a {r['steps']}-step run (o200k tokens; target >= {TARGET:.0%})\n"
            + fmt_table(["adapter", "run", "requests", "prompt tokens", "cacheable", "share", "after 1st",
                         "prefix breaks", "max markers"], rows))


if __name__ == "__main__":
    main()
