"""Checkpoints and rewind: the whole workspace recorded in a private git
object store before each turn and each mutating call — what the file tools
and what the agent's commands changed comes back, the person's own git
(index, branch, stash) is never touched, and a rewind can be undone."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from smoke_core import create_agent
from smoke_core.run.checkpoints import CheckpointError, CheckpointStore
from smoke_core.testing import ScriptedProvider

from .test_cli import clean_env, smoke, write_scripted_provider_plugin


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file (not .git, not .smoke, not big/) with its bytes and mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", ".smoke", "big") or not path.is_file():
            continue
        out[rel] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def git_state(ws: Path) -> dict[str, str]:
    def git(*args: str) -> str:
        # GIT_OPTIONAL_LOCKS=0: `git status` here must not refresh (rewrite) the index it compares
        return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout

    return {"head": git("rev-parse", "HEAD"), "branch": git("branch", "--show-current"),
            "stash": git("stash", "list"), "index": git("ls-files", "-s"),
            "index_bytes": hashlib.sha256((ws / ".git" / "index").read_bytes()).hexdigest(),
            "refs": git("for-each-ref"),
            # Smoke's own .smoke/ (with its .gitignore) shows as a new folder: everything else as it was
            "status": "".join(ln for ln in git("status", "--porcelain").splitlines(True) if ".smoke/" not in ln)}


def make_workspace(tmp_path: Path, kind: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "b.sh").write_text("#!/bin/sh\necho two\n")
    (ws / "b.sh").chmod(0o755)
    (ws / "d.txt").write_text("four\n")
    (ws / ".gitignore").write_text("big/\n")
    big = ws / "big"
    big.mkdir()
    with open(big / "blob.bin", "wb") as f:  # 200 MB, ignored: never copied
        f.truncate(200 * 1024 * 1024)
    if kind == "git":
        def git(*args: str) -> None:
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws, check=True,
                           capture_output=True)

        git("init", "-q", "-b", "main")
        git("add", "a.txt", "b.sh", "d.txt", ".gitignore")
        git("commit", "-qm", "start")
        (ws / "a.txt").write_text("stashed change\n")
        git("stash", "-q")
        (ws / "staged.txt").write_text("staged\n")
        git("add", "staged.txt")
    return ws


def turns() -> list:
    return [
        {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "ONE, rewritten\n"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "b.sh", "old_string": "two", "new_string": "2"}}]},
        {"tool_calls": [{"name": "run_command", "input": {
            "command": "printf 'third file' > c.txt && chmod 700 c.txt && rm d.txt && chmod 644 b.sh"}}]},
        "done",
    ]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["git", "plain"])
def test_rewind_restores_file_tool_and_command_changes_and_can_be_undone(tmp_path, kind):
    for module in ("smoke_tools_filesystem", "smoke_tools_terminal"):
        pytest.importorskip(module)
    ws = make_workspace(tmp_path, kind)
    plug = write_scripted_provider_plugin(tmp_path / "plug")
    env = clean_env(tmp_path, PYTHONPATH=str(plug), SMOKE_LOAD_PLUGINS="cli_scripted,tools_filesystem,tools_terminal",
                    SMOKE_TEST_TURNS=json.dumps(turns()), COLUMNS="200")
    before_files = files_of(ws)
    before_git = git_state(ws) if kind == "git" else None
    proc = smoke("run", "--provider", "cli-scripted", "--yes", "change things", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    after_files = files_of(ws)
    assert after_files["a.txt"][0] == b"ONE, rewritten\n" and "d.txt" not in after_files
    assert after_files["c.txt"][0] == b"third file"

    listing = smoke("rewind", "--json", cwd=ws, env=env)
    assert listing.returncode == 0, listing.stderr
    cps = json.loads(listing.stdout)
    assert cps[0]["reason"] == "turn" and cps[0]["label"] == "change things"
    # before each mutating call that found something changed (write_file came first: nothing yet)
    assert [(c["reason"], c["label"]) for c in cps[1:]] == [("tool", "edit_file"), ("tool", "run_command")]
    diff = smoke("rewind", "1", "--diff", cwd=ws, env=env)
    assert "a.txt" in diff.stdout and "c.txt" in diff.stdout and "d.txt" in diff.stdout

    proc = smoke("rewind", "1", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    restored = files_of(ws)
    # the exec bit comes back; git keeps 0644/0755 modes, so c.txt (created since) is simply gone
    assert restored == before_files
    if kind == "git":
        assert git_state(ws) == before_git  # index, branch, stash, refs untouched
    store_size = sum(p.stat().st_size for p in (tmp_path / "home" / ".state" / "smoke" / "checkpoints").rglob("*")
                     if p.is_file())
    assert store_size < 5 * 1024 * 1024, store_size  # the 200 MB ignored folder was not copied

    proc = smoke("rewind", "--undo", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    undone = files_of(ws)
    assert undone["a.txt"] == after_files["a.txt"] and undone["b.sh"] == after_files["b.sh"]
    assert undone["c.txt"][0] == b"third file" and "d.txt" not in undone
    if kind == "git":
        assert git_state(ws)["index_bytes"] == before_git["index_bytes"]  # type: ignore[index]


def test_snapshot_skips_oversized_files_and_nothing_unchanged(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("x")
    (ws / "large.bin").write_bytes(b"y" * 2000)
    store = CheckpointStore(ws, root=tmp_path / "state", max_file_bytes=1000)
    first = store.snapshot("s", reason="turn", label="t", messages=0)
    assert first is not None
    assert store.snapshot("s", reason="tool", label="x", messages=0) is None  # nothing changed
    (ws / "small.txt").write_text("changed")
    (ws / "large.bin").write_bytes(b"z" * 3000)
    store.restore(first, messages=0)
    assert (ws / "small.txt").read_text() == "x"
    assert (ws / "large.bin").read_bytes() == b"z" * 3000  # never recorded: left as it is


def test_pruned_checkpoints_are_a_clear_message_and_nothing_changes(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = CheckpointStore(ws, root=tmp_path / "state", keep=2)
    made = []
    for i in range(4):
        (ws / "f.txt").write_text(f"v{i}")
        made.append(store.snapshot("s", reason="turn", label=str(i), messages=i))
    assert [c.number for c in store.checkpoints("s")] == [3, 4]
    with pytest.raises(CheckpointError, match="no checkpoint 1"):
        store.find("s", 1)
    with pytest.raises(CheckpointError, match="no longer in the checkpoint store"):
        store.restore(made[0], messages=0)  # its objects were pruned with its ref
    assert (ws / "f.txt").read_text() == "v3"


def test_python_api_checkpoints_and_rewind_with_conversation(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("original")
    from smoke_core import tool

    @tool(kind="edit")
    def write_note(text: str) -> str:
        """Write f.txt."""
        (ws / "f.txt").write_text(text)
        return "written"

    provider = ScriptedProvider([{"tool_calls": [{"name": "write_note", "input": {"text": "changed"}}]}, "ok",
                                 "second"])
    agent = create_agent(ws, provider=provider, tools=[write_note], session_id="api", autoload_plugins=False,
                         auto_approve=True)

    async def go() -> None:
        await agent.run("change it")
        cps = agent.checkpoints()
        assert [c.reason for c in cps] == ["turn"]  # before the tool: nothing had changed yet
        before = agent.rewind(cps[0], conversation=True)
        assert (ws / "f.txt").read_text() == "original"
        assert agent.session_id != "api" and agent.store.load(agent.session_id) == []
        agent.rewind(before)  # undo: the files as the run left them
        assert (ws / "f.txt").read_text() == "changed"
        assert len(agent.store.load("api")) == 4  # the old session is kept whole

    asyncio.run(go())


def test_rewind_while_a_run_is_active_or_held_elsewhere_is_refused(tmp_path):
    from smoke_core.store.protocol import LeaseHolder
    from smoke_core.store.sqlite import SQLiteStore

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("x")
    store = SQLiteStore(tmp_path / "s.db")
    agent = create_agent(ws, provider=ScriptedProvider(["done"], delay=60), store=store, session_id="busy",
                         autoload_plugins=False)

    async def go() -> None:
        started = asyncio.Event()
        agent.on("step.started", lambda e: started.set())
        run = asyncio.ensure_future(agent.run("wait"))
        await started.wait()
        with pytest.raises(CheckpointError, match="a run is active"):
            agent.rewind(1)
        agent.abort()
        assert (await run).status == "interrupted"

    asyncio.run(go())
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert store.acquire_lease("busy", LeaseHolder("other", os.uname().nodename, other.pid), 60).acquired
        with pytest.raises(CheckpointError, match="in use by another run"):
            agent.rewind(1)
    finally:
        other.kill()
        other.wait()
    store.close()


def test_checkpoints_never_leave_the_workspace_through_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not copy")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(outside)
    (ws / ".gitignore").write_text("!../outside\n")
    store = CheckpointStore(ws, root=tmp_path / "state")
    cp = store.snapshot("s", reason="turn", label="t", messages=0)
    assert cp is not None
    listed = store._git("ls-tree", "-r", "--name-only", cp.commit).decode().split()
    assert listed == [".gitignore", "link"]  # the link itself, never what it points to
    blobs = store._git("cat-file", "--batch-all-objects", "--batch-check").decode()
    assert all(b"do not copy" not in store._git("cat-file", "-p", line.split()[0])
               for line in blobs.splitlines() if line.split()[1] == "blob")
