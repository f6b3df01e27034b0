"""Issue 19's "done when", end to end with the real pieces: `smoke batch`
over 50 copies of the demo's sample project fixes every one with the demo's
simulated model on the local engine, and again on a 2-worker Ray cluster
with the sessions in PostgreSQL, the two results files equal apart from
timings; and a Ray worker killed mid-task resumes from its Postgres session
without running the in-flight call again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# one xdist worker takes the whole module (its PostgreSQL server and Ray cluster start once), the same
# worker as smoke-ray's tests when a run has both: one local Ray cluster at a time on the machine
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]

ray = pytest.importorskip("ray")
pytest.importorskip("smoke_ray")
pytest.importorskip("smoke_tools_filesystem")
pytest.importorskip("smoke_tools_terminal")
pg = pytest.importorskip("smoke_store_postgres.testing")

from smoke_core.demo import DEMO_TASK, copy_sample_project  # noqa: E402
from smoke_core.plugin import run_batch  # noqa: E402

DEMO_RULES = ["edit_file", "run_test", "todo_write", "finish_task"]
COPIES = 50


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    why = pg.postgres_available()
    if why:
        pytest.skip(why)
    server = pg.PostgresServer(tmp_path_factory.mktemp("pg"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    home = tmp_path_factory.mktemp("ray-settings")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"XDG_CONFIG_HOME": str(home / "config"),
                                       "XDG_STATE_HOME": str(home / "state"),
                                       "SMOKE_MANAGED_SETTINGS": str(home / "none.yaml")}})
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def _plugins_loaded(monkeypatch):
    monkeypatch.delenv("SMOKE_LOAD_PLUGINS", raising=False)  # the tasks use the installed tool plugins


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(x) for x in path.read_text().splitlines())}


def passes(folder: Path) -> bool:
    return subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=folder,
                          capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}).returncode == 0


async def test_fifty_demo_projects_fixed_locally_and_on_ray_with_postgres_alike(tmp_path, cluster, postgres):
    lines = []
    for i in range(COPIES):
        copy_sample_project(tmp_path / "copies" / f"{i:02d}")
        lines.append({"id": f"fix-{i:02d}", "task": DEMO_TASK, "workspace": f"copies/{i:02d}"})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert not passes(tmp_path / "copies" / "00")
    common = {"provider": "demo", "allow": DEMO_RULES, "batch_id": "fix50"}
    local = await run_batch(tasks, out=tmp_path / "local.jsonl", concurrency=8, **common)
    on_ray = await run_batch(tasks, out=tmp_path / "ray.jsonl", engine="ray", concurrency=4,
                             store_url=postgres.create_database(), **common)
    assert local.completed == on_ray.completed == COPIES
    a, b = results(tmp_path / "local.jsonl"), results(tmp_path / "ray.jsonl")
    for run in (local, on_ray):
        for i in range(COPIES):
            assert passes(run.work_dir / "workspaces" / next(
                p.name for p in (run.work_dir / "workspaces").iterdir() if p.name.startswith(f"fix-{i:02d}-")))
    for key in a:
        assert a[key]["status"] == "completed" and "+    values = sorted(values)" in a[key]["diff"]
        assert a[key]["duration_s"] > 0 and b[key]["duration_s"] > 0
        a[key].pop("duration_s")
        b[key].pop("duration_s")
    assert a == b  # equal apart from timings
    assert not passes(tmp_path / "copies" / "00")  # the sources were not touched


async def test_a_ray_worker_killed_mid_task_resumes_from_its_postgres_session(tmp_path, cluster, postgres):
    from smoke_store_postgres import PostgresStore

    (tmp_path / "proj").mkdir()
    ledger = tmp_path / "ledger.txt"
    Path(f"{ledger}.hang").write_text("")
    url = postgres.create_database()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(120)
        port = server.getsockname()[1]
        tasks = tmp_path / "t.jsonl"
        tasks.write_text(json.dumps({"id": "k", "task": f"append {ledger} A {port} && append {ledger} B\nsay ok",
                                     "workspace": "proj"}) + "\n")
        job = asyncio.ensure_future(run_batch(
            tasks, out=tmp_path / "r.jsonl", engine="ray", provider="batch-script",
            plugins=["smoke_core.testing.batch_kit"], allow=["append_line"], store_url=url,
        ))
        conn, _ = await asyncio.to_thread(server.accept)
        pid = int((await asyncio.to_thread(conn.recv, 64)).decode())
        os.kill(pid, signal.SIGKILL)
        conn.settimeout(60)
        assert await asyncio.to_thread(conn.recv, 64) == b""  # the worker is gone
        conn.close()
        summary = await job
    r = results(tmp_path / "r.jsonl")["k"]
    assert summary.completed == 1 and r["resumed"] is True and r["status"] == "completed"
    assert ledger.read_text() == "A\nB\n"
    with PostgresStore(url) as store:
        assert store.pending_calls(r["session_id"])["t1c1"].ended_at is None  # A: started, outcome unknown
        assert [m["role"] for m in store.load(r["session_id"])] == [
            "user", "assistant", "user", "assistant", "tool", "assistant"]
