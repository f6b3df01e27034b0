"""``PostgresStore``: Smoke sessions in PostgreSQL with psycopg 3.

The store owns an ``AsyncConnectionPool`` that lives on its own event loop,
in a daemon thread. Its ``a*`` coroutines (``aappend``, ``aload``,
``aacquire_lease``...) run there without holding up the caller's loop; the
plain methods of the :class:`~smoke_core.plugin.Store` protocol wait for the
same coroutines (an ``append`` is committed when it returns, as the protocol
asks). So one store serves threads, event loops and processes alike.

Every operation is retried while the server is unreachable (a restart, a
dropped connection), for up to ``reconnect_timeout`` seconds: the run using
the session hears about it as ``run.warning`` (``transport_disconnected``)
and goes on once the server is back. An append carries a unique id, so a
retried append whose first attempt did commit is not stored twice. Each
append is one round trip (a server-side function): the session row is
locked, the message numbered, the journal of the calls it answers cleared.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from smoke_core.plugin import (
    AgentError,
    AgentErrorInfo,
    CallRecord,
    Lease,
    LeaseHolder,
    Message,
    SessionInfo,
    StoreError,
    lease_decision,
    redact_url,
)

from ._schema import migrate

log = logging.getLogger("smoke.store.postgres")
T = TypeVar("T")


def _transient(exc: BaseException) -> bool:
    import psycopg
    import psycopg_pool

    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout,
                            ConnectionError))


class PostgresStore:
    """Sessions in the PostgreSQL database ``url`` (``postgresql://user:pw@host:5432/db``).

    The schema is created, or migrated, on first use. ``lease_ttl`` /
    ``lease_wait``: as for the built-in stores. ``min_size`` / ``max_size``:
    the pool. ``reconnect_timeout``: how long an operation keeps retrying an
    unreachable server before it fails. ``connect_timeout``: how long the
    first connection may take (an unreachable server fails construction
    with :class:`~smoke_core.plugin.StoreError`).
    """

    _smoke_postgres = True  # for the plugin's hooks, without importing this module

    def __init__(
        self,
        url: str,
        *,
        lease_ttl: float = 30.0,
        lease_wait: float = 5.0,
        min_size: int = 1,
        max_size: int = 8,
        reconnect_timeout: float = 60.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait
        self.reconnect_timeout = reconnect_timeout
        self._runs: dict[str, Any] = {}  # session id -> the run using it (for run.warning)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="smoke-postgres", daemon=True)
        self._thread.start()
        self._closed = False
        try:
            self._pool = self._wait(self._open(min_size, max_size, connect_timeout))
        except BaseException:
            self._stop_loop()
            raise

    # ------------------------------------------------------------ plumbing

    async def _open(self, min_size: int, max_size: int, connect_timeout: float) -> Any:
        import psycopg
        from psycopg_pool import AsyncConnectionPool, PoolTimeout

        # one direct connection first: a wrong URL or a refused connection fails now, with the server's words
        try:
            first = await psycopg.AsyncConnection.connect(self.url, autocommit=True,
                                                          connect_timeout=max(1, int(connect_timeout)))
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise StoreError(
                f"cannot connect to the session store {redact_url(self.url)} ({reason}); check that PostgreSQL is "
                f"running there and that the URL (SMOKE_STORE_URL) is right"
            ) from None
        try:
            await migrate(first)
        finally:
            await first.close()
        pool = AsyncConnectionPool(
            self.url, min_size=min_size, max_size=max_size, open=False, timeout=2.0,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
            reconnect_timeout=max(30.0, self.reconnect_timeout), name="smoke-store",
        )
        try:
            await pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            await pool.close()
            raise StoreError(
                f"cannot connect to the session store {redact_url(self.url)} within {connect_timeout:.0f} s ({exc}); "
                f"check that PostgreSQL is running there and that the URL (SMOKE_STORE_URL) is right"
            ) from None
        except Exception as exc:
            await pool.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"the session store {redact_url(self.url)} cannot be used: {exc}") from None
        return pool

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the store's loop and wait for it in this thread."""
        if self._closed:
            raise StoreError(f"the session store {redact_url(self.url)} is closed")
        if threading.current_thread() is self._thread:
            raise RuntimeError("PostgresStore: a blocking call from the store's own thread would deadlock")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the store's loop; await it from the caller's loop."""
        if self._closed:
            raise StoreError(f"the session store {redact_url(self.url)} is closed")
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)

    def _notify(self, session_id: str | None) -> Callable[[AgentErrorInfo], None]:
        """A thread-safe way to tell the run using ``session_id`` (if any) about trouble."""
        run = self._runs.get(session_id) if session_id is not None else None
        try:
            caller = asyncio.get_running_loop()
        except RuntimeError:
            caller = None

        def tell(info: AgentErrorInfo) -> None:
            log.warning("smoke: %s", info.message)
            if run is None:
                return
            loop = caller or getattr(run, "_loop", None)
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(run.warn, info)

        return tell

    async def _op(self, fn: Callable[[Any], Awaitable[T]], tell: Callable[[AgentErrorInfo], None]) -> T:
        """``fn(connection)``, retried while the server is unreachable."""
        started = time.monotonic()
        attempt = 0
        warned_at = None
        while True:
            attempt += 1
            try:
                async with self._pool.connection() as conn:
                    value = await fn(conn)
            except Exception as exc:
                if not _transient(exc):
                    raise
                waited = time.monotonic() - started
                if waited >= self.reconnect_timeout:
                    raise AgentError.from_code(
                        "transport_disconnected",
                        f"the session store {redact_url(self.url)} has been unreachable for {waited:.0f} s ({exc}); "
                        f"the step could not be saved",
                        severity="error", retryable=False,
                        hint="Check that PostgreSQL is running and reachable, then resume the session.",
                    ) from None
                if warned_at is None or time.monotonic() - warned_at >= 5:
                    warned_at = time.monotonic()
                    tell(AgentErrorInfo.from_code(
                        "transport_disconnected",
                        f"the session store {redact_url(self.url)} is unreachable ({str(exc).strip() or type(exc).__name__}); "
                        f"reconnecting (attempt {attempt}, for up to {self.reconnect_timeout:.0f} s)",
                        severity="warning", details={"attempt": attempt},
                    ))
                await asyncio.sleep(min(0.05 * 2 ** min(attempt, 5), 1.0))
                continue
            if warned_at is not None:
                tell(AgentErrorInfo.from_code(
                    "transport_disconnected",
                    f"the session store {redact_url(self.url)} is reachable again after "
                    f"{time.monotonic() - started:.1f} s; nothing was lost",
                    severity="info", details={"attempt": attempt, "reconnected": True},
                ))
            return value

    # ------------------------------------------------------------ runs (for run.warning)

    def attach_run(self, run: Any) -> None:
        session_id = getattr(run, "session_id", None)
        if session_id is not None:
            self._runs[session_id] = run

    def detach_run(self, run: Any) -> None:
        session_id = getattr(run, "session_id", None)
        if session_id is not None and self._runs.get(session_id) is run:
            del self._runs[session_id]

    # ------------------------------------------------------------ messages

    async def _load(self, session_id: str, tell: Callable[[AgentErrorInfo], None]) -> list[Message]:
        async def fn(conn: Any) -> list[Any]:
            cur = await conn.execute(
                "SELECT role, content::text FROM smoke_messages WHERE session_id = %s ORDER BY seq", (session_id,)
            )
            return list(await cur.fetchall())

        rows = await self._op(fn, tell)
        return [{"role": role, "content": json.loads(content)} for role, content in rows]

    async def _append(self, session_id: str, message: Message, uid: str,
                      tell: Callable[[AgentErrorInfo], None]) -> None:
        content = json.dumps(message["content"], ensure_ascii=False)
        title = None
        if message["role"] == "user":
            text = "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
            title = text.replace("\x00", "")[:80]  # a text column cannot hold NUL (the JSON content escapes it)
        answered = ([str(b.get("tool_call_id")) for b in message["content"]] if message["role"] == "tool" else None)
        now = time.time()

        async def fn(conn: Any) -> None:
            await conn.execute("SELECT smoke_append(%s, %s, %s, %s::json, %s, %s, %s)",
                               (session_id, uid, message["role"], content, title, now, answered))

        await self._op(fn, tell)

    def load(self, session_id: str) -> list[Message]:
        return self._wait(self._load(session_id, self._notify(session_id)))

    async def aload(self, session_id: str) -> list[Message]:
        return await self._await(self._load(session_id, self._notify(session_id)))

    def append(self, session_id: str, message: Message) -> None:
        self._wait(self._append(session_id, message, str(uuid.uuid4()), self._notify(session_id)))

    async def aappend(self, session_id: str, message: Message) -> None:
        await self._await(self._append(session_id, message, str(uuid.uuid4()), self._notify(session_id)))

    async def _list(self, tell: Callable[[AgentErrorInfo], None]) -> list[SessionInfo]:
        async def fn(conn: Any) -> list[Any]:
            cur = await conn.execute(
                "SELECT session_id, message_count, created_at, updated_at, title FROM smoke_sessions "
                "ORDER BY updated_at DESC"
            )
            return list(await cur.fetchall())

        return [SessionInfo(r[0], r[1], r[2], r[3], r[4]) for r in await self._op(fn, tell)]

    def list_sessions(self) -> list[SessionInfo]:
        return self._wait(self._list(self._notify(None)))

    async def alist_sessions(self) -> list[SessionInfo]:
        return await self._await(self._list(self._notify(None)))

    def rename_session(self, session_id: str, title: str) -> bool:
        title = title.replace("\x00", "")

        async def fn(conn: Any) -> bool:
            cur = await conn.execute("UPDATE smoke_sessions SET title = %s WHERE session_id = %s", (title, session_id))
            return bool(cur.rowcount)

        return self._wait(self._op(fn, self._notify(None)))

    def delete_session(self, session_id: str) -> bool:
        """Delete a session, its messages and its journal in one transaction."""

        async def fn(conn: Any) -> bool:
            async with conn.transaction():
                await conn.execute("DELETE FROM smoke_messages WHERE session_id = %s", (session_id,))
                await conn.execute("DELETE FROM smoke_tool_calls WHERE session_id = %s", (session_id,))
                cur = await conn.execute("DELETE FROM smoke_sessions WHERE session_id = %s", (session_id,))
            return bool(cur.rowcount)

        return self._wait(self._op(fn, self._notify(None)))

    # ------------------------------------------------------------ session lease (server clock)

    async def _acquire(self, session_id: str, holder: LeaseHolder, ttl: float,
                       tell: Callable[[AgentErrorInfo], None]) -> Lease:
        async def fn(conn: Any) -> Lease:
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO smoke_leases (session_id, token, host, pid, since, expires_at) "
                    "VALUES (%s, '', '', 0, 0, 0) ON CONFLICT (session_id) DO NOTHING", (session_id,))
                cur = await conn.execute(
                    "SELECT token, host, pid, since, expires_at, extract(epoch from clock_timestamp()) "
                    "FROM smoke_leases WHERE session_id = %s FOR UPDATE", (session_id,))
                token, host, pid, since, expires_at, now = await cur.fetchone()
                now = float(now)
                current = LeaseHolder(token, host, pid) if token else None
                if lease_decision(current, float(expires_at), holder, now):
                    since = float(since) if token == holder.token else now
                    await conn.execute(
                        "UPDATE smoke_leases SET token = %s, host = %s, pid = %s, since = %s, expires_at = %s "
                        "WHERE session_id = %s", (holder.token, holder.host, holder.pid, since, now + ttl, session_id))
                    return Lease(session_id, True, holder, since, now + ttl)
                assert current is not None
                return Lease(session_id, False, current, float(since), float(expires_at))

        return await self._op(fn, tell)

    async def _renew(self, session_id: str, holder: LeaseHolder, ttl: float,
                     tell: Callable[[AgentErrorInfo], None]) -> bool:
        async def fn(conn: Any) -> bool:
            cur = await conn.execute(
                "UPDATE smoke_leases SET expires_at = extract(epoch from clock_timestamp()) + %s "
                "WHERE session_id = %s AND token = %s", (ttl, session_id, holder.token))
            return bool(cur.rowcount)

        return await self._op(fn, tell)

    async def _release(self, session_id: str, holder: LeaseHolder, tell: Callable[[AgentErrorInfo], None]) -> None:
        async def fn(conn: Any) -> None:
            await conn.execute("DELETE FROM smoke_leases WHERE session_id = %s AND token = %s",
                               (session_id, holder.token))

        await self._op(fn, tell)

    def acquire_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> Lease:
        return self._wait(self._acquire(session_id, holder, ttl, self._notify(session_id)))

    async def aacquire_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> Lease:
        return await self._await(self._acquire(session_id, holder, ttl, self._notify(session_id)))

    def renew_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> bool:
        return self._wait(self._renew(session_id, holder, ttl, self._notify(session_id)))

    async def arenew_lease(self, session_id: str, holder: LeaseHolder, ttl: float) -> bool:
        return await self._await(self._renew(session_id, holder, ttl, self._notify(session_id)))

    def release_lease(self, session_id: str, holder: LeaseHolder) -> None:
        self._wait(self._release(session_id, holder, self._notify(session_id)))

    async def arelease_lease(self, session_id: str, holder: LeaseHolder) -> None:
        await self._await(self._release(session_id, holder, self._notify(session_id)))

    # ------------------------------------------------------------ call journal

    async def _start_call(self, session_id: str, call_id: str, tool_name: str,
                          tell: Callable[[AgentErrorInfo], None]) -> None:
        now = time.time()

        async def fn(conn: Any) -> None:
            await conn.execute(
                "INSERT INTO smoke_tool_calls (session_id, call_id, tool_name, started_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (session_id, call_id) DO UPDATE SET tool_name = excluded.tool_name, "
                "started_at = excluded.started_at, ended_at = NULL, result = NULL", (session_id, call_id, tool_name, now))

        await self._op(fn, tell)

    async def _end_call(self, session_id: str, call_id: str, result: dict[str, Any],
                        tell: Callable[[AgentErrorInfo], None]) -> None:
        now = time.time()
        text = json.dumps(result, ensure_ascii=False)

        async def fn(conn: Any) -> None:
            await conn.execute(
                "INSERT INTO smoke_tool_calls (session_id, call_id, tool_name, started_at, ended_at, result) "
                "VALUES (%s, %s, '', %s, %s, %s::json) ON CONFLICT (session_id, call_id) DO UPDATE SET "
                "ended_at = excluded.ended_at, result = excluded.result", (session_id, call_id, now, now, text))

        await self._op(fn, tell)

    async def _pending(self, session_id: str, tell: Callable[[AgentErrorInfo], None]) -> dict[str, CallRecord]:
        async def fn(conn: Any) -> list[Any]:
            cur = await conn.execute(
                "SELECT call_id, tool_name, started_at, ended_at, result::text FROM smoke_tool_calls "
                "WHERE session_id = %s", (session_id,))
            return list(await cur.fetchall())

        out: dict[str, CallRecord] = {}
        for call_id, tool_name, started_at, ended_at, result in await self._op(fn, tell):
            value = json.loads(result) if result is not None else None
            out[call_id] = CallRecord(call_id, tool_name, started_at, ended_at,
                                      value if isinstance(value, dict) else None)
        return out

    def record_call_start(self, session_id: str, call_id: str, tool_name: str) -> None:
        self._wait(self._start_call(session_id, call_id, tool_name, self._notify(session_id)))

    async def arecord_call_start(self, session_id: str, call_id: str, tool_name: str) -> None:
        await self._await(self._start_call(session_id, call_id, tool_name, self._notify(session_id)))

    def record_call_end(self, session_id: str, call_id: str, result: dict[str, Any]) -> None:
        self._wait(self._end_call(session_id, call_id, result, self._notify(session_id)))

    async def arecord_call_end(self, session_id: str, call_id: str, result: dict[str, Any]) -> None:
        await self._await(self._end_call(session_id, call_id, result, self._notify(session_id)))

    def pending_calls(self, session_id: str) -> dict[str, CallRecord]:
        return self._wait(self._pending(session_id, self._notify(session_id)))

    async def apending_calls(self, session_id: str) -> dict[str, CallRecord]:
        return await self._await(self._pending(session_id, self._notify(session_id)))

    # ------------------------------------------------------------ closing

    def close(self) -> None:
        """Close the pool and stop the store's thread (safe to call twice)."""
        if self._closed:
            return
        try:
            self._wait(self._pool.close())
        finally:
            self._closed = True
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
