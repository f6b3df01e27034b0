"""Contract tests every :class:`~smoke_core.plugin.Store` must pass.

Subclass in your tests and provide a ``store`` fixture::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path / "db")

        def reopen(self, store):          # another handle on the same sessions
            return MyStore(store.path)

The lease tests run when the store offers leases (``acquire_lease``,
``renew_lease``, ``release_lease``) and the journal tests when it offers the
call journal (``record_call_start``, ``record_call_end``, ``pending_calls``);
a store without them passes those tests by skipping them. Both built-in
stores offer both (see docs/scale.md).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..store.protocol import JournalingStore, LeaseHolder, LeasingStore


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

    # ------------------------------------------------------------ another handle

    def reopen(self, store: Any) -> Any:
        """Another handle on the same sessions (a second connection, as another
        process would have). Override it; the default returns ``store`` itself."""
        return store

    @contextmanager
    def _other(self, store: Any) -> Iterator[Any]:
        other = self.reopen(store)
        try:
            yield other
        finally:
            if other is not store and hasattr(other, "close"):
                other.close()

    def _holder(self) -> LeaseHolder:
        return LeaseHolder(uuid.uuid4().hex, socket.gethostname(), os.getpid())

    # ------------------------------------------------------------ session lease

    def _leasing(self, store: Any) -> bool:
        return isinstance(store, LeasingStore)

    def test_lease_is_held_by_one_run_at_a_time(self, store: Any) -> None:
        if not self._leasing(store):
            return
        a, b = self._holder(), self._holder()
        first = store.acquire_lease("s", a, 30)
        assert first.acquired and first.holder.token == a.token and first.expires_at > first.since
        with self._other(store) as other:
            busy = other.acquire_lease("s", b, 30)
            assert not busy.acquired
            assert busy.holder.token == a.token and busy.holder.pid == a.pid
            assert abs(busy.since - first.since) < 5
            assert other.renew_lease("s", b, 30) is False
            other.release_lease("s", b)  # not b's: nothing happens
            assert not other.acquire_lease("s", b, 30).acquired
            assert store.renew_lease("s", a, 30) is True
            again = store.acquire_lease("s", a, 30)  # the holder may take it again
            assert again.acquired
            store.release_lease("s", a)
            assert other.acquire_lease("s", b, 30).acquired
            assert not store.acquire_lease("s", a, 30).acquired

    def test_leases_are_per_session(self, store: Any) -> None:
        if not self._leasing(store):
            return
        a, b = self._holder(), self._holder()
        assert store.acquire_lease("one", a, 30).acquired
        assert store.acquire_lease("two", b, 30).acquired

    def test_an_expired_lease_is_free(self, store: Any) -> None:
        if not self._leasing(store):
            return
        a, b = self._holder(), self._holder()
        assert store.acquire_lease("s", a, 0).acquired  # expires at once
        with self._other(store) as other:
            taken = other.acquire_lease("s", b, 30)
            assert taken.acquired and taken.holder.token == b.token
            assert store.renew_lease("s", a, 30) is False  # a lost it

    def test_the_lease_of_an_ended_local_process_is_free_at_once(self, store: Any) -> None:
        if not self._leasing(store):
            return
        proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
        gone = LeaseHolder(uuid.uuid4().hex, socket.gethostname(), int(proc.stdout))
        assert gone.is_gone()
        assert store.acquire_lease("s", gone, 3600).acquired
        b = self._holder()
        with self._other(store) as other:
            assert other.acquire_lease("s", b, 30).acquired
        # a process of another host is never judged from here: its lease holds until it expires
        elsewhere = LeaseHolder(uuid.uuid4().hex, "another-host.invalid", int(proc.stdout))
        assert store.acquire_lease("t", elsewhere, 3600).acquired
        assert not store.acquire_lease("t", b, 30).acquired

    # ------------------------------------------------------------ call journal

    def _journaling(self, store: Any) -> bool:
        return isinstance(store, JournalingStore)

    def test_journal_keeps_started_and_ended_calls_until_answered(self, store: Any) -> None:
        if not self._journaling(store):
            return
        assert store.pending_calls("s") == {}
        store.append("s", self._msg("user", "go"))
        store.append("s", {"role": "assistant", "content": [
            {"type": "tool_call", "id": "c1", "name": "write_file", "input": {"path": "a"}},
            {"type": "tool_call", "id": "c2", "name": "run_command", "input": {"command": "x"}},
        ]})
        store.record_call_start("s", "c1", "write_file")
        store.record_call_start("s", "c2", "run_command")
        result = {"content": [{"type": "text", "text": "wrote a ✓"}], "is_error": False}
        store.record_call_end("s", "c1", result)
        with self._other(store) as other:  # committed: another process sees it
            pending = other.pending_calls("s")
        assert set(pending) == {"c1", "c2"}
        assert pending["c1"].tool_name == "write_file" and pending["c1"].ended_at is not None
        assert pending["c1"].result == result
        assert pending["c2"].tool_name == "run_command" and pending["c2"].ended_at is None
        assert pending["c2"].result is None and pending["c2"].started_at > 0
        assert store.pending_calls("other-session") == {}
        store.append("s", {"role": "tool", "content": [
            {"type": "tool_result", "tool_call_id": "c1", "content": result["content"], "is_error": False},
        ]})
        assert set(store.pending_calls("s")) == {"c2"}  # c1 is answered in the transcript now
        store.delete_session("s")
        assert store.pending_calls("s") == {}
