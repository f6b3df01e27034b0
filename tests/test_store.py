"""Session stores: the contract, and what a damaged SQLite file does (real files, no mocks)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from smoke_core import MemoryStore, create_agent
from smoke_core.plugin import SQLiteStore
from smoke_core.store.protocol import StoreCorruptError
from smoke_core.store.sqlite import UNREADABLE, decode_rows
from smoke_core.store.sqlite_repair import check_database, salvage_sessions
from smoke_core.testing import ScriptedProvider, StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self):
        return MemoryStore()


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path):
        s = SQLiteStore(tmp_path / "sessions.db")
        yield s
        s.close()

    def reopen(self, store):
        return SQLiteStore(store.path)

    def test_survives_reopen(self, tmp_path):
        path = tmp_path / "s.db"
        with SQLiteStore(path) as s:
            s.append("a", {"role": "user", "content": [{"type": "text", "text": "kept"}]})
        with SQLiteStore(path) as s:
            assert s.load("a")[0]["content"][0]["text"] == "kept"
            mode = s._conn.execute("PRAGMA journal_mode").fetchone()[0]
            assert mode == "wal"


# ---------------------------------------------------------------- damaged files (issue 21, row 8)


def _msg(role, text):
    return {"role": role, "content": [{"type": "text", "text": text}]}


def make_db(path: Path, sessions: int = 40, per_session: int = 20) -> Path:
    """A real sessions file, checkpointed so everything is in the main file."""
    with SQLiteStore(path) as s:
        for i in range(sessions):
            for j in range(per_session):
                s.append(f"s{i:02d}", _msg("user" if j % 2 == 0 else "assistant", f"{i}-{j} " + "x" * 400))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def garbage(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database, just bytes " * 500)
    return path


def truncate(path: Path, share: float) -> Path:
    with open(path, "r+b") as fh:
        fh.truncate(int(path.stat().st_size * share))
    return path


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_file_is_one_clear_error_naming_it(tmp_path, damage):
    db = tmp_path / "ws" / ".smoke" / "sessions.db"
    if damage == "garbage":
        garbage(db)
    else:
        db.parent.mkdir(parents=True)
        truncate(make_db(db), 0.5)
    before = db.read_bytes()
    with pytest.raises(StoreCorruptError) as info:
        SQLiteStore(db)
    message = str(info.value)
    assert str(db) in message and "cannot be read" in message
    assert "Move it aside" in message and f"smoke sessions doctor -w {tmp_path / 'ws'}" in message
    assert not isinstance(info.value, sqlite3.Error)
    assert db.read_bytes() == before  # nothing was touched


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_start_fresh_keeps_the_damaged_file_and_works(tmp_path, damage, caplog):
    db = tmp_path / "sessions.db"
    if damage == "garbage":
        garbage(db)
    else:
        truncate(make_db(db), 0.5)
    before = db.read_bytes()
    with SQLiteStore(db, on_corrupt="start_fresh") as store:
        assert store.moved_aside is not None and store.moved_aside.read_bytes() == before
        assert store.moved_aside.name.startswith("sessions.db.corrupt-")
        assert store.load("new") == []
        store.append("new", _msg("user", "task"))
        assert store.load("new") == [_msg("user", "task")]
        assert len(store.warnings) == 1 and "a fresh one was started" in store.warnings[0]
        assert "salvage_sessions" in store.warnings[0]
    assert "a fresh one was started" in caplog.text
    assert check_database(db).error is None


def test_damage_met_after_opening_is_recovered_and_replayed(tmp_path):
    """The quick probe at open passes; a later read meets a damaged page."""
    db = make_db(tmp_path / "sessions.db")
    with open(db, "r+b") as fh:  # leaf pages of the first sessions' messages
        fh.seek(4096 * 10)
        fh.write(b"\xff" * 4096 * 10)
    with SQLiteStore(db) as strict, pytest.raises(StoreCorruptError, match="malformed"):
        strict.load("s02")
    with SQLiteStore(db, on_corrupt="start_fresh") as store:
        assert store.moved_aside is None
        store.append("new", _msg("user", "task"))
        assert store.load("s02") == []  # met the damage: moved aside, fresh file, retried
        assert store.moved_aside is not None
        assert store.load("new") == [_msg("user", "task")]  # what this store wrote was replayed
        store.append("new", _msg("assistant", "answer"))
        assert [m["role"] for m in store.load("new")] == ["user", "assistant"]


def _raw_row(db: Path, session_id: str, seq: int, role: str, content: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE messages SET role = ?, content = ? WHERE session_id = ? AND seq = ?",
                 (role, content, session_id, seq))
    conn.commit()
    conn.close()


def test_a_bad_row_becomes_a_placeholder_with_a_warning(tmp_path, caplog):
    db = tmp_path / "sessions.db"
    call = {"type": "tool_call", "id": "c1", "name": "grep", "input": {"pattern": "x"}}
    result = {"type": "tool_result", "tool_call_id": "c1", "is_error": False, "content": [{"type": "text", "text": "r"}]}
    with SQLiteStore(db) as s:
        s.append("a", _msg("user", "one"))
        s.append("a", {"role": "assistant", "content": [call]})
        s.append("a", {"role": "tool", "content": [result]})
        s.append("a", _msg("assistant", "done"))
        s.append("b", _msg("user", "two"))
        s.append("b", {"role": "assistant", "content": [call]})
        s.append("b", {"role": "tool", "content": [result]})
    _raw_row(db, "a", 1, "assistant", '{"not": json')  # an assistant turn with a tool call
    _raw_row(db, "b", 2, "tool", "[1, 2")  # the tool results of a readable call
    with SQLiteStore(db) as s:
        a = s.load("a")
        # the tool results that answered the unreadable call are dropped: the history stays valid
        assert a == [_msg("user", "one"), _msg("assistant", UNREADABLE), _msg("assistant", "done")]
        b = s.load("b")
        assert b[2] == {"role": "tool", "content": [
            {"type": "tool_result", "tool_call_id": "c1", "is_error": True, "content": [{"type": "text", "text": UNREADABLE}]}]}
        assert len(s.warnings) == 2
        assert "session 'a'" in s.warnings[0] and "message 1 could not be read" in s.warnings[0]
    assert "could not be read" in caplog.text
    messages, problems = decode_rows([(0, "alien", "[]"), (1, "user", json.dumps([{"type": "text", "text": "ok"}]))])
    assert messages == [_msg("user", "ok")] and problems[0][1] == "unknown role 'alien'"


async def test_a_run_continues_a_session_holding_a_bad_row(tmp_path):
    db = tmp_path / "sessions.db"
    with SQLiteStore(db) as s:
        s.append("ses", _msg("user", "first task"))
        s.append("ses", _msg("assistant", "first answer"))
    _raw_row(db, "ses", 1, "assistant", "garbage{")
    provider = ScriptedProvider(["second answer"])
    with SQLiteStore(db) as store:
        agent = create_agent(tmp_path, provider=provider, store=store, session_id="ses", autoload_plugins=False)
        result = await agent.run("second task")
        assert result.status == "completed", result.error
        sent = provider.requests[0].messages
        assert sent[1] == _msg("assistant", UNREADABLE)
        assert store.warnings and "message 1 could not be read" in store.warnings[0]
        assert [m["role"] for m in store.load("ses")] == ["user", "assistant", "user", "assistant"]


def test_salvage_copies_what_can_be_read(tmp_path):
    source = make_db(tmp_path / "old.db")
    healthy = salvage_sessions(source, tmp_path / "copy.db")
    assert healthy.healthy and (healthy.sessions, healthy.messages) == (40, 800) and not healthy.problems
    damaged = truncate(shutil.copy(source, tmp_path / "damaged.db"), 0.6)
    before = damaged.read_bytes()
    report = salvage_sessions(damaged, tmp_path / "fresh.db")
    assert not report.healthy and report.problems
    assert 5 < report.sessions < 40 and report.messages > 100
    assert damaged.read_bytes() == before  # the damaged file is only read (through a copy)
    with SQLiteStore(tmp_path / "fresh.db") as fresh:
        assert len(fresh.list_sessions()) == report.sessions
        assert fresh.load("s00")[0]["content"][0]["text"].startswith("0-0 ")
    again = salvage_sessions(damaged, tmp_path / "fresh.db")
    assert again.sessions == 0 and len(again.skipped_sessions) == report.sessions  # nothing copied twice
    assert check_database(damaged).error is not None
    nothing = salvage_sessions(garbage(tmp_path / "g.db"), tmp_path / "g-fresh.db")
    assert nothing.sessions == 0 and "not a database" in nothing.problems[0]


# ---------------------------------------------------------------- from the command line


def _provider_plugin(root: Path) -> Path:
    """A provider plugin (a dist-info on PYTHONPATH) answering every call with one text turn."""
    info = root / "smoke_store_scripted-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-store-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\nstore_scripted = smoke_store_scripted\n")
    (root / "smoke_store_scripted.py").write_text(
        "from smoke_core import hookimpl\n\n"
        "@hookimpl\n"
        "def register_providers(register):\n"
        "    def factory(**kw):\n"
        "        from smoke_core.testing import ScriptedProvider\n"
        "        return ScriptedProvider(['all done'])\n"
        "    register('store-scripted', factory, env_var='STORE_SCRIPTED_KEY')\n"
    )
    return root


def _smoke(*args, cwd, home):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(_provider_plugin(home / f"plug{len(list(home.glob('plug*')))}")),
               SMOKE_LOAD_PLUGINS="store_scripted")
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_with_a_damaged_database(tmp_path):
    project = tmp_path / "project"
    home = tmp_path / "home"
    db = project / ".smoke" / "sessions.db"
    make_db(db, sessions=12)
    truncate(db, 0.7)
    damaged = db.read_bytes()

    listed = _smoke("sessions", cwd=project, home=home)
    assert listed.returncode == 2 and "Traceback" not in listed.stderr
    assert f"the session database {db} cannot be read" in listed.stderr
    assert f"smoke sessions doctor -w {project}" in listed.stderr
    cont = _smoke("run", "--provider", "store-scripted", "--json", "--session", "s01", "go on", cwd=project,
                  home=home)
    assert cont.returncode == 2 and "Traceback" not in cont.stderr and "cannot be read" in cont.stderr
    assert db.read_bytes() == damaged

    # a new session still runs: the damaged file is kept beside a fresh one
    new = _smoke("run", "--provider", "store-scripted", "--json", "hello", cwd=project, home=home)
    assert new.returncode == 0, new.stderr + new.stdout[-3000:]
    assert "a fresh one was started" in new.stderr and "Traceback" not in new.stderr
    kept = [p for p in db.parent.iterdir() if p.name.startswith("sessions.db.corrupt-") and not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged
    assert "run.completed" in new.stdout

    doctor = _smoke("sessions", "doctor", "--from", str(kept[0]), cwd=project, home=home)
    assert doctor.returncode == 0, doctor.stderr
    assert "Copied " in doctor.stdout and f"The damaged file is kept at {kept[0]}" in doctor.stdout
    listed = _smoke("sessions", cwd=project, home=home)
    assert listed.returncode == 0 and "s00" in listed.stdout
    assert _smoke("sessions", "doctor", cwd=project, home=home).stdout.startswith(f"{db} is healthy:")


@pytest.mark.slow
def test_cli_doctor_salvages_in_place(tmp_path):
    ws = tmp_path / "ws"
    db = make_db(ws / ".smoke" / "sessions.db", sessions=10)
    truncate(db, 0.6)
    damaged = db.read_bytes()
    out = _smoke("sessions", "doctor", "-w", str(ws), cwd=tmp_path, home=tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{db} is damaged (")
    kept = next(p for p in db.parent.iterdir() if p.name.startswith("sessions.db.corrupt-")
                and not p.name.endswith(("-wal", "-shm")))
    assert kept.read_bytes() == damaged and f"The damaged file is kept at {kept}" in out.stdout
    assert check_database(db).error is None and check_database(db).sessions > 0
