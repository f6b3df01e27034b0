"""``smoke batch`` on the local engine: the tasks file, results, resumption,
workspace copies (git worktree, copy, in place), setup, permissions, typed
output, the results-file lock and the command line. Real files, real git,
real subprocesses; the model is ``smoke_core.testing.batch_kit``'s scripted one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from smoke_core.batch.main import BatchError, Progress, ResultsFile, run_batch
from smoke_core.plugin import SQLiteStore
from smoke_core.testing import batch_kit

KIT = "smoke_core.testing.batch_kit"


def write_tasks(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(line) for line in path.read_text().splitlines())}


def project(root: Path, name: str = "proj") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("hello\n")
    return folder


async def batch(tasks: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("provider", "batch-script")
    kwargs.setdefault("plugins", [KIT])
    kwargs.setdefault("allow", ["write_note", "append_line"])
    return await run_batch(tasks, **kwargs)


@pytest.fixture(autouse=True)
def _fresh_gates():
    batch_kit.GATES.clear()
    batch_kit.REACHED.clear()
    yield
    for gate in batch_kit.GATES.values():
        gate.set()


async def test_every_line_gets_a_result_and_a_malformed_line_says_why(tmp_path):
    ws = project(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "one", "task": "write a.txt first\nsay wrote a", "workspace": "proj"},
        "{not json",
        {"id": "two", "task": "say hi", "workspce": "proj"},
        {"id": "three", "task": "say hi"},
        {"id": "one", "task": "say again", "workspace": "proj"},
        {"id": "four", "task": "say hi", "workspace": "missing"},
        {"id": "five", "task": "say hi", "workspace": "proj", "max_steps": 0},
        {"id": "six", "task": "say hi", "workspace": "proj", "output_schema": {"type": "nonsense"}},
        {"id": "seven", "task": "say hi", "workspace": "proj", "permissions": {"allow": ["edit_file("]}},
        "# a comment, and a blank line follow",
        "",
        {"id": 8, "task": "say eight", "workspace": str(ws)},
    ])
    summary = await batch(tasks, out=tmp_path / "out.jsonl")
    got = results(tmp_path / "out.jsonl")
    assert summary.completed == 2 and summary.invalid == 8 and summary.failed == 0
    assert got["one"]["status"] == "completed" and got["one"]["text"] == "wrote a"
    assert got["8"]["status"] == "completed" and got["8"]["text"] == "eight"
    why = {k: v["error"]["message"] for k, v in got.items() if v["error"]}
    assert all(got[k]["error"]["code"] == "batch_task_invalid" for k in why)
    assert "line 2 is not valid JSON" in why["line-2"]
    assert "unknown field 'workspce'; did you mean 'workspace'?" in why["two"]
    assert "'workspace' is missing" in why["three"]
    assert "the id 'one' is used already (line 1)" in why["line-5"]
    assert "is not a folder" in why["four"]
    assert "max_steps must be a positive whole number" in why["five"]
    assert "output_schema is not a usable JSON Schema" in why["six"]
    assert "cannot parse permission rule 'edit_file('" in why["seven"]
    assert (ws / "a.txt").exists() is False  # the task ran in a copy


async def test_results_hold_the_diff_usage_session_and_the_source_is_untouched(tmp_path):
    ws = project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "w", "task": "write notes/new.txt brand new\nwrite README.md changed\nsay ok", "workspace": "proj"},
    ])
    summary = await batch(tasks, out=tmp_path / "r.jsonl")
    r = results(tmp_path / "r.jsonl")["w"]
    assert r["status"] == "completed" and r["steps"] == 3 and r["usage"]["total_tokens"] > 0
    assert r["session_id"] == f"batch-{summary.batch_id}-w" and r["resumed"] is False
    assert "+++ b/notes/new.txt" in r["diff"] and "+brand new" in r["diff"]
    assert "-hello" in r["diff"] and "+changed" in r["diff"]
    assert ".smoke" not in r["diff"]
    assert (ws / "README.md").read_text() == "hello\n" and not (ws / "notes").exists()
    copy = summary.work_dir / "workspaces"
    assert [p.name[:2] for p in copy.iterdir()] == ["w-"]
    store = SQLiteStore(summary.work_dir / "sessions.db")
    assert [m["role"] for m in store.load(r["session_id"])][:2] == ["user", "assistant"]
    store.close()


async def test_a_git_workspace_gets_a_worktree_and_in_place_changes_the_folder(tmp_path):
    repo = tmp_path / "repo"
    sub = repo / "pkg"
    sub.mkdir(parents=True)
    (sub / "mod.py").write_text("x = 1\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    (sub / "mod.py").write_text("x = 2  # not committed\n")
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "g", "task": "read mod.py\nwrite added.txt new file\nsay ok", "workspace": "repo/pkg"},
    ])
    summary = await batch(tasks, out=tmp_path / "r.jsonl")
    r = results(tmp_path / "r.jsonl")["g"]
    assert r["status"] == "completed"
    assert r["diff"].startswith("diff --git a/added.txt b/added.txt") and "+new file" in r["diff"]
    assert any("uncommitted changes" in n for n in r["notes"])
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert str(summary.work_dir / "workspaces") in worktrees
    assert (repo / "pkg" / "mod.py").read_text() == "x = 2  # not committed\n" and not (sub / "added.txt").exists()
    # --in-place: the folder itself, no diff
    tasks2 = write_tasks(tmp_path / "t2.jsonl", [{"id": "p", "task": "write here.txt yes\nsay ok",
                                                  "workspace": "repo/pkg"}])
    await batch(tasks2, out=tmp_path / "r2.jsonl", in_place=True)
    r2 = results(tmp_path / "r2.jsonl")["p"]
    assert r2["status"] == "completed" and r2["diff"] is None and (sub / "here.txt").read_text() == "yes\n"


async def test_setup_runs_first_and_a_failing_setup_fails_only_its_task(tmp_path):
    project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "ok", "task": "read made.txt\nsay done", "workspace": "proj", "setup": "echo from-setup > made.txt"},
        {"id": "bad", "task": "say never", "workspace": "proj", "setup": "echo broken; exit 3"},
    ])
    await batch(tasks, out=tmp_path / "r.jsonl")
    got = results(tmp_path / "r.jsonl")
    assert got["ok"]["status"] == "completed"
    assert "+from-setup" in got["ok"]["diff"]  # the setup's file is part of what changed in the copy
    bad = got["bad"]
    assert bad["status"] == "failed" and bad["error"]["code"] == "batch_setup_failed"
    assert bad["error"]["details"]["exit_code"] == 3 and "broken" in bad["error"]["details"]["output"]


async def test_calls_no_rule_allows_are_denied_and_reported(tmp_path):
    project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "d", "task": "write secret.txt no\nsay tried", "workspace": "proj"},
        {"id": "a", "task": "write ok.txt yes\nsay done", "workspace": "proj",
         "permissions": {"allow": ["write_note(ok.txt)"]}},
    ])
    await batch(tasks, out=tmp_path / "r.jsonl", allow=[])
    got = results(tmp_path / "r.jsonl")
    assert got["d"]["status"] == "completed"
    assert [x["tool"] for x in got["d"]["denied"]] == ["write_note"]
    assert "permission denied" in got["d"]["denied"][0]["reason"]
    assert got["d"]["diff"] == ""
    assert got["a"]["denied"] == [] and "+yes" in got["a"]["diff"]


async def test_output_schema_gives_a_typed_output(tmp_path):
    project(tmp_path)
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
              "required": ["verdict", "score"]}
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "o", "task": 'output {"verdict": "fine", "score": 3}', "workspace": "proj", "output_schema": schema},
        {"id": "x", "task": 'output {"verdict": "fine", "score": "high"}\noutput {"verdict": "f", "score": 1}',
         "workspace": "proj", "output_schema": schema},
    ])
    await batch(tasks, out=tmp_path / "r.jsonl")
    got = results(tmp_path / "r.jsonl")
    assert got["o"]["status"] == "completed" and got["o"]["output"] == {"verdict": "fine", "score": 3}
    assert got["x"]["output"] == {"verdict": "f", "score": 1}  # the invalid one went back to the model


class Recorder(Progress):
    def __init__(self) -> None:
        self.done: list[str] = []
        self.two = asyncio.Event()

    def task_done(self, result: dict[str, Any], summary: Any) -> None:
        self.done.append(result["id"])
        if len(self.done) == 2:
            self.two.set()


async def test_an_interrupted_batch_resumes_unfinished_tasks_from_their_sessions(tmp_path):
    project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": "a", "task": "say a", "workspace": "proj"},
        {"id": "slow", "task": "write first.txt 1\nwait slow\nwrite second.txt 2\nsay finished", "workspace": "proj"},
        {"id": "b", "task": "say b", "workspace": "proj"},
    ])
    out = tmp_path / "r.jsonl"
    progress = Recorder()
    job = asyncio.ensure_future(batch(tasks, out=out, progress=progress))
    reached = batch_kit.REACHED.setdefault("slow", asyncio.Event())
    await progress.two.wait()
    await reached.wait()
    job.cancel()  # what Ctrl-C does
    with pytest.raises(asyncio.CancelledError):
        await job
    assert set(results(out)) == {"a", "b"}  # the interrupted task has no line
    # a second batch on the same --out is free now, and resumes only "slow"
    batch_kit.GATES["slow"] = asyncio.Event()
    batch_kit.GATES["slow"].set()
    again = Recorder()
    summary = await batch(tasks, out=out, progress=again)
    assert again.done == ["slow"] and summary.skipped == 2
    slow = results(out)["slow"]
    assert slow["status"] == "completed" and slow["resumed"] is True and slow["text"] == "finished"
    assert "+1" in slow["diff"] and "+2" in slow["diff"]
    store = SQLiteStore(summary.work_dir / "sessions.db")
    users = [m for m in store.load(slow["session_id"]) if m["role"] == "user"]
    store.close()
    assert len(users) == 2 and "was interrupted before it finished" in users[1]["content"][0]["text"]


async def test_two_batches_on_the_same_out_are_refused(tmp_path):
    project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "say a", "workspace": "proj"}])
    holder = ResultsFile(tmp_path / "r.jsonl")
    try:
        with pytest.raises(BatchError, match=r"another `smoke batch` is writing .*r\.jsonl"):
            await batch(tasks, out=tmp_path / "r.jsonl")
    finally:
        holder.close()
    assert (tmp_path / "r.jsonl").read_text() == ""
    await batch(tasks, out=tmp_path / "r.jsonl")
    assert results(tmp_path / "r.jsonl")["a"]["status"] == "completed"


def test_a_torn_last_line_is_cut_off_when_resuming(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "a", "status": "completed"}\n{"id": "b", "stat')
    f = ResultsFile(out)
    try:
        assert set(f.done) == {"a"} and f.cut == len('{"id": "b", "stat')
        f.write({"id": "c", "status": "failed"})
    finally:
        f.close()
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", "c"]


async def test_batch_errors_are_clear(tmp_path):
    with pytest.raises(BatchError, match="does not exist"):
        await batch(tmp_path / "nope.jsonl")
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "say a", "workspace": "."}])
    with pytest.raises(BatchError, match=r"unknown engine 'nonesuch'; installed engines: local"):
        await batch(tasks, engine="nonesuch")
    with pytest.raises(BatchError, match="cannot parse permission rule"):
        await batch(tasks, allow=["write_note("])
    with pytest.raises(BatchError, match="no installed store handles nope:// URLs"):
        await batch(tasks, out=tmp_path / "x.jsonl", store_url="nope://host/db")
    await batch(tasks, out=tmp_path / "y.jsonl", batch_id="first")
    with pytest.raises(BatchError, match="belongs to batch 'first'"):
        await batch(tasks, out=tmp_path / "y.jsonl", batch_id="second")


def smoke(*args: str, cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", "batch", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, **kw)


@pytest.mark.slow
def test_the_command_line_reports_progress_and_exit_status(tmp_path):
    project(tmp_path)
    write_tasks(tmp_path / "t.jsonl", [
        {"id": "ok", "task": "say fine", "workspace": "proj"},
        {"id": "bad", "task": "say x", "workspace": "nowhere"},
    ])
    proc = smoke("t.jsonl", "--provider", "batch-script", "--plugin", KIT, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "[1/1] ok: completed" in proc.stderr
    assert "1 completed, 0 failed, 1 invalid lines" in proc.stderr
    assert set(results(tmp_path / "t.results.jsonl")) == {"ok", "bad"}
    again = smoke("t.jsonl", "--provider", "batch-script", "--plugin", KIT, cwd=tmp_path)
    assert again.returncode == 1 and "0 task(s) to run (2 already in t.results.jsonl)" in again.stderr
    usage = smoke("t.jsonl", "--ray-address", "auto", cwd=tmp_path)
    assert usage.returncode == 2
    missing = smoke("nope.jsonl", cwd=tmp_path)
    assert missing.returncode == 2 and "smoke batch: the tasks file nope.jsonl does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr + usage.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_batch_and_the_same_command_resumes_it(tmp_path):
    project(tmp_path)
    ledger = tmp_path / "ledger.txt"
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(60)
        port = server.getsockname()[1]
        (tmp_path / "ledger.txt.hang").write_text("")
        write_tasks(tmp_path / "t.jsonl", [
            {"id": "hang", "task": f"append {ledger} A {port}\nsay after", "workspace": "proj"},
        ])
        args = ("t.jsonl", "--provider", "batch-script", "--plugin", KIT, "--allow", "append_line")
        with subprocess.Popen([sys.executable, "-m", "smoke_core.cli", "batch", *args], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            conn, _ = server.accept()  # the tool is in flight
            conn.close()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Run the same command again" in err
    assert not (tmp_path / "t.results.jsonl").read_text()
    again = smoke(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    r = results(tmp_path / "t.results.jsonl")["hang"]
    assert r["status"] == "completed" and r["resumed"] is True
    assert ledger.read_text() == "A\n"  # Ctrl-C cancelled the call: it is answered, not run again


def test_smoke_store_url_chooses_the_cli_store(tmp_path, monkeypatch, capsys):
    from smoke_core.cli.sessions import open_cli_store

    monkeypatch.setenv("SMOKE_STORE_URL", f"sqlite:///{tmp_path / 'shared.db'}")
    store = open_cli_store(tmp_path)
    try:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "shared.db"
    finally:
        store.close()
    monkeypatch.setenv("SMOKE_STORE_URL", "postgresql://me:secret@127.0.0.1:1/db")
    with pytest.raises(SystemExit) as info:
        open_cli_store(tmp_path)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "secret" not in err and "postgresql://me:***@127.0.0.1:1/db" in err


async def test_the_batch_budget_stops_the_batch_and_leaves_the_rest_resumable(tmp_path):
    project(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [
        {"id": f"t{i}", "task": "say ok", "workspace": "proj"} for i in range(5)
    ])
    first = await batch(tasks, out=tmp_path / "r.jsonl", concurrency=1, max_output_tokens=1)
    done = results(tmp_path / "r.jsonl")
    assert len(done) == 1 and first.budget_exceeded and first.budget_exceeded.endswith("of max_output_tokens 1")
    rest = await batch(tasks, out=tmp_path / "r.jsonl", concurrency=1)
    assert rest.budget_exceeded is None and len(results(tmp_path / "r.jsonl")) == 5
    with pytest.raises(BatchError, match=r"--max-cost-usd must be a positive number, got -1"):
        await batch(tasks, out=tmp_path / "r2.jsonl", max_cost_usd=-1)
