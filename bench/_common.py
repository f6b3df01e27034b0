"""Shared helpers for the benchmark scripts (stdlib only).

Every script in ``bench/`` is runnable alone (``python bench/bench_loop.py``)
and accepts ``--json PATH`` to write its result; ``bench/run_all.py`` runs
them all, one process each, and renders ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
BIN = Path(sys.executable).parent


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return float(ordered[k])


def rss_mb() -> float:
    """Resident set size of this process now, in MB (from /proc/self/status)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_command(argv: list[str], runs: int, *, warmup: int = 1, env: dict[str, str] | None = None,
                 timeout: float = 120) -> dict[str, Any]:
    """Wall time of ``argv`` (stdout/stderr discarded) over ``runs`` runs, in ms."""
    full_env = {**os.environ, **(env or {})}
    times: list[float] = []
    code = None
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=full_env,
                              timeout=timeout, check=False)
        dt = (time.perf_counter() - t0) * 1000
        code = proc.returncode
        if i >= warmup:
            times.append(dt)
    return {
        "argv": argv, "runs": runs, "exit_code": code,
        "median_ms": round(median(times), 2), "min_ms": round(min(times), 2), "max_ms": round(max(times), 2),
    }


def run_child(script: str, *args: str, timeout: float = 600, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python bench/<script> --json tmp *args`` in a fresh process; return its JSON
    (or ``{"error": ...}`` when it failed)."""
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    try:
        proc = subprocess.run(
            [PY, str(BENCH / script), "--json", str(out), "--quiet", *args],
            capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, check=False,
        )
        if proc.returncode != 0 or not out.stat().st_size:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
            return {"error": f"{script} {' '.join(args)} exited {proc.returncode}", "stderr": tail}
        return json.loads(out.read_text())
    except subprocess.TimeoutExpired:
        return {"error": f"{script} {' '.join(args)} timed out after {timeout:.0f} s"}
    finally:
        out.unlink(missing_ok=True)


def installed_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", metavar="PATH", help="write the result as JSON to PATH")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    return p


def finish(args: argparse.Namespace, result: dict[str, Any], table: Callable[[dict[str, Any]], str]) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
    if not args.quiet:
        print(table(result))


def fmt_table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[("" if c is None else str(c)) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def verdict(value: float | None, target: float, *, lower_is_better: bool = True) -> str:
    if value is None or value != value:  # None or NaN
        return "not measured"
    ok = value <= target if lower_is_better else value >= target
    return "met" if ok else "MISSED"
