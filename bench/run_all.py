"""Run every benchmark, print the tables, write ``bench/results/latest.json``
and regenerate ``docs/performance.md`` from it.

Each benchmark is its own script (runnable alone) and runs here in its own
process; a benchmark that fails or times out is recorded as such and the
others still run. ``nox -s bench`` calls this script.

    python bench/run_all.py [--only loop,stream] [--quick] [--no-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import BENCH, ROOT, installed_version, machine, run_child

#: name -> (script, normal args, quick args, timeout s)
BENCHMARKS: dict[str, tuple[str, list[str], list[str], float]] = {
    "startup": ("bench_startup.py", [], ["--runs", "5", "--peer-runs", "2"], 300),
    "loop": ("bench_loop.py", [], ["--reps", "2", "--peer-reps", "1"], 600),
    "search": ("bench_search.py", [], ["--runs", "3"], 300),
    "concurrency": ("bench_concurrency.py", [], [], 420),
    "prompt": ("bench_prompt.py", [], [], 120),
    "stream": ("bench_stream.py", [], ["--reps", "1", "--deltas", "500", "--burst", "5000"], 300),
    "sandbox": ("bench_sandbox.py", [], ["--runs", "10", "--test-runs", "4"], 300),
    "otel": ("bench_otel.py", [], ["--reps", "2", "--peer-reps", "1"], 900),
    "cache": ("bench_cache.py", [], ["--steps", "12"], 300),
    "batch": ("bench_batch.py", [], ["--tasks", "40"], 1200),
    "store": ("bench_store.py", [], ["--appends", "200", "--messages", "2000"], 300),
    # needs --before-python (a venv with the core before issue 27's move); skipped without it
    "layout": ("bench_layout.py", [], ["--rounds", "3", "--runs", "5"], 600),
    "hooks": ("bench_hooks.py", [], ["--steps", "12", "--reps", "2"], 300),
    "permission": ("bench_permission.py", [], ["--runs", "300"], 180),
    # needs llama-server and the Qwen model (`nox -s realmodel` puts them in the cache); not measured without
    "realmodel": ("bench_realmodel.py", [], ["--seeds", "1", "--tasks", "answer-from-file,fix-off-by-one"], 10800),
    "checkpoint": ("bench_checkpoint.py", [], ["--turns", "8"], 300),
}

DISTS = ("smoke-core", "smoke-tools-filesystem", "smoke-tools-search", "smoke-tools-terminal", "smoke-tools-git",
         "smoke-tools-agent", "smoke-provider-openai", "smoke-provider-anthropic", "smoke-mcp", "smoke-skills",
         "smoke-ui", "smoke-otel", "smoke-hooks", "opentelemetry-sdk", "smoke-ray", "smoke-store-postgres", "ray", "psycopg", "pydantic-ai-slim", "openai-agents", "llm", "llm-anthropic", "llm-gemini", "httpx",
         "httpx-sse", "tiktoken", "pydantic", "jsonschema", "pluggy")


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=False)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _calibrate() -> float:
    """ms for a fixed pure-Python loop: a rough gauge of how fast (or loaded) the machine was."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i % 7
        best = min(best, (time.perf_counter() - t0) * 1000)
    return round(best, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help=f"comma list of benchmarks: {', '.join(BENCHMARKS)}")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke test of the scripts)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/performance.md")
    ap.add_argument("--output", default=str(BENCH / "results" / "latest.json"))
    ap.add_argument("--before-python", help="python of a venv with the core before issue 27 (for `layout`)")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")
    env_info = machine()
    env_info["calibration_loop_ms_before"] = _calibrate()
    started = time.perf_counter()
    results: dict[str, Any] = {}
    elapsed: dict[str, float] = {}
    for name in names:
        script, normal, quick, timeout = BENCHMARKS[name]
        print(f"== {name} ({script}) ...", flush=True)
        t0 = time.perf_counter()
        extra = ["--before-python", args.before_python] if name == "layout" and args.before_python else []
        if name == "layout" and not extra:
            results[name] = {"error": "skipped: needs --before-python (a venv with the core before issue 27)"}
            print("   skipped: needs --before-python\n", flush=True)
            continue
        results[name] = run_child(script, *(quick if args.quick else normal), *extra, timeout=timeout)
        elapsed[name] = round(time.perf_counter() - t0, 1)
        module = importlib.import_module(script[:-3])
        res = results[name]
        if "error" in res and "name" not in res:
            print(f"   FAILED: {res['error']}")
            for line in res.get("stderr") or []:
                print("   | " + line)
        else:
            print(module.table(res))
        print(f"   ({elapsed[name]} s)\n", flush=True)
    env_info["calibration_loop_ms_after"] = _calibrate()
    env_info["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    data = {
        "generated_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "commit": _git_commit(),
        "quick": args.quick,
        "machine": env_info,
        "versions": {d: installed_version(d) for d in DISTS},
        "elapsed_s": {**elapsed, "total": round(time.perf_counter() - started, 1)},
        "benchmarks": results,
    }
    if args.only and os.path.exists(args.output):
        # keep the other benchmarks' last figures, so the page stays whole
        try:
            with open(args.output) as fh:
                old = json.load(fh)
            merged = {**old.get("benchmarks", {}), **results}
            data["benchmarks"] = {k: merged[k] for k in BENCHMARKS if k in merged}
            data["partial_rerun"] = names
        except (OSError, ValueError):
            pass
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as fh:
        json.dump(data, fh, indent=2, default=str)
    print(f"wrote {os.path.relpath(args.output)}")
    if not args.no_docs:
        from report import render

        path = ROOT / "docs" / "performance.md"
        path.write_text(render(data))
        print(f"wrote {path.relative_to(ROOT)}")
    print(f"total {data['elapsed_s']['total']} s")


if __name__ == "__main__":
    main()
