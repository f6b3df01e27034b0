"""Benchmark 3 — search.

The ``grep`` tool of smoke-tools-search (its ``execute`` with a real
``ToolContext``: argument checks, the rg run, parsing, formatting)
against raw ``rg`` (``rg --line-number --no-heading PATTERN``, default
settings) on the same queries over the running interpreter's standard library
(``sysconfig.get_paths()["stdlib"]``).

That folder also holds ``site-packages`` (~1 GB here, and different on every
machine), so the tree searched is a hard-linked (or copied) mirror of the
stdlib without ``site-packages`` and ``__pycache__``, built once in a
temporary folder; both sides search exactly that tree. A third row runs rg
with the tool's own flags (plain ``--null`` output, ``--sort path`` and its skip globs) to
show how much of the gap is rg's sorted, single-threaded mode.

    python bench/bench_search.py [--runs 7]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, installed_version, median, parser, verdict

TARGET_RATIO = 1.3
QUERIES = [
    {"pattern": "def __init__", "label": "def __init__ (many matches)"},
    {"pattern": r"class \w+Error\(", "label": r"class \w+Error\( (regex)"},
    {"pattern": "ThreadPoolExecutor", "label": "ThreadPoolExecutor (few files)"},
]


def mirror_stdlib(dest: Path) -> dict[str, Any]:
    src = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "dist-packages", "__pycache__"}
    files = 0
    size = 0
    linked = True
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in skip]
        rel = Path(dirpath).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            s = Path(dirpath) / name
            d = dest / rel / name
            if s.is_symlink() or not s.is_file():
                continue
            try:
                if linked:
                    os.link(s, d)
                else:
                    shutil.copy2(s, d)
            except OSError:
                linked = False
                shutil.copy2(s, d)
            files += 1
            size += s.stat().st_size
    return {"source": str(src), "files": files, "mb": round(size / 2**20, 1), "hardlinked": linked}


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    try:
        from smoke_tools_search import _engines
        from smoke_tools_search._tools import build_tools

        from smoke_core.testing import make_tool_context
    except ImportError as exc:
        finish(args, {"name": "search", "error": f"smoke-tools-search is not installed ({exc})"}, str)
        return
    _engine, rg = _engines.choose_engine()
    if rg is None:
        finish(args, {"name": "search", "error": "rg not found (pip install ripgrep)"}, str)
        return
    grep = next(t for t in build_tools() if t.name == "grep")
    tmp = Path(tempfile.mkdtemp(prefix="smoke-bench-stdlib-"))
    try:
        tree = mirror_stdlib(tmp)
        ctx = make_tool_context(tmp, tool_name="grep")
        tool_flags = _engines._rg_common(tmp, "")
        queries = []
        for q in QUERIES:
            pattern = q["pattern"]
            raw_argv = [rg, "--line-number", "--no-heading", "--regexp", pattern, "."]
            flags_argv = [rg, "--no-heading", "--with-filename", "--line-number", "--null", "--color", "never",
                          "--no-context-separator", *tool_flags, "--case-sensitive", "--regexp", pattern, "."]

            def run_raw(argv: list[str] = raw_argv) -> float:
                t0 = time.perf_counter()
                subprocess.run(argv, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               check=False)
                return time.perf_counter() - t0

            async def run_tool(pattern: str = pattern) -> tuple[float, Any]:
                t0 = time.perf_counter()
                res = await grep.execute({"pattern": pattern}, ctx)
                return time.perf_counter() - t0, res

            # warm the page cache and both paths once, then alternate
            run_raw()
            _, first = asyncio.run(run_tool())
            raw_t, tool_t, flags_t = [], [], []
            for _ in range(args.runs):
                raw_t.append(run_raw())
                tool_t.append(asyncio.run(run_tool())[0])
                flags_t.append(run_raw(flags_argv))
            raw_ms, tool_ms, flags_ms = (median(x) * 1000 for x in (raw_t, tool_t, flags_t))
            data = first.data or {}
            queries.append({
                "pattern": pattern, "label": q["label"], "matches": data.get("matches"), "files": data.get("files"),
                "engine": data.get("engine"),
                "raw_rg_ms": round(raw_ms, 1), "tool_ms": round(tool_ms, 1), "rg_tool_flags_ms": round(flags_ms, 1),
                "ratio": round(tool_ms / raw_ms, 2), "ratio_to_rg_tool_flags": round(tool_ms / flags_ms, 2),
            })
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    worst = max(q["ratio"] for q in queries)
    result = {
        "name": "search",
        "tree": tree,
        "rg": rg,
        "rg_version": subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.splitlines()[0],
        "plugin_version": installed_version("smoke-tools-search"),
        "runs": args.runs,
        "queries": queries,
        "worst_ratio": worst,
        "median_ratio": round(median([q["ratio"] for q in queries]), 2),
        "targets": {"ratio": TARGET_RATIO},
        "verdicts": {"ratio": verdict(worst, TARGET_RATIO)},
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Search: {r['error']}"
    rows = [[q["label"], q["matches"], q["raw_rg_ms"], q["rg_tool_flags_ms"], q["tool_ms"], q["ratio"]]
            for q in r["queries"]]
    head = (f"Search over {r['tree']['files']} stdlib files ({r['tree']['mb']} MB), median of {r['runs']} "
            f"(ms; ratio = grep tool / raw rg, target <= {TARGET_RATIO})")
    return head + "\n" + fmt_table(["query", "matches", "raw rg", "rg w/ tool flags", "grep tool", "ratio"], rows)


if __name__ == "__main__":
    main()
