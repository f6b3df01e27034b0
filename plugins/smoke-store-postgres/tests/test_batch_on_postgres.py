"""`smoke batch` with its sessions in PostgreSQL, and the server restarted in
the middle of the batch: the runs see run.warning, reconnect and go on, and
nothing committed is lost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from smoke_store_postgres import PostgresStore

from smoke_core.plugin import run_batch
from smoke_core.testing import batch_kit

KIT = "smoke_core.testing.batch_kit"


@pytest.mark.slow
async def test_postgres_restarted_mid_batch(tmp_path: Path, pg_server, pg_url):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "README.md").write_text("hello\n")
    n = 4
    lines = [{"id": f"r{i}", "task": f"write before.txt {i}\nwait restart-{i}\nwrite after.txt {i}\nsay done {i}",
              "workspace": "proj"} for i in range(n)]
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("".join(json.dumps(x) + "\n" for x in lines))
    batch_kit.GATES.clear()
    batch_kit.REACHED.clear()
    reached = [batch_kit.REACHED.setdefault(f"restart-{i}", asyncio.Event()) for i in range(n)]
    gates = [batch_kit.GATES.setdefault(f"restart-{i}", asyncio.Event()) for i in range(n)]
    job = asyncio.ensure_future(run_batch(
        tasks, out=tmp_path / "r.jsonl", provider="batch-script", plugins=[KIT], allow=["write_note"],
        store_url=pg_url, concurrency=n, batch_id="pg",
    ))
    try:
        for event in reached:
            await event.wait()  # every run is between two steps, with its first step committed
        await asyncio.to_thread(pg_server.restart)  # every pooled connection is now dead
    finally:
        for gate in gates:
            gate.set()
    summary = await job
    got = {d["id"]: d for d in (json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines())}
    assert summary.completed == n, got
    hit = 0
    with PostgresStore(pg_url) as store:
        for i in range(n):
            r = got[f"r{i}"]
            assert r["status"] == "completed" and r["text"] == f"done {i}"
            assert f"+{i}" in r["diff"] and "after.txt" in r["diff"] and "before.txt" in r["diff"]
            codes = {w["code"] for w in r["warnings"]}
            hit += "transport_disconnected" in codes
            roles = [m["role"] for m in store.load(r["session_id"])]
            # user, (assistant, tool) per write, the final answer: nothing committed was lost
            assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"], roles
    assert hit >= 1  # the runs that met a dead connection said so (run.warning), then went on
