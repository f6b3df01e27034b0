"""Benchmark — start-up before and after the core moved into sub-packages (issue 27).

Wall time of ``smoke --help`` and ``smoke tools`` (every first-party plugin
installed) under two virtual environments in the same session, alternating
round by round so that machine noise falls on both: ``--after-python`` (this
checkout's layout; default: the running interpreter) and ``--before-python``
(a venv holding the commit before the move, e.g. ``pip install`` of a
checkout at 70f02d9 and its plugins). Wall time is noisy at the 1 % level
here, so where valgrind is installed each command's instructions are also
counted once (callgrind, ``PYTHONHASHSEED=0``: the same count on every run).
Target: after ≤ before for ``smoke --help`` (instructions where counted,
else the ratio of wall-time medians).

    python bench/bench_layout.py --before-python /path/to/before/bin/python [--rounds 7 --runs 10]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, median, parser, time_command, verdict

COMMANDS = {"smoke --help": ["--help"], "smoke tools": ["tools"]}


def instructions(python: str, argv: list[str], env: dict[str, str]) -> int | None:
    """Instructions one run of ``smoke ARGV`` executes (valgrind's callgrind), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    smoke = str(Path(python).parent / "smoke")
    proc = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", python, smoke, *argv],
                          capture_output=True, text=True, env={**os.environ, **env, "PYTHONHASHSEED": "0"},
                          timeout=600, check=False)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    return int(found.group(1)) if found and proc.returncode == 0 else None


def table(r: dict[str, Any]) -> str:
    rows = [[name, v.get("before"), v.get("after"), v.get("after_over_before")] for name, v in r["ms"].items()]
    out = fmt_table(["command", "before ms", "after ms", "after / before"], rows)
    if r.get("instructions"):
        rows = [[name, f"{v['before']:,}", f"{v['after']:,}", v["after_over_before"]]
                for name, v in r["instructions"].items()]
        out += "\n\n" + fmt_table(["command", "before instructions", "after instructions", "after / before"], rows)
    return out + f"\nsmoke --help after ≤ before: {r['verdict']}"


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--before-python", required=True, help="python of a venv holding the core before the move")
    ap.add_argument("--after-python", default=sys.executable, help="python of a venv holding this layout")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=10, help="runs of each command per round")
    args = ap.parse_args()
    # a fresh, empty settings folder and no PYTHONPATH: neither venv may see the other's code
    env = {"PYTHONPATH": "", "XDG_CONFIG_HOME": str(Path(os.environ.get("TMPDIR", "/tmp")) / "smoke-bench-layout")}
    samples: dict[str, dict[str, list[float]]] = {c: {"before": [], "after": []} for c in COMMANDS}
    for _ in range(args.rounds):
        for label, python in (("before", args.before_python), ("after", args.after_python)):
            smoke = str(Path(python).parent / "smoke")
            for name, argv in COMMANDS.items():
                timed = time_command([smoke, *argv], args.runs, env=env)
                if timed["exit_code"] == 0:
                    samples[name][label].append(timed["median_ms"])
    result: dict[str, Any] = {"name": "layout", "rounds": args.rounds, "runs": args.runs, "ms": {}}
    for name, by_label in samples.items():
        row = {label: round(median(v), 1) for label, v in by_label.items() if v}
        if "before" in row and "after" in row:
            row["after_over_before"] = round(row["after"] / row["before"], 3)
        result["ms"][name] = row
    counted: dict[str, Any] = {}
    for name, argv in COMMANDS.items():
        row = {label: instructions(python, argv, env) for label, python in
               (("before", args.before_python), ("after", args.after_python))}
        if row["before"] and row["after"]:
            counted[name] = {**row, "after_over_before": round(row["after"] / row["before"], 4)}
    result["instructions"] = counted
    help_ratio = (counted.get("smoke --help") or result["ms"]["smoke --help"]).get("after_over_before")
    result["verdict"] = verdict(help_ratio, 1.0)

    finish(args, result, table)


if __name__ == "__main__":
    main()
