"""The store's schema, created or migrated on first use.

Migrations run in one transaction under an advisory lock, so many workers
starting at once migrate once; ``smoke_schema.version`` says how far a
database is. A database newer than this plugin is refused (upgrade the
plugin) rather than written to.
"""

from __future__ import annotations

from typing import Any

from smoke_core.plugin import StoreError

_LOCK = 0x736D6F6B65  # "smoke": the advisory lock key for migrations

MIGRATIONS: list[str] = [
    # 1: sessions, messages, leases, the call journal, and one-round-trip append
    """
    CREATE TABLE smoke_sessions (
        session_id text PRIMARY KEY,
        title text,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        message_count integer NOT NULL DEFAULT 0
    );
    CREATE TABLE smoke_messages (
        session_id text NOT NULL REFERENCES smoke_sessions (session_id) ON DELETE CASCADE,
        seq integer NOT NULL,
        uid uuid NOT NULL UNIQUE,
        role text NOT NULL,
        content json NOT NULL,
        created_at double precision NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE smoke_leases (
        session_id text PRIMARY KEY,
        token text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        since double precision NOT NULL,
        expires_at double precision NOT NULL
    );
    CREATE TABLE smoke_tool_calls (
        session_id text NOT NULL,
        call_id text NOT NULL,
        tool_name text NOT NULL,
        started_at double precision NOT NULL,
        ended_at double precision,
        result json,
        PRIMARY KEY (session_id, call_id)
    );
    CREATE FUNCTION smoke_append(p_session text, p_uid uuid, p_role text, p_content json, p_title text,
                                 p_now double precision, p_answered text[]) RETURNS integer
    LANGUAGE plpgsql AS $$
    DECLARE
        v_seq integer;
    BEGIN
        PERFORM 1 FROM smoke_messages WHERE uid = p_uid;
        IF FOUND THEN
            RETURN -1;  -- a retried append whose first attempt committed
        END IF;
        INSERT INTO smoke_sessions (session_id, title, created_at, updated_at, message_count)
            VALUES (p_session, p_title, p_now, p_now, 0) ON CONFLICT (session_id) DO NOTHING;
        SELECT message_count INTO v_seq FROM smoke_sessions WHERE session_id = p_session FOR UPDATE;
        INSERT INTO smoke_messages (session_id, seq, uid, role, content, created_at)
            VALUES (p_session, v_seq, p_uid, p_role, p_content, p_now);
        UPDATE smoke_sessions SET message_count = v_seq + 1, updated_at = p_now, title = COALESCE(title, p_title)
            WHERE session_id = p_session;
        IF p_answered IS NOT NULL THEN
            DELETE FROM smoke_tool_calls WHERE session_id = p_session AND call_id = ANY (p_answered);
        END IF;
        RETURN v_seq;
    END
    $$;
    CREATE INDEX smoke_sessions_updated ON smoke_sessions (updated_at DESC);
    """,
]

VERSION = len(MIGRATIONS)


async def migrate(conn: Any) -> int:
    """Bring the database to :data:`VERSION`; returns the version it was at."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS smoke_schema (version integer NOT NULL)")
        cur = await conn.execute("SELECT version FROM smoke_schema")
        row = await cur.fetchone()
        current = int(row[0]) if row else 0
        if current > VERSION:
            raise StoreError(
                f"the session database has schema version {current}, newer than this smoke-store-postgres "
                f"understands ({VERSION}); upgrade smoke-store-postgres"
            )
        for sql in MIGRATIONS[current:]:
            await conn.execute(sql)
        if row is None:
            await conn.execute("INSERT INTO smoke_schema (version) VALUES (%s)", (VERSION,))
        elif current != VERSION:
            await conn.execute("UPDATE smoke_schema SET version = %s", (VERSION,))
    return current
