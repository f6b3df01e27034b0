"""Benchmark 8 — batch engines.

200 scripted tasks through ``smoke batch`` (the Python API, ``run_batch``):
each task has 5 steps (4 ``write_note`` calls, then a text answer) on a small
git repository (a worktree per task, a diff at the end), the model awaiting
10 ms per call (``smoke_core.testing.batch_kit``, model ``delay-10ms``).
Engines: ``local`` (one process, ``--concurrency 16``) and ``ray`` (a local
Ray cluster of 2 worker processes, ``ray.init(num_cpus=2)`` started before
the clock; ``--concurrency 2``), sessions in a SQLite file.

Reported: tasks per second (wall time of the whole batch), the median
per-task overhead of the engine — the time from the engine starting a task
(local: taking a slot; Ray: submitting it) to its result line, minus the
5 × 10 ms the model awaits: the workspace worktree, agent creation, the loop,
the diff, scheduling and returning the result (split into the part inside
the task, ``duration_s``, and the part around it) — and peak memory (the
driver's peak RSS; for Ray also the workers' and Ray's own processes' RSS).

    python bench/bench_batch.py [--only local|ray] [--tasks 200]
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, median, parser, percentile, run_child, verdict

STEPS = 5
DELAY_MS = 10
TARGET_LOCAL_TPS = 50.0
TARGET_RAY_OVERHEAD_MS = 150.0
KIT = "smoke_core.testing.batch_kit"


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    for i in range(20):
        (repo / "src" / f"mod{i}.py").write_text(f"VALUE = {i}\n" * 20)
    (repo / "README.md").write_text("a small project\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    return repo


def tasks_file(root: Path, n: int) -> Path:
    path = root / "tasks.jsonl"
    script = "\n".join(f"write notes/n{j}.txt step {j}" for j in range(STEPS - 1)) + "\nsay done"
    path.write_text("".join(json.dumps({"id": f"t{i:03d}", "task": script, "workspace": "repo"}) + "\n"
                            for i in range(n)))
    return path


def ray_rss_mb() -> float:
    """RSS of Ray's processes (workers, raylet, GCS...) on this machine."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            if b"ray::" not in cmd and b"/ray/" not in cmd and b"raylet" not in cmd and b"gcs_server" not in cmd:
                continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class Timing:
    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.latency: list[float] = []
        self.by_id: dict[str, float] = {}

    def start(self, summary: Any, todo: int) -> None:
        pass

    def task_started(self, task_id: str) -> None:
        self.started[task_id] = time.perf_counter()

    def task_done(self, result: dict[str, Any], summary: Any) -> None:
        self.latency.append(time.perf_counter() - self.started[result["id"]])
        self.by_id[result["id"]] = self.latency[-1]

    def finish(self, summary: Any) -> None:
        pass


def measure(engine: str, n: int) -> dict[str, Any]:
    os.environ.setdefault("SMOKE_LOAD_PLUGINS", "")  # the tasks need only the kit's tools
    from smoke_core.plugin import run_batch

    with tempfile.TemporaryDirectory(prefix="smoke-bench-batch-") as tmp:
        root = Path(tmp)
        make_repo(root)
        tasks = tasks_file(root, n)
        ray_peak = 0.0
        extra: dict[str, Any] = {}
        if engine == "ray":
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
            concurrency = 2
        else:
            concurrency = 16
        timing = Timing()
        sampling = True

        async def sampler() -> None:
            nonlocal ray_peak
            while sampling:
                if engine == "ray":
                    ray_peak = max(ray_peak, ray_rss_mb())
                await asyncio.sleep(0.2)

        async def main() -> Any:
            nonlocal sampling
            watch = asyncio.ensure_future(sampler())
            try:
                return await run_batch(tasks, out=root / "out.jsonl", engine=engine, concurrency=concurrency,
                                       provider="batch-script", model=f"delay-{DELAY_MS}ms", plugins=[KIT],
                                       allow=["write_note"], progress=timing)  # type: ignore[arg-type]
            finally:
                sampling = False
                await watch

        t0 = time.perf_counter()
        summary = asyncio.run(main())
        wall = time.perf_counter() - t0
        if engine == "ray":
            import ray

            ray.shutdown()
            extra["ray_processes_peak_rss_mb"] = round(ray_peak, 1)
        lines = [json.loads(x) for x in (root / "out.jsonl").read_text().splitlines()]
        model_s = STEPS * DELAY_MS / 1000
        overhead = [(lat - model_s) * 1000 for lat in timing.latency]
        inner = [(r["duration_s"] - model_s) * 1000 for r in lines]
        # what the engine adds around the task itself: scheduling, shipping the task, returning the result
        around = [(timing.by_id[r["id"]] - r["duration_s"]) * 1000 for r in lines]
        ok = sum(1 for r in lines if r["status"] == "completed" and r["steps"] == STEPS and "+step 3" in r["diff"])
        return {
            "engine": engine, "tasks": n, "concurrency": concurrency, "completed": ok,
            "wall_s": round(wall, 3), "tasks_per_s": round(n / wall, 1),
            "overhead_ms_median": round(median(overhead), 1), "overhead_ms_p90": round(percentile(overhead, 90), 1),
            "in_task_overhead_ms_median": round(median(inner), 1),
            "around_task_ms_median": round(median(around), 1),
            "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            **extra, "failed": summary.failed,
        }


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("local", "ray"))
    ap.add_argument("--tasks", type=int, default=200)
    args = ap.parse_args()
    if args.only:
        finish(args, measure(args.only, args.tasks), str)
        return
    engines = {"local": run_child("bench_batch.py", "--only", "local", "--tasks", str(args.tasks), timeout=600)}
    try:
        import ray  # noqa: F401

        engines["ray"] = run_child("bench_batch.py", "--only", "ray", "--tasks", str(args.tasks), timeout=900)
    except ImportError:
        engines["ray"] = {"error": "ray is not installed (pip install smoke-ray)"}
    lo, ra = engines["local"], engines["ray"]
    result = {
        "name": "batch", "tasks": args.tasks, "steps": STEPS, "model_delay_ms": DELAY_MS, "engines": engines,
        "targets": {"local_tasks_per_s": TARGET_LOCAL_TPS, "ray_overhead_ms": TARGET_RAY_OVERHEAD_MS},
        "verdicts": {
            "local_tasks_per_s": verdict(lo.get("tasks_per_s"), TARGET_LOCAL_TPS, lower_is_better=False)
            if "error" not in lo else None,
            "ray_overhead_ms": verdict(ra.get("overhead_ms_median"), TARGET_RAY_OVERHEAD_MS)
            if "error" not in ra else None,
        },
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    rows = []
    for name, d in r["engines"].items():
        if "error" in d:
            rows.append([name, "", "", "", "", "", "", d["error"]])
            continue
        rows.append([name, d["tasks_per_s"], d["overhead_ms_median"], d["overhead_ms_p90"],
                     d["in_task_overhead_ms_median"], d["around_task_ms_median"], d["driver_peak_rss_mb"],
                     f"{d['completed']}/{d['tasks']}" + (f"; Ray processes {d['ray_processes_peak_rss_mb']} MB"
                                                         if "ray_processes_peak_rss_mb" in d else "")])
    return (f"Batch: {r['tasks']} tasks x {r['steps']} steps, model awaits {r['model_delay_ms']} ms, git worktree "
            f"per task\n" + fmt_table(["engine", "tasks/s", "overhead ms (median)", "p90", "of which in the task",
                                       "around the task", "driver peak RSS MB", "completed"], rows))


if __name__ == "__main__":
    main()
