"""`smoke sessions` (and `--continue`'s view of them) read the store the
settings name — here a real PostgreSQL server — and say which store it is,
whether or not the folder has a SQLite file of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from smoke_store_postgres import PostgresStore

from smoke_core.plugin import SQLiteStore


def smoke(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_smoke_sessions_lists_the_postgres_sessions_under_its_own_title(tmp_path: Path, pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.append("pg-session", {"role": "user", "content": [{"type": "text", "text": "the task kept in postgres"}]})
    store.append("pg-session", {"role": "assistant", "content": [{"type": "text", "text": "answered"}]})
    store.close()
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "SMOKE_STORE_URL": pg_url, "SMOKE_LOAD_PLUGINS": "store_postgres", "COLUMNS": "250",
           "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    proc = smoke("sessions", cwd=ws, env=env)  # no .smoke/sessions.db here
    assert proc.returncode == 0, proc.stderr
    assert "Sessions in PostgreSQL postgresql://" in proc.stdout and "pg-session" in proc.stdout
    assert "the task kept in postgres" in proc.stdout and "answered" in proc.stdout
    assert "no sessions yet" not in proc.stdout
    # a local SQLite file with another session does not change which store is read
    local = SQLiteStore(ws / ".smoke" / "sessions.db")
    local.append("sqlite-session", {"role": "user", "content": [{"type": "text", "text": "local only"}]})
    local.close()
    proc = smoke("sessions", cwd=ws, env=env)
    assert "PostgreSQL" in proc.stdout and "pg-session" in proc.stdout and "sqlite-session" not in proc.stdout
    shown = smoke("sessions", "show", "pg-session", cwd=ws, env=env)
    assert shown.stdout.splitlines() == ["[user] the task kept in postgres", "[assistant] answered"]
    # and without the URL, the folder's SQLite file, named as such
    plain = {k: v for k, v in env.items() if k != "SMOKE_STORE_URL"}
    proc = smoke("sessions", cwd=ws, env=plain)
    assert f"SQLite {ws / '.smoke' / 'sessions.db'}" in " ".join(proc.stdout.split()) or "SQLite" in proc.stdout
    assert "sqlite-session" in proc.stdout and "pg-session" not in proc.stdout
