"""Benchmark 4 — concurrency.

1,000 runs at once in one process and one event loop, 5 steps each (4 calls
of a no-op read-only tool, then a text answer), the fake model awaiting 10 ms
per call. Reported: total wall time (Smoke: creating the 1,000 agents is
included, timed before the runs start — one agent runs one run at a time;
pydantic-ai shares one Agent),
RSS growth (peak VmRSS from /proc/self/status sampled by the ticker, minus
the RSS before the agents are made), and worst event-loop lag (a ticker task
awaiting ``asyncio.sleep(0.005)`` in a loop while the runs go; lag = how late
it wakes up), split into the garbage collector's pauses (``gc.callbacks``)
and the rest.

Smoke and pydantic-ai each run in their own process.

    python bench/bench_concurrency.py [--only smoke|smoke-gc-freeze|pydantic-ai] [--runs 1000]

``smoke-gc-freeze`` is Smoke again with ``gc.freeze()`` called after the
agents are made (as a server would after start-up), to show how much of the
worst lag is the garbage collector's pass over the long-lived objects.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, installed_version, parser, rss_mb, run_child, verdict

STEPS = 5
DELAY = 0.010
TICK = 0.005
TARGET_S = 2.0
TARGET_MB = 60.0
TARGET_LAG_MS = 50.0


async def measured(work: Callable[[], Awaitable[int]], prepare: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Time ``prepare()`` (synchronous, before the ticker starts) and ``work()``
    (under the ticker); RSS growth covers both."""
    gc.collect()
    base = rss_mb()
    t0 = time.perf_counter()
    if prepare is not None:
        prepare()
    prepared = time.perf_counter() - t0
    peak = rss_mb()
    worst = 0.0
    worst_outside_gc = 0.0
    gc_total = 0.0
    gc_worst = 0.0
    gc_started = 0.0
    stop = asyncio.Event()

    def gc_timer(phase: str, info: dict[str, Any]) -> None:
        # how much of a late wake-up was the garbage collector's (one full pass over every live object)
        nonlocal gc_total, gc_worst, gc_started
        if phase == "start":
            gc_started = time.perf_counter()
        else:
            pause = time.perf_counter() - gc_started
            gc_total += pause
            gc_worst = max(gc_worst, pause)

    async def ticker() -> None:
        nonlocal worst, worst_outside_gc, peak
        while not stop.is_set():
            t0 = time.perf_counter()
            in_gc = gc_total
            await asyncio.sleep(TICK)
            late = time.perf_counter() - t0 - TICK
            worst = max(worst, late)
            worst_outside_gc = max(worst_outside_gc, late - (gc_total - in_gc))
            peak = max(peak, rss_mb())

    gc.callbacks.append(gc_timer)
    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    t1 = time.perf_counter()
    try:
        completed = await work()
    finally:
        gc.callbacks.remove(gc_timer)
    ran = time.perf_counter() - t1
    stop.set()
    await tick
    peak = max(peak, rss_mb())
    return {
        "completed": completed, "total_s": round(prepared + ran, 3), "runs_s": round(ran, 3),
        "create_agents_s": round(prepared, 3), "rss_before_mb": round(base, 1),
        "rss_growth_mb": round(peak - base, 1), "worst_lag_ms": round(worst * 1000, 1),
        "worst_lag_outside_gc_ms": round(worst_outside_gc * 1000, 1), "worst_gc_pause_ms": round(gc_worst * 1000, 1),
    }


def run_smoke(n: int, *, freeze: bool = False) -> dict[str, Any]:
    from bench_loop import _smoke_tool, smoke_agent

    tool = _smoke_tool()
    with tempfile.TemporaryDirectory() as ws:
        async def warm() -> None:
            await smoke_agent(ws, STEPS, False, tool).run("go")

        asyncio.run(warm())  # imports and the schema validator, outside the measurement

        agents: list[Any] = []

        def prepare() -> None:
            agents.extend(smoke_agent(ws, STEPS, False, tool, delay=DELAY) for _ in range(n))
            if freeze:  # what a server does after start-up: its long-lived objects leave the collector's passes
                gc.freeze()

        async def work() -> int:
            results = await asyncio.gather(*(a.run("go") for a in agents))
            return sum(1 for r in results if r.status == "completed" and r.steps == STEPS)

        return asyncio.run(measured(work, prepare))


def run_pydantic_ai(n: int) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(DELAY)
        calls = sum(1 for m in messages if getattr(m, "kind", None) == "response")
        if calls < STEPS - 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{calls}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model_fn))

    @agent.tool_plain
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    async def warm() -> None:
        await agent.run("go")

    asyncio.run(warm())

    async def work() -> int:
        results = await asyncio.gather(*(agent.run("go") for _ in range(n)))
        return sum(1 for r in results if r.output == "done" and len(r.all_messages()) == 2 * STEPS)

    return asyncio.run(measured(work))


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("smoke", "smoke-gc-freeze", "pydantic-ai"))
    ap.add_argument("--runs", type=int, default=1000)
    args = ap.parse_args()
    if args.only == "smoke":
        finish(args, {"framework": "smoke", "runs": args.runs, **run_smoke(args.runs)}, str)
        return
    if args.only == "smoke-gc-freeze":
        finish(args, {"framework": "smoke-gc-freeze", "runs": args.runs, **run_smoke(args.runs, freeze=True)}, str)
        return
    if args.only == "pydantic-ai":
        finish(args, {"framework": "pydantic-ai", "version": installed_version("pydantic-ai-slim"),
                      "runs": args.runs, **run_pydantic_ai(args.runs)}, str)
        return
    frameworks = {"smoke": run_child("bench_concurrency.py", "--only", "smoke", "--runs", str(args.runs)),
                  "smoke-gc-freeze": run_child("bench_concurrency.py", "--only", "smoke-gc-freeze", "--runs",
                                               str(args.runs))}
    if installed_version("pydantic-ai-slim"):
        frameworks["pydantic-ai"] = run_child("bench_concurrency.py", "--only", "pydantic-ai", "--runs",
                                              str(args.runs), timeout=300)
    else:
        frameworks["pydantic-ai"] = {"error": "pydantic-ai-slim is not installed"}
    s = frameworks["smoke"]
    result = {
        "name": "concurrency",
        "runs": args.runs, "steps": STEPS, "model_delay_ms": DELAY * 1000,
        "frameworks": frameworks,
        "targets": {"total_s": TARGET_S, "rss_growth_mb": TARGET_MB, "worst_lag_ms": TARGET_LAG_MS},
        "verdicts": {
            "total_s": verdict(s.get("total_s"), TARGET_S),
            "rss_growth_mb": verdict(s.get("rss_growth_mb"), TARGET_MB),
            "worst_lag_ms": verdict(s.get("worst_lag_ms"), TARGET_LAG_MS),
            "all_completed": "met" if s.get("completed") == args.runs else "MISSED",
        },
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    rows = []
    for fw, d in r["frameworks"].items():
        if "error" in d:
            rows.append([fw, "", "", "", "", d["error"]])
        else:
            rows.append([fw, d["total_s"], d["rss_growth_mb"], d["worst_lag_ms"], d.get("create_agents_s") or "",
                         f"{d['completed']}/{r['runs']}"])
    return (f"Concurrency: {r['runs']} runs x {r['steps']} steps, model awaits {r['model_delay_ms']:.0f} ms\n"
            + fmt_table(["framework", "total s", "RSS +MB", "worst lag ms", "of which create s", "completed"], rows))


if __name__ == "__main__":
    main()
