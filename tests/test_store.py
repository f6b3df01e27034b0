from __future__ import annotations

import pytest

from smoke_core import MemoryStore
from smoke_core.sqlite_store import SQLiteStore
from smoke_core.testing import StoreContract


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

    def test_survives_reopen(self, tmp_path):
        path = tmp_path / "s.db"
        with SQLiteStore(path) as s:
            s.append("a", {"role": "user", "content": [{"type": "text", "text": "kept"}]})
        with SQLiteStore(path) as s:
            assert s.load("a")[0]["content"][0]["text"] == "kept"
            mode = s._conn.execute("PRAGMA journal_mode").fetchone()[0]
            assert mode == "wal"
