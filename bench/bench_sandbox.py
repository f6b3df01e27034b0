"""Benchmark 7 — the command sandbox.

What bubblewrap adds to a command, side by side with the same command
unsandboxed, in the same run and alternating:

- ``true`` through the ``run_command`` tool (a real ToolContext: policy,
  environment, process tracking, output handling) — the figure a person
  feels; target: at most 15 ms added (median);
- ``true`` started directly (``sandbox.prepare`` + ``subprocess.run``) — the
  cost of bwrap alone;
- ``run_test`` on the demo sample project (``python -m unittest``); target:
  sandboxed at most 1.2 x unsandboxed (median).

Also the one-time probe (``available()``: a real ``bwrap ... true``).

    python bench/bench_sandbox.py [--runs 60] [--test-runs 30]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, installed_version, median, parser, verdict

TARGET_ADDED_MS = 15.0
TARGET_TEST_RATIO = 1.2


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=60, help="runs of `true` per mode")
    ap.add_argument("--test-runs", type=int, default=30, help="runs of the demo tests per mode")
    args = ap.parse_args()
    try:
        from smoke_tools_terminal._tools import run_command, run_test

        from smoke_core import sandbox
        from smoke_core.demo import copy_sample_project
        from smoke_core.testing import make_tool_context
    except ImportError as exc:
        finish(args, {"name": "sandbox", "error": f"smoke-tools-terminal is not installed ({exc})"}, str)
        return
    t0 = time.perf_counter()
    st = sandbox.status()
    probe_ms = (time.perf_counter() - t0) * 1000
    if not st.works:
        finish(args, {"name": "sandbox", "error": f"no sandbox on this machine: {st.reason()}"}, table)
        return
    tmp = Path(tempfile.mkdtemp(prefix="smoke-bench-sandbox-"))
    try:
        ws = tmp / "ws"
        ws.mkdir()
        project = copy_sample_project(tmp / "project")
        modes = ("off", "required")

        # 1. `true` started directly
        def direct(mode: str) -> float:
            policy = sandbox.SandboxPolicy.from_settings({"mode": mode}, ws)
            t = time.perf_counter()
            launch = sandbox.prepare(["true"], policy)
            subprocess.run(launch.argv, env=launch.env, cwd=ws, stdin=subprocess.DEVNULL, check=True)
            return (time.perf_counter() - t) * 1000

        # 2. / 3. through the tools
        async def tool(mode: str, i: int, fn: Any, command: str, where: Path) -> float:
            ctx = make_tool_context(where, tool_name=fn.__name__, tool_call_id=f"b{i}",
                                    options={"sandbox": {"mode": mode}})
            t = time.perf_counter()
            result = await fn({"command": command}, ctx)
            ms = (time.perf_counter() - t) * 1000
            assert result.data["sandboxed"] is (mode == "required"), result.data
            return ms

        test_cmd = f"{sys.executable} -m unittest discover -s tests"

        async def measure() -> dict[str, dict[str, list[float]]]:
            out: dict[str, dict[str, list[float]]] = {k: {m: [] for m in modes} for k in ("direct", "tool", "test")}
            for mode in modes:  # warm-up: page cache, imports, the probe
                direct(mode)
                await tool(mode, -1, run_command, "true", ws)
                await tool(mode, -1, run_test, test_cmd, project)
            for i in range(args.runs):
                for mode in (modes if i % 2 == 0 else modes[::-1]):
                    out["direct"][mode].append(direct(mode))
                    out["tool"][mode].append(await tool(mode, i, run_command, "true", ws))
            for i in range(args.test_runs):
                for mode in (modes if i % 2 == 0 else modes[::-1]):
                    out["test"][mode].append(await tool(mode, i, run_test, test_cmd, project))
            return out

        times = asyncio.run(measure())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def stats(values: list[float]) -> dict[str, float]:
        return {"median_ms": round(median(values), 2), "min_ms": round(min(values), 2),
                "max_ms": round(max(values), 2)}

    rows = {k: {m: stats(v) for m, v in per.items()} for k, per in times.items()}
    added_tool = round(rows["tool"]["required"]["median_ms"] - rows["tool"]["off"]["median_ms"], 2)
    added_direct = round(rows["direct"]["required"]["median_ms"] - rows["direct"]["off"]["median_ms"], 2)
    ratio = round(rows["test"]["required"]["median_ms"] / rows["test"]["off"]["median_ms"], 3)
    result = {
        "name": "sandbox",
        "bwrap": st.bwrap,
        "bwrap_version": st.version,
        "disable_userns": st.disable_userns,
        "running_as_root": os.geteuid() == 0,
        "plugin_version": installed_version("smoke-tools-terminal"),
        "runs": args.runs,
        "test_runs": args.test_runs,
        "probe_ms": round(probe_ms, 1),
        "rows": rows,
        "added_ms_tool": added_tool,
        "added_ms_direct": added_direct,
        "run_test_ratio": ratio,
        "targets": {"added_ms_tool": TARGET_ADDED_MS, "run_test_ratio": TARGET_TEST_RATIO},
        "verdicts": {"added_ms_tool": verdict(added_tool, TARGET_ADDED_MS),
                     "run_test_ratio": verdict(ratio, TARGET_TEST_RATIO)},
    }
    finish(args, result, table)


LABELS = {
    "tool": "`true` via run_command",
    "direct": "`true` started directly (prepare + subprocess.run)",
    "test": "run_test: demo project (python -m unittest)",
}


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Sandbox: {r['error']}"
    rows = []
    for key, label in LABELS.items():
        off, on = r["rows"][key]["off"], r["rows"][key]["required"]
        rows.append([label, off["median_ms"], on["median_ms"], round(on["median_ms"] - off["median_ms"], 2),
                     round(on["median_ms"] / off["median_ms"], 2)])
    head = (f"Sandbox ({r['bwrap_version']}): median ms, unsandboxed vs sandboxed, alternating "
            f"({r['runs']} runs of true, {r['test_runs']} test runs); probe {r['probe_ms']} ms once per process")
    return head + "\n" + fmt_table(["command", "unsandboxed", "sandboxed", "added ms", "ratio"], rows)


if __name__ == "__main__":
    main()
