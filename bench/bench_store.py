"""Benchmark 9 — session stores.

The same operations on ``SQLiteStore`` (a file, WAL) and ``PostgresStore``
(smoke-store-postgres; a PostgreSQL server started for the benchmark from the
Debian packages, on 127.0.0.1, ``fsync=on``): latency of ``append`` (1,000
appends of a typical assistant message with a tool call to one session,
through the plain, waiting method a run uses; p50 and p99), and the time to
``load`` a session of 10,000 messages (median of 5). PostgreSQL is skipped
when it is not installed.

    python bench/bench_store.py [--appends 1000] [--messages 10000]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, median, parser, percentile


def message(i: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "text", "text": f"Step {i}: reading the file to find where median() is defined. " * 3},
        {"type": "tool_call", "id": f"call_{i}", "name": "read_file", "input": {"path": f"src/mod{i % 20}.py"}},
    ]}


def measure(store: Any, appends: int, messages: int) -> dict[str, Any]:
    for i in range(20):  # warm-up (connections, statements)
        store.append("warm", message(i))
    lat = []
    for i in range(appends):
        t0 = time.perf_counter()
        store.append("appends", message(i))
        lat.append((time.perf_counter() - t0) * 1000)
    for i in range(messages):
        store.append("big", message(i))
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        got = store.load("big")
        loads.append((time.perf_counter() - t0) * 1000)
    assert len(got) == messages
    return {"append_p50_ms": round(median(lat), 3), "append_p99_ms": round(percentile(lat, 99), 3),
            "load_10k_ms": round(median(loads), 1), "appends": appends, "messages": messages}


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--appends", type=int, default=1000)
    ap.add_argument("--messages", type=int, default=10000)
    args = ap.parse_args()
    from smoke_core.plugin import SQLiteStore

    stores: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, SQLiteStore(Path(tmp) / "s.db") as sqlite:
        stores["sqlite"] = measure(sqlite, args.appends, args.messages)
    try:
        from smoke_store_postgres import PostgresStore
        from smoke_store_postgres.testing import PostgresServer, postgres_available
    except ImportError:
        stores["postgres"] = {"error": "smoke-store-postgres is not installed"}
    else:
        why = postgres_available()
        if why:
            stores["postgres"] = {"error": why}
        else:
            server = PostgresServer(fsync=True)
            server.start()
            try:
                with PostgresStore(server.create_database()) as pg:
                    stores["postgres"] = measure(pg, args.appends, args.messages)
            finally:
                server.stop()
    finish(args, {"name": "store", "stores": stores}, table)


def table(r: dict[str, Any]) -> str:
    rows = []
    for name, d in r["stores"].items():
        if "error" in d:
            rows.append([name, "", "", "", d["error"]])
        else:
            rows.append([name, d["append_p50_ms"], d["append_p99_ms"], d["load_10k_ms"], ""])
    return "Session stores\n" + fmt_table(["store", "append p50 ms", "append p99 ms", "load 10,000 messages ms",
                                           "note"], rows)


if __name__ == "__main__":
    main()
