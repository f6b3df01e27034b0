"""Benchmark 13 — the permission check of a command call (issue 28).

``PermissionGate.decide`` for a ``run_command`` call of a 518-character CI
command (20 simple commands with the wrappers looked through) against 10 deny,
5 ask and 30 allow rules: the parse is made once per call and shared by every
rule, and the walk of a command text is cached (agents repeat commands), so the
per-call figure is the decision on the parse plus the per-call checks (where
redirections land, ``env``, control files). Beside it, the same check when
the command is new (the parse made in the call), the parse alone, the raw
tree-sitter parse, and a short command. Target: the per-call check under 100 µs.

    python bench/bench_permission.py [--runs 2000]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, parser, verdict

TARGET_US = 100.0
CMD = (
    "cd sub && export CI=1 && python -m pip install -q -e '.[dev]' && "
    "ruff check src tests --output-format=github && "
    "mypy --strict src/smoke 2>&1 | tee mypy.log | tail -n 20 && "
    "pytest -q -x --maxfail=3 -k \"not slow and not network\" --cov=smoke "
    "--cov-report=term-missing tests/ > pytest.log 2>&1 || "
    "{ echo \"tests failed\"; tail -n 50 pytest.log; exit 1; }; "
    "git -C . status --short | grep -v '^??' | wc -l; "
    "for f in dist/*.whl; do sha256sum \"$f\"; done; "
    "timeout 60 git log --oneline -n 5 | cat; ls -la build/ 2>/dev/null | head"
)
SHORT = "pytest -q tests/test_api.py"
DENY = ["rm *", "sudo *", "curl *", "wget *", "git push --force*", "git reset --hard*", "git clean *",
        "chmod -R *", "dd *", "mkfs*"]
ASK = ["git push*", "npm publish*", "docker *", "kubectl *", "pip install *"]
ALLOW = ["cd *", "export *", "python -m pip install *", "ruff *", "mypy *", "tee *", "tail *", "pytest *", "echo *",
         "exit *", "git status*", "git log*", "git diff*", "grep *", "wc *", "sha256sum *", "cat *", "ls *", "head *",
         "find *", "sort *", "uniq *", "make *", "npm run *", "npm test", "cargo test*", "go test *", "true", "[ *",
         "sed -n *"]


def _us(fn: Any, runs: int) -> dict[str, float]:
    for _ in range(min(200, runs // 10 + 1)):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return {"median_us": round(statistics.median(times) / 1000, 1), "min_us": round(times[0] / 1000, 1),
            "p95_us": round(times[int(len(times) * 0.95)] / 1000, 1)}


def measure(runs: int) -> dict[str, Any]:
    from smoke_core import PermissionGate
    from smoke_core.plugin import PermissionRequest, parse_command
    from smoke_core.policy.commands import grammar, walker
    from smoke_core.policy.rules import parse_rule

    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.realpath(tmp)
        os.mkdir(os.path.join(ws, "sub"))
        rules = ([parse_rule(f"run_command({p})", "deny") for p in DENY]
                 + [parse_rule(f"run_command({p})", "ask") for p in ASK]
                 + [parse_rule(f"run_command({p})", "allow") for p in ALLOW])
        gate = PermissionGate(rules=rules, workspace=ws)
        loop = asyncio.new_event_loop()
        counter = [0]

        def request(command: str) -> PermissionRequest:
            counter[0] += 1
            return PermissionRequest(f"c{counter[0]}", "tool", "run_command", {"command": command}, False,
                                     tool_kind="execute", permission_value=command)

        def check(command: str) -> str:
            coro = gate.decide(request(command))
            try:
                coro.send(None)
            except StopIteration as done:  # decide never waits for a rule-only answer
                gate.pending.clear()
                return str(done.value)
            raise AssertionError("decide awaited")

        def cold(command: str) -> str:
            walker._cache.clear()
            return check(command)

        decision = check(CMD)
        parse = parse_command(CMD, ws)
        raw = grammar.parser()
        src = CMD.encode()
        rows = {
            "check, the command seen before (per call)": _us(lambda: check(CMD), runs),
            "check, a new command (the parse made in the call)": _us(lambda: cold(CMD), max(200, runs // 4)),
            "parse alone (walk + normalise + where writes land)": _us(
                lambda: (walker._cache.clear(), parse_command(CMD, ws)), max(200, runs // 4)),
            "tree-sitter parse only": _us(lambda: raw.parse(src), runs),
            f"check, short command {SHORT!r} (per call)": _us(lambda: check(SHORT), runs),
        }
        loop.close()
    per_call = rows["check, the command seen before (per call)"]["median_us"]
    return {
        "name": "permission",
        "command_chars": len(CMD),
        "simple_commands": len(parse.details),
        "rules": {"deny": len(DENY), "ask": len(ASK), "allow": len(ALLOW)},
        "decision": decision,
        "runs": runs,
        "rows": rows,
        "per_call_us": per_call,
        "target_us": TARGET_US,
        "verdict": verdict(per_call, TARGET_US),
    }


def table(r: dict[str, Any]) -> str:
    rows = [[name, f"{v['median_us']:,}", f"{v['min_us']:,}", f"{v['p95_us']:,}"] for name, v in r["rows"].items()]
    head = (f"run_command permission check: a {r['command_chars']}-character command, {r['simple_commands']} simple "
            f"commands, {r['rules']['deny']} deny / {r['rules']['ask']} ask / {r['rules']['allow']} allow rules "
            f"(decision: {r['decision']}); N={r['runs']}\n")
    return head + fmt_table(["step", "median µs", "min µs", "p95 µs"], rows) + (
        f"\nper-call check {r['per_call_us']} µs ≤ {r['target_us']:g} µs: {r['verdict']}")


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    args = ap.parse_args()
    finish(args, measure(args.runs), table)


if __name__ == "__main__":
    main()
