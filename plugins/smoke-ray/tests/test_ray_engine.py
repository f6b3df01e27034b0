"""`smoke batch --engine ray` on a real local Ray cluster (2 CPUs, started
once for this module): results stream back from the workers, a worker
killed with SIGKILL mid-task is retried and the task resumes from its
session without running the in-flight mutating call again, Ctrl-C cancels
every task. The model is ``smoke_core.testing.batch_kit``'s scripted one."""

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

# one xdist worker takes the whole module (the Ray cluster starts once), the same worker as
# tests/test_scale_e2e.py when a run has both: one local Ray cluster at a time on the machine
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]

ray = pytest.importorskip("ray")

from smoke_core.plugin import BatchError, SQLiteStore, run_batch  # noqa: E402

KIT = "smoke_core.testing.batch_kit"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    home = tmp_path_factory.mktemp("ray-settings")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"XDG_CONFIG_HOME": str(home / "config"),
                                       "XDG_STATE_HOME": str(home / "state"),
                                       "SMOKE_MANAGED_SETTINGS": str(home / "none.yaml")}})
    yield
    ray.shutdown()


def write_tasks(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(x) for x in path.read_text().splitlines())}


async def ray_batch(tasks: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("engine", "ray")
    kwargs.setdefault("provider", "batch-script")
    kwargs.setdefault("plugins", [KIT])
    kwargs.setdefault("allow", ["write_note", "append_line"])
    return await run_batch(tasks, **kwargs)


@pytest.fixture
def proj(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "README.md").write_text("hello\n")
    return folder


@pytest.fixture
def listener():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(120)
        yield server


async def accept(server: socket.socket) -> tuple[socket.socket, int]:
    conn, _ = await asyncio.to_thread(server.accept)
    data = await asyncio.to_thread(conn.recv, 64)
    return conn, int(data.decode().strip())


async def closed(conn: socket.socket) -> bool:
    """Waits until the other end of ``conn`` is gone (its process died)."""
    conn.settimeout(60)
    return await asyncio.to_thread(conn.recv, 64) == b""


async def test_tasks_run_on_ray_workers_and_their_results_stream_back(cluster, tmp_path, proj):
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": f"t{i}", "task": f"write out{i}.txt {i}\nwhoami\nsay $last", "workspace": "proj"} for i in range(4)
    ])
    summary = await ray_batch(tasks, out=tmp_path / "r.jsonl", concurrency=2)
    got = results(tmp_path / "r.jsonl")
    assert summary.completed == 4 and set(got) == {"t0", "t1", "t2", "t3"}
    pids = {int(r["text"].split()[1]) for r in got.values()}
    assert os.getpid() not in pids  # the tools ran in Ray's worker processes
    for i in range(4):
        assert f"+{i}" in got[f"t{i}"]["diff"] and got[f"t{i}"]["status"] == "completed"
    assert not (proj / "out0.txt").exists()


async def test_a_worker_killed_mid_task_is_retried_and_resumes_without_repeating_the_call(
    cluster, tmp_path, proj, listener
):
    ledger = tmp_path / "ledger.txt"
    Path(f"{ledger}.hang").write_text("")
    port = listener.getsockname()[1]
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "k", "task": f"append {ledger} A {port} && append {ledger} B\nsay finished", "workspace": "proj"},
    ])
    job = asyncio.ensure_future(ray_batch(tasks, out=tmp_path / "r.jsonl"))
    conn, pid = await accept(listener)  # call A is in flight on the worker `pid`
    os.kill(pid, signal.SIGKILL)
    assert await closed(conn)
    conn.close()
    summary = await job
    r = results(tmp_path / "r.jsonl")["k"]
    assert summary.completed == 1 and r["status"] == "completed" and r["resumed"] is True, r
    assert r["text"] == "finished"
    assert ledger.read_text() == "A\nB\n"  # A once (in flight when killed: not repeated), B once (it never started)
    store = SQLiteStore(summary.work_dir / "sessions.db")
    messages = store.load(r["session_id"])
    store.close()
    seen = {b["tool_call_id"]: b["content"][0]["text"] for m in messages if m["role"] == "tool" for b in m["content"]}
    assert seen["t1c2-again"] == "appended B"
    assert set(seen) == {"t1c2-again"}  # A and B were answered only in the repaired view, never stored as run


async def test_ctrl_c_cancels_every_task_on_the_cluster(cluster, tmp_path, proj, listener):
    port = listener.getsockname()[1]
    lines = []
    for i in range(2):
        ledger = tmp_path / f"ledger{i}.txt"
        Path(f"{ledger}.hang").write_text("")
        lines.append({"id": f"h{i}", "task": f"append {ledger} A {port}\nsay done", "workspace": "proj"})
    tasks = write_tasks(tmp_path / "t.jsonl", lines)
    job = asyncio.ensure_future(ray_batch(tasks, out=tmp_path / "r.jsonl", concurrency=2))
    first, second = await accept(listener), await accept(listener)  # both tasks are running
    job.cancel()  # what Ctrl-C does
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await closed(first[0]) and await closed(second[0])  # both workers were killed
    first[0].close()
    second[0].close()
    assert (tmp_path / "r.jsonl").read_text() == ""


async def test_engine_options_are_checked(tmp_path, proj):
    from smoke_ray import RayEngine

    with pytest.raises(BatchError, match="--ray-num-cpus must be more than 0"):
        RayEngine(ray_num_cpus=0)
    with pytest.raises(BatchError, match="--ray-runtime-env is not JSON"):
        RayEngine(ray_runtime_env="{nope")
    assert RayEngine(ray_runtime_env='{"env_vars": {"A": "1"}}').runtime_env == {"env_vars": {"A": "1"}}
    help_text = subprocess.run([sys.executable, "-m", "smoke_core.cli", "batch", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    for flag in ("--ray-address", "--ray-num-cpus", "--ray-max-retries", "--ray-runtime-env"):
        assert flag in help_text
    write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "say a", "workspace": "proj"}])
    wrong = subprocess.run([sys.executable, "-m", "smoke_core.cli", "batch", "t.jsonl", "--ray-num-cpus", "2"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "--ray-num-cpus is an option of --engine ray" in wrong.stderr
