"""PostgresStore against a real PostgreSQL server started by the tests:
core's StoreContract (messages, leases, call journal), the schema, sessions
shared between processes, and what a server restart does to a run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import uuid
from typing import Any

import pytest
from smoke_store_postgres import PostgresStore
from smoke_store_postgres._schema import VERSION

from smoke_core import create_agent
from smoke_core.plugin import StoreError, ToolAnnotations, ToolDefinition, open_store
from smoke_core.testing import ScriptedProvider, StoreContract


class TestPostgresStore(StoreContract):
    @pytest.fixture
    def store(self, pg_url):
        s = PostgresStore(pg_url)
        yield s
        s.close()

    def reopen(self, store):
        return PostgresStore(store.url)

    def test_text_with_nul_and_control_characters_round_trips(self, store):
        message = {"role": "user", "content": [{"type": "text", "text": "nul \x00 esc \x1b bidi \u202e end"}]}
        store.append("s", message)
        assert store.load("s") == [message]


def msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def test_the_url_opens_the_store_through_the_entry_point(pg_url):
    store = open_store(pg_url, lease_wait=7)
    try:
        assert type(store).__name__ == "PostgresStore" and store.lease_wait == 7
        store.append("s", msg("user", "hi"))
        assert store.list_sessions()[0].title == "hi"
    finally:
        store.close()


def test_the_schema_is_created_once_and_a_newer_one_is_refused(pg_url):
    import psycopg

    first, second = PostgresStore(pg_url), PostgresStore(pg_url)  # the second finds it migrated
    first.close()
    second.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM smoke_schema").fetchall() == [(VERSION,)]
        conn.execute("UPDATE smoke_schema SET version = %s", (VERSION + 1,))
    with pytest.raises(StoreError, match="newer than this smoke-store-postgres understands"):
        PostgresStore(pg_url)


def test_an_unreachable_server_is_a_clear_error_without_the_password():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    with pytest.raises(StoreError) as info:
        PostgresStore(f"postgresql://smoke:hunter2@127.0.0.1:{port}/db", connect_timeout=1)
    text = str(info.value)
    assert "cannot connect to the session store" in text and "hunter2" not in text and ":***@" in text
    assert "refused" in text.lower()


def test_a_retried_append_that_had_committed_is_not_stored_twice(pg_url):
    with PostgresStore(pg_url) as store:
        uid = str(uuid.uuid4())
        tell = store._notify("s")
        store._wait(store._append("s", msg("user", "once"), uid, tell))
        store._wait(store._append("s", msg("user", "once"), uid, tell))  # the retry after a lost reply
        assert store.load("s") == [msg("user", "once")]
        assert store.list_sessions()[0].message_count == 1


async def test_the_async_methods_serve_an_event_loop(pg_url):
    with PostgresStore(pg_url) as store:
        await asyncio.gather(*(store.aappend(f"s{i}", msg("user", f"m{i}")) for i in range(20)))
        loaded = await asyncio.gather(*(store.aload(f"s{i}") for i in range(20)))
        assert [m[0]["content"][0]["text"] for m in loaded] == [f"m{i}" for i in range(20)]
        assert len(await store.alist_sessions()) == 20


CHILD = textwrap.dedent("""
    import sys
    from smoke_core import create_agent
    from smoke_core.plugin import open_store
    from smoke_core.testing import ScriptedProvider

    store = open_store(sys.argv[1])
    agent = create_agent(".", provider=ScriptedProvider(["the first answer"]), store=store, session_id="shared",
                         autoload_plugins=False, setting_sources=())
    print(agent.run_sync("first question").status)
    store.close()
""")


@pytest.mark.slow
def test_a_session_continued_from_another_process_sees_every_committed_step(pg_url):
    proc = subprocess.run([sys.executable, "-c", CHILD, pg_url], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "completed", proc.stderr
    with PostgresStore(pg_url) as store:
        provider = ScriptedProvider(["the second answer"])
        agent = create_agent(".", provider=provider, store=store, session_id="shared", autoload_plugins=False,
                             setting_sources=())
        assert agent.run_sync("second question").status == "completed"
        texts = [m["content"][0]["text"] for m in provider.requests[0].messages]
        assert texts == ["first question", "the first answer", "second question"]
        assert [m["role"] for m in store.load("shared")] == ["user", "assistant", "user", "assistant"]


@pytest.mark.slow
async def test_a_server_restart_mid_run_is_a_warning_and_the_run_goes_on(pg_server, pg_url):
    import smoke_store_postgres

    gate, entered = asyncio.Event(), asyncio.Event()

    async def wait_here(input: dict[str, Any], ctx: Any) -> str:
        entered.set()
        await gate.wait()
        return "waited"

    tool = ToolDefinition(name="wait_here", description="Waits.", input_schema={"type": "object", "properties": {}},
                          annotations=ToolAnnotations(read_only_hint=True), execute=wait_here)
    with PostgresStore(pg_url) as store:
        agent = create_agent(".", provider=ScriptedProvider([{"tool_calls": [{"name": "wait_here", "input": {}}]},
                                                             "after the restart"]),
                             store=store, session_id="ses", autoload_plugins=False, plugins=[smoke_store_postgres],
                             tools=[tool], setting_sources=())
        warnings: list[dict[str, Any]] = []
        agent.on("run.warning", lambda e: warnings.append(e.data["error"]))
        running = asyncio.ensure_future(agent.run("go"))
        await entered.wait()
        await asyncio.to_thread(pg_server.restart)  # every connection of the pool is now dead
        gate.set()
        result = await running
        assert result.status == "completed", result.error
        assert result.text == "after the restart"
        codes = [(w["code"], w["severity"]) for w in warnings]
        assert ("transport_disconnected", "warning") in codes
        assert any(w["details"].get("reconnected") for w in warnings)
        assert "reconnecting" in warnings[0]["message"]
        assert [m["role"] for m in store.load("ses")] == ["user", "assistant", "tool", "assistant"]
