"""Benchmark 16 — checkpoints (issue 31): what recording the workspace costs
per turn.

A 5,000-file workspace (50 folders of 100 source-sized files, a git
repository with one commit); a checkpoint is taken in the private object
store (its own ``GIT_DIR`` and index under the state folder). Measured: the
first checkpoint (every file hashed once), a checkpoint per turn after it
(3 files changed each turn), a checkpoint when nothing changed (what a
mutating tool call costs when the turn's checkpoint still stands), and — in
the same run — a plain scripted turn with checkpoints off and the same turn
with them on. Target: ≤ 150 ms per turn after the first.

    python bench/bench_checkpoint.py [--turns 20]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, parser, verdict

TARGET_MS = 150.0
FILES = 5000


def make_workspace(root: Path) -> None:
    body = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(30))  # ~900 bytes
    for d in range(FILES // 100):
        folder = root / f"pkg{d:02d}"
        folder.mkdir()
        for i in range(100):
            (folder / f"mod{i:03d}.py").write_text(f"# {d}/{i}\n{body}")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def measure(turns: int) -> dict[str, Any]:
    from smoke_core import create_agent
    from smoke_core.run.checkpoints import CheckpointStore
    from smoke_core.testing import ScriptedProvider

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        make_workspace(ws)
        store = CheckpointStore(ws, root=Path(tmp) / "state")
        t0 = time.perf_counter()
        store.snapshot("bench", reason="turn", label="first", messages=0)
        first = _ms(t0)
        per_turn, unchanged = [], []
        for turn in range(turns):
            for k in range(3):
                (ws / f"pkg{(turn + k) % 50:02d}" / f"mod{turn % 100:03d}.py").write_text(f"changed {turn} {k}\n")
            t0 = time.perf_counter()
            store.snapshot("bench", reason="turn", label=f"turn {turn}", messages=turn)
            per_turn.append(_ms(t0))
            t0 = time.perf_counter()
            store.snapshot("bench", reason="tool", label="edit_file", messages=turn)
            unchanged.append(_ms(t0))
        store_bytes = sum(p.stat().st_size for p in (Path(tmp) / "state").rglob("*") if p.is_file())

        # the same run: a plain scripted turn (one edit, one answer), checkpoints off and on
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "agent-state")

        def turn_ms(enabled: bool, n: int) -> list[float]:
            from smoke_core import tool

            @tool(kind="edit")
            def touch(path: str) -> str:
                """Write a file."""
                (ws / path).write_text(f"touched {time.time()}\n")
                return "ok"

            out = []
            agent = create_agent(ws, provider=ScriptedProvider(
                [t for _ in range(n) for t in ({"tool_calls": [{"name": "touch", "input": {"path": "pkg00/mod000.py"}}]},
                                               "done")]),
                tools=[touch], autoload_plugins=False, auto_approve=True, session_id=f"s{enabled}",
                checkpoints=enabled, instructions=False)
            for _ in range(n):
                t0 = time.perf_counter()
                asyncio.run(agent.run("touch the file"))
                out.append(_ms(t0))
            return out

        plain = turn_ms(False, turns)
        with_cp = turn_ms(True, turns + 1)[1:]  # after the first (that one hashes every file)
    med = statistics.median(per_turn)
    return {
        "name": "checkpoint", "files": FILES, "turns": turns,
        "first_ms": round(first, 1), "per_turn_ms": round(med, 1), "per_turn_p95_ms": round(
            sorted(per_turn)[int(len(per_turn) * 0.95)], 1),
        "unchanged_ms": round(statistics.median(unchanged), 1),
        "store_mb": round(store_bytes / 1e6, 2),
        "plain_turn_ms": round(statistics.median(plain), 1),
        "turn_with_checkpoints_ms": round(statistics.median(with_cp), 1),
        "target_ms": TARGET_MS, "verdict": verdict(med, TARGET_MS),
    }


def table(r: dict[str, Any]) -> str:
    rows = [["first checkpoint (every file hashed)", r["first_ms"]],
            ["checkpoint per turn after the first (3 files changed), median", r["per_turn_ms"]],
            ["same, p95", r["per_turn_p95_ms"]],
            ["checkpoint when nothing changed (a mutating call's)", r["unchanged_ms"]],
            ["scripted turn (one edit call), checkpoints off", r["plain_turn_ms"]],
            ["same turn, checkpoints on (turn + call)", r["turn_with_checkpoints_ms"]]]
    return (f"checkpoints on a {r['files']:,}-file workspace, {r['turns']} turns; store {r['store_mb']} MB\n"
            + fmt_table(["step", "ms"], rows)
            + f"\nper turn {r['per_turn_ms']} ms ≤ {r['target_ms']:g} ms: {r['verdict']}")


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=20)
    args = ap.parse_args()
    finish(args, measure(args.turns), table)


if __name__ == "__main__":
    main()
