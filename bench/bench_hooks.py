"""Benchmark 13 — command hooks (smoke-hooks): what a ``PreToolUse`` command
hook adds to each tool call.

The loop of benchmark 2 (a fake model calling one no-op read-only tool each
step, then text), ``--steps`` steps, in three variants interleaved in one
process so they see the same machine: the plain loop (no plugin); smoke-hooks
installed with no hook configured; and smoke-hooks with one ``PreToolUse``
command hook ``true`` (``sh -c true`` per call, its JSON on stdin, the answer
read and applied, ``hook.started`` / ``hook.completed`` emitted). Milliseconds
per tool call, median of ``--reps`` runs each; the added time is the hook
variant minus the plain loop. Target: ≤ 15 ms per call.

    python bench/bench_hooks.py [--steps 40] [--reps 5]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, installed_version, median, parser, verdict

TARGET_MS = 15.0
VARIANTS = ("plain", "smoke-hooks, no hook", "smoke-hooks, `true` PreToolUse hook")


def _tool() -> Any:
    from smoke_core import ToolAnnotations, ToolDefinition

    async def noop(input: dict[str, Any], ctx: Any) -> str:
        return "ok"

    return ToolDefinition(name="noop", description="Does nothing.", input_schema={"type": "object", "properties": {}},
                          annotations=ToolAnnotations(read_only_hint=True), execute=noop)


async def _run(ws: str, variant: str, steps: int) -> float:
    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    turns: list[Any] = [{"tool_calls": [{"name": "noop", "input": {}}]}] * (steps - 1) + ["done"]
    kw: dict[str, Any] = {}
    plugins: list[Any] = []
    if variant != "plain":
        import smoke_hooks

        plugins.append(smoke_hooks)
    if variant == VARIANTS[2]:
        kw["hooks"] = {"PreToolUse": [{"matcher": "noop", "hooks": [{"type": "command", "command": "true"}]}]}
    agent = create_agent(ws, provider=ScriptedProvider(turns, copy_requests=False), tools=[_tool()],
                         autoload_plugins=False, plugins=plugins, setting_sources=(), **kw)
    t0 = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - t0
    if result.status != "completed":
        raise SystemExit(f"{variant}: the run ended {result.status}: {result.error}")
    return elapsed / (steps - 1) * 1000  # ms per tool call


def measure(steps: int, reps: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as ws:
        for variant in VARIANTS:  # warm up: imports, the plugin manager, the first fork
            asyncio.run(_run(ws, variant, 5))
        for _ in range(reps):
            for variant in VARIANTS:
                times[variant].append(asyncio.run(_run(ws, variant, steps)))
    ms = {v: round(median(t), 3) for v, t in times.items()}
    added = round(ms[VARIANTS[2]] - ms["plain"], 3)
    return {
        "steps": steps, "reps": reps, "versions": {"smoke-core": installed_version("smoke-core"),
                                                     "smoke-hooks": installed_version("smoke-hooks")},
        "ms_per_call": ms, "added_ms": added, "plugin_idle_added_ms": round(ms[VARIANTS[1]] - ms["plain"], 3),
        "target_ms": TARGET_MS, "verdicts": {"added_ms": verdict(added, TARGET_MS)},
        "runs_ms": {v: [round(x, 3) for x in t] for v, t in times.items()},
    }


def table(r: dict[str, Any]) -> str:
    rows = [[v, r["ms_per_call"][v], round(r["ms_per_call"][v] - r["ms_per_call"]["plain"], 3)] for v in VARIANTS]
    return (fmt_table(["variant", "ms per tool call", "added ms"], rows)
            + f"\n\nadded by a `true` PreToolUse hook: {r['added_ms']} ms per call (target ≤ {TARGET_MS} ms: "
              f"{r['verdicts']['added_ms']})")


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    finish(args, measure(args.steps, args.reps), table)


if __name__ == "__main__":
    main()
