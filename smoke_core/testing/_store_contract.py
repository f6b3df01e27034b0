"""Contract tests every :class:`~smoke_core.plugin.Store` must pass.

Subclass in your tests and provide a ``store`` fixture::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path / "db")
"""

from __future__ import annotations

from typing import Any


class StoreContract:
    """Not collected by itself (no ``Test`` prefix); subclasses are."""

    def _msg(self, role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": text}]}

    def test_empty_session_loads_empty(self, store: Any) -> None:
        assert store.load("nope") == []

    def test_append_then_load_in_order(self, store: Any) -> None:
        for i in range(5):
            store.append("s1", self._msg("user" if i % 2 == 0 else "assistant", f"m{i}"))
        loaded = store.load("s1")
        assert [m["content"][0]["text"] for m in loaded] == [f"m{i}" for i in range(5)]
        assert [m["role"] for m in loaded] == ["user", "assistant", "user", "assistant", "user"]

    def test_sessions_are_separate(self, store: Any) -> None:
        store.append("a", self._msg("user", "for a"))
        store.append("b", self._msg("user", "for b"))
        assert store.load("a")[0]["content"][0]["text"] == "for a"
        assert len(store.load("b")) == 1

    def test_round_trips_every_block_type(self, store: Any) -> None:
        msg = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "text": "hmm", "signature": "sig"},
                {"type": "text", "text": "héllo ✓"},
                {"type": "tool_call", "id": "c1", "name": "grep", "input": {"pattern": "x", "n": 3}},
            ],
        }
        result = {
            "role": "tool",
            "content": [
                {"type": "tool_result", "tool_call_id": "c1", "is_error": True,
                 "content": [{"type": "text", "text": "boom"}, {"type": "image", "data": "aGk=", "mime_type": "image/png"}]},
            ],
        }
        store.append("s", msg)
        store.append("s", result)
        assert store.load("s") == [msg, result]

    def test_loaded_copy_is_independent(self, store: Any) -> None:
        store.append("s", self._msg("user", "x"))
        loaded = store.load("s")
        loaded[0]["content"][0]["text"] = "changed"
        loaded.append(self._msg("user", "y"))
        assert store.load("s") == [self._msg("user", "x")]

    def test_rename_and_delete_session(self, store: Any) -> None:
        store.append("s1", self._msg("user", "first"))
        store.append("s2", self._msg("user", "second"))
        assert store.rename_session("s1", "renamed") is True
        assert store.rename_session("missing", "x") is False
        titles = {i.session_id: i.title for i in store.list_sessions()}
        assert titles["s1"] == "renamed"
        assert store.delete_session("s1") is True
        assert store.delete_session("s1") is False
        assert store.load("s1") == []
        assert [i.session_id for i in store.list_sessions()] == ["s2"]
        store.append("s1", self._msg("user", "again"))  # a deleted id can start afresh
        assert [m["content"][0]["text"] for m in store.load("s1")] == ["again"]

    def test_list_sessions(self, store: Any) -> None:
        store.append("first", self._msg("user", "hello there"))
        store.append("second", self._msg("user", "second task"))
        store.append("second", self._msg("assistant", "ok"))
        infos = {i.session_id: i for i in store.list_sessions()}
        assert set(infos) == {"first", "second"}
        assert infos["second"].message_count == 2
        assert infos["first"].title == "hello there"
        assert infos["second"].updated_at >= infos["second"].created_at
