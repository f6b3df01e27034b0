"""Benchmark 1 — start-up.

Wall time (subprocess + time.perf_counter, median of N runs, one warm-up run
first) of ``smoke --help`` (target 150 ms) and ``smoke tools`` (target
300 ms) with every installed plugin,
against ``python -c pass`` and ``llm --help`` (llm with llm-anthropic and
llm-gemini), plus the import time of the peers' packages; the top offenders of
``python -X importtime`` on the ``smoke --help`` path; and which heavy
third-party modules are in ``sys.modules`` after the plugins are loaded.

    python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import BIN, PY, finish, fmt_table, installed_version, parser, time_command, verdict

TARGET_MS = 150.0
TARGET_TOOLS_MS = 300.0
TARGET_RATIO = 0.1
#: never imported by loading the plugins or by `smoke --help` (pydantic, asyncio and rich
#: cost ~100 ms together: they load when a command that needs them runs)
HEAVY = ("httpx", "httpcore", "httpx_sse", "anyio", "mcp", "starlette", "uvicorn", "tiktoken", "jsonschema",
         "openai", "anthropic", "h11", "sse_starlette", "websockets", "yaml", "pydantic", "asyncio", "rich",
         "tree_sitter", "tree_sitter_bash")

# Loads every entry-point plugin, builds the manager the CLI builds, and
# reports which heavy modules got imported.
_PROBE = r"""
import json, sys
from smoke_core.hooks.manager import create_plugin_manager
pm = create_plugin_manager()
heavy = %r
loaded = sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy})
plugins = [{"name": i.name, "distribution": i.distribution, "error": i.error} for i in pm.infos]
print(json.dumps({"heavy": loaded, "modules": len(sys.modules), "pydantic": "pydantic" in sys.modules,
                  "plugins": plugins}))
"""

# What the `smoke --help` path imports (plugin CLI modules included).
_PROBE_HELP = r"""
import contextlib, io, json, sys
from smoke_core.cli import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(args=["--help"], prog_name="smoke", standalone_mode=False)
    except SystemExit:
        pass
heavy = %r
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy})))
"""

_PROBE_ONE = r"""
import json, sys, importlib
importlib.import_module(%r)
heavy = %r
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy})))
"""


def _script(name: str) -> str | None:
    path = BIN / name
    return str(path) if path.exists() else None


def importtime(argv_tail: list[str], top: int = 12) -> dict[str, Any]:
    """Run ``python -X importtime *argv_tail``; return the top modules by self and by cumulative time."""
    proc = subprocess.run([PY, "-X", "importtime", *argv_tail], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "")})
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        try:
            _, rest = line.split(":", 1)
            self_us, cum_us, name = rest.split("|", 2)
            rows.append((int(self_us), int(cum_us), name.rstrip()[1:]))
        except ValueError:
            continue
    total = sum(r[0] for r in rows)
    tops = [r for r in rows if not r[2].startswith(" ")]  # top-level imports (depth 0)
    by_cum = sorted(tops, key=lambda r: -r[1])[:top]
    by_self = sorted(rows, key=lambda r: -r[0])[:top]
    return {
        "command": " ".join(["python", "-X", "importtime", *argv_tail]),
        "total_ms": round(total / 1000, 1),
        "modules": len(rows),
        "top_cumulative": [{"module": n.strip(), "cumulative_ms": round(c / 1000, 1)} for _, c, n in by_cum],
        "top_self": [{"module": n.strip(), "self_ms": round(s / 1000, 1)} for s, _, n in by_self],
    }


def heavy_check() -> dict[str, Any]:
    proc = subprocess.run([PY, "-c", _PROBE % (HEAVY,)], capture_output=True, text=True, check=False)
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": proc.stderr.strip()[-2000:]}
    per_plugin = {}
    for p in data["plugins"]:
        if p["distribution"] in (None, "smoke-core"):
            continue
        from importlib.metadata import entry_points

        module = next((ep.value for ep in entry_points(group="smoke") if ep.name == p["name"]), None)
        if module is None:
            continue
        one = subprocess.run([PY, "-c", _PROBE_ONE % (module, HEAVY)], capture_output=True, text=True, check=False)
        try:
            per_plugin[p["distribution"]] = json.loads(one.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            per_plugin[p["distribution"]] = ["import failed: " + one.stderr.strip()[-300:]]
    data["per_plugin"] = per_plugin
    helped = subprocess.run([PY, "-c", _PROBE_HELP % (HEAVY,)], capture_output=True, text=True, check=False)
    try:
        data["smoke_help_path"] = json.loads(helped.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        data["smoke_help_path"] = ["probe failed: " + helped.stderr.strip()[-300:]]
    data["ok"] = not data["heavy"] and not any(per_plugin.values()) and not data["smoke_help_path"]
    return data


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--peer-runs", type=int, default=5)
    args = ap.parse_args()
    # start-up as installed: with bytecode caches (PYTHONDONTWRITEBYTECODE would measure compiling instead)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    n, pn = args.runs, args.peer_runs
    smoke = _script("smoke")
    llm = _script("llm")
    cmds: dict[str, Any] = {}
    cmds["python -c pass"] = time_command([PY, "-c", "pass"], n)
    if smoke:
        cmds["smoke --help"] = time_command([smoke, "--help"], n)
        cmds["smoke tools"] = time_command([smoke, "tools"], n)
        cmds["smoke --version"] = time_command([smoke, "--version"], n)
    cmds["import smoke_core"] = time_command([PY, "-c", "import smoke_core"], n)
    if llm:
        cmds["llm --help"] = time_command([llm, "--help"], pn)
    for label, module, dist in (("import pydantic_ai", "pydantic_ai", "pydantic-ai-slim"),
                                ("import agents", "agents", "openai-agents"),
                                ("import llm", "llm", "llm")):
        if installed_version(dist):
            cmds[label] = time_command([PY, "-c", f"import {module}"], pn)
    help_ms = cmds.get("smoke --help", {}).get("median_ms")
    llm_ms = cmds.get("llm --help", {}).get("median_ms")
    ratio = round(help_ms / llm_ms, 4) if help_ms and llm_ms else None
    result = {
        "name": "startup",
        "commands": cmds,
        "smoke_help_ms": help_ms,
        "smoke_tools_ms": cmds.get("smoke tools", {}).get("median_ms"),
        "llm_help_ms": llm_ms,
        "ratio_to_llm": ratio,
        "targets": {"smoke_help_ms": TARGET_MS, "smoke_tools_ms": TARGET_TOOLS_MS, "ratio_to_llm": TARGET_RATIO},
        "verdicts": {
            "smoke_help_ms": verdict(help_ms, TARGET_MS),
            "smoke_tools_ms": verdict(cmds.get("smoke tools", {}).get("median_ms"), TARGET_TOOLS_MS),
            "ratio_to_llm": verdict(ratio, TARGET_RATIO),
        },
        "importtime_smoke_tools": importtime(["-m", "smoke_core.cli", "tools"]),
        "importtime_cli_import": importtime(["-c", "import smoke_core.cli"]),
        "importtime_smoke_help": importtime(["-m", "smoke_core.cli", "--help"]),
        "heavy_imports": heavy_check(),
        "versions": {d: installed_version(d) for d in ("llm", "llm-anthropic", "llm-gemini")},
    }
    result["verdicts"]["no_heavy_imports"] = "met" if result["heavy_imports"].get("ok") else "MISSED"
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    rows = [[k, v["median_ms"], v["min_ms"], v["max_ms"], v["runs"], v["exit_code"]] for k, v in r["commands"].items()]
    out = ["Start-up (wall ms)", fmt_table(["command", "median", "min", "max", "runs", "exit"], rows)]
    out.append(f"smoke --help / llm --help = {r['ratio_to_llm']}  (target <= {TARGET_RATIO}); "
               f"smoke tools target <= {TARGET_TOOLS_MS:.0f} ms")
    it = r["importtime_smoke_help"]
    out.append(f"\nimporttime, smoke --help path: {it['total_ms']} ms over {it['modules']} modules; top cumulative:")
    out.append(fmt_table(["module", "ms"], [[x["module"], x["cumulative_ms"]] for x in it["top_cumulative"]]))
    h = r["heavy_imports"]
    out.append(f"\nheavy modules after loading plugins: {h.get('heavy')}; on the smoke --help path: "
               f"{h.get('smoke_help_path')}; per plugin: "
               f"{ {k: v for k, v in (h.get('per_plugin') or {}).items() if v} or 'none'}")
    return "\n".join(out)


if __name__ == "__main__":
    main()
