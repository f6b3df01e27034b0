"""Benchmark — the loop before and after the core-internals refactor (issue 14).

Runs ``bench_loop.py`` for Smoke (no hooks, four hook plugins) under two
interpreters in the same session, alternating them round by round so that
machine noise falls on both: this checkout (the refactored core) and a
second virtual environment holding the commit before the refactor
(``--before-python``, e.g. a venv with ``pip install <checkout at b3b5e8f>``).
llm's µs/step is measured in the same run as the floor. Reports the median
over rounds of each figure and the ratios the issue asks for:

- after / before at 200 steps, no hooks (target ≤ 1.10);
- hooks / no hooks, after (target ≤ 1.3);
- after vs llm at 200 steps (target: not above llm).

    python bench/bench_refactor.py --before-python /path/to/before-venv/bin/python [--rounds 5]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import BENCH, finish, fmt_table, median, parser


def _loop(python: str, only: str, reps: int) -> dict[str, float] | None:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    try:
        proc = subprocess.run(
            [python, str(BENCH / "bench_loop.py"), "--only", only, "--reps", str(reps), "--json", str(out), "--quiet"],
            capture_output=True, text=True, timeout=600, check=False,
            # PYTHONPATH (a checkout put first) must not reach the other venv: "before" would import "after"
            env=os.environ if python == sys.executable else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        if proc.returncode != 0 or not out.stat().st_size:
            print(f"{only} under {python} failed: {(proc.stderr or proc.stdout)[-800:]}", file=sys.stderr)
            return None
        return {k: float(v) for k, v in json.loads(out.read_text())["us_per_step"].items()}
    finally:
        out.unlink(missing_ok=True)


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--before-python", required=True, help="python of a venv holding the core before the refactor")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "before-hooks": [], "after": [], "after-hooks": [],
                                               "llm": []}
    for _ in range(args.rounds):
        for label, python in (("before", args.before_python), ("after", sys.executable)):
            for hooks in ("", "-hooks"):
                figures = _loop(python, "smoke" + hooks, args.reps)
                if figures:
                    runs[label + hooks].append(figures)
        figures = _loop(sys.executable, "llm", args.reps)
        if figures:
            runs["llm"].append(figures)
    result: dict[str, Any] = {"name": "refactor", "rounds": args.rounds, "us_per_step": {}}
    for label, rows in runs.items():
        if rows:
            result["us_per_step"][label] = {s: round(median([r[s] for r in rows]), 1) for s in rows[0]}
    us = result["us_per_step"]
    if "before" in us and "after" in us:
        result["after_over_before_200"] = round(us["after"]["200"] / us["before"]["200"], 3)
    if "after" in us and "after-hooks" in us:
        result["hooks_over_plain_200"] = round(us["after-hooks"]["200"] / us["after"]["200"], 3)
    if "after" in us and "llm" in us:
        result["after_over_llm_200"] = round(us["after"]["200"] / us["llm"]["200"], 3)

    def table(r: dict[str, Any]) -> str:
        rows = [[label, *(f"{v[s]:.1f}" for s in ("25", "200", "400"))] for label, v in r["us_per_step"].items()]
        out = fmt_table(["loop", "25 steps", "200 steps", "400 steps"], rows)
        for key in ("after_over_before_200", "hooks_over_plain_200", "after_over_llm_200"):
            if key in r:
                out += f"\n{key}: {r[key]}"
        return out

    finish(args, result, table)


if __name__ == "__main__":
    main()
