"""The session store from the command line: opening it with clear errors
(``smoke run``, ``smoke sessions``), ``smoke sessions`` / ``show`` over
whatever store the settings name (the folder's SQLite file,
``SMOKE_STORE_URL``, the ``store`` setting: PostgreSQL, a plugin's), and
``smoke sessions doctor``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

EXIT_USAGE = 2


def sessions_db(workspace: Path) -> Path:
    return workspace / ".smoke" / "sessions.db"


def configured_store_url(workspace: Path) -> str | None:
    """``SMOKE_STORE_URL``, else the ``store`` setting, else None (the folder's SQLite file)."""
    from ..store.url import store_url_from_env

    return store_url_from_env() or _settings_store(workspace)


def open_cli_store(workspace: Path, *, new_session: bool = False) -> Any:
    """The workspace's SQLite store. A damaged file is one clear message and
    exit status 2, except for a new session: the damaged file is then moved
    aside (kept) and a fresh one started, with a warning on stderr (logged
    by the store). ``SMOKE_STORE_URL`` names another store (``postgresql://...``
    with smoke-store-postgres: sessions shared between machines)."""
    from ..store.protocol import StoreCorruptError, StoreError
    from ..store.sqlite import SQLiteStore
    from ..store.url import StoreURLError, open_store, redact_url, store_url_from_env

    url, where = store_url_from_env(), "SMOKE_STORE_URL"
    if url is None:
        url, where = _settings_store(workspace), "the store setting"
    if url is not None:
        try:
            return open_store(url)
        except (StoreURLError, StoreError, OSError) as exc:
            click.echo(f"smoke: {where} {redact_url(url)}: {exc}", err=True)
            sys.exit(EXIT_USAGE)

    try:
        return SQLiteStore(sessions_db(workspace), on_corrupt="start_fresh" if new_session else "raise")
    except StoreCorruptError as exc:
        click.echo(f"smoke: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def _settings_store(workspace: Path) -> str | None:
    """The ``store`` setting for this workspace (user settings, or a trusted
    folder's own), or None; a settings mistake is reported where it is read."""
    from ..base.errors import ConfigError
    from ..policy.settings.layers import resolve_settings

    try:
        value = resolve_settings(workspace, trust=None).values.get("store")
    except ConfigError:
        return None
    return value if isinstance(value, str) and value else None


def doctor_impl(workspace: Path, source: str | None) -> None:
    """Check the workspace's session database; salvage what can be read."""
    from ..store.sqlite import move_aside
    from ..store.sqlite_repair import check_database, salvage_sessions

    db = sessions_db(workspace)
    if source is not None:
        src = Path(source).expanduser().resolve()
        if not src.is_file():
            click.echo(f"smoke: --from {source!r} is not a file; give the path of a damaged session database", err=True)
            sys.exit(EXIT_USAGE)
        if db.exists() and src == db.resolve():
            click.echo("smoke: --from names the workspace's own database; run `smoke sessions doctor` without --from",
                       err=True)
            sys.exit(EXIT_USAGE)
        _report(salvage_sessions(src, db), kept=src)
        return
    if not db.exists():
        click.echo(f"no session database at {db}; nothing to check")
        return
    check = check_database(db)
    if check.error is None:
        click.echo(f"{db} is healthy: {check.sessions} sessions, {check.messages} messages.")
        if check.unreadable:
            click.echo(
                f"{check.unreadable} message(s) cannot be decoded; they are shown as '(message could not be read)' "
                f"and the rest of their sessions works."
            )
        return
    click.echo(f"{db} is damaged ({check.error}).")
    kept = move_aside(db)
    _report(salvage_sessions(kept, db), kept=kept)


def _report(report: Any, *, kept: Path) -> None:
    click.echo(
        f"Copied {report.sessions} session(s) ({report.messages} messages) from {report.source} into {report.target}."
    )
    if report.unreadable_messages:
        click.echo(f"{report.unreadable_messages} message(s) could not be decoded and were copied as placeholders.")
    if report.skipped_sessions:
        click.echo(f"{len(report.skipped_sessions)} session(s) were already in {report.target} and were left alone.")
    for problem in report.problems[:5]:
        click.echo(f"  note: {problem}")
    click.echo(f"The damaged file is kept at {kept}; delete it when you no longer need it.")


def sessions_list_impl(workspace: Path) -> None:
    """``smoke sessions``: the sessions of the store this folder uses, the store named in the title."""
    import time

    from rich.console import Console
    from rich.table import Table

    from .describe import esc
    from .session_pick import session_rows, store_title

    if configured_store_url(workspace) is None and not sessions_db(workspace).exists():
        click.echo(f"no sessions yet in {sessions_db(workspace)}")
        return
    store = open_cli_store(workspace)
    try:
        title = store_title(workspace, store)
        rows = session_rows(store, limit=10_000)
    finally:
        store.close()
    if not rows:
        click.echo(f"no sessions yet in {title}")
        return
    table = Table(title=f"Sessions in {esc(title)}")
    for col in ("session", "messages", "updated", "status", "title"):
        table.add_column(col)
    for row in rows:
        table.add_row(esc(row.session_id), str(row.messages),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated_at)), row.status,
                      esc(" ".join(row.first_task.split())[:60]))
    Console().print(table)


def sessions_show_impl(workspace: Path, session_id: str) -> None:
    """Print the transcript of SESSION_ID."""
    import json

    from .session_pick import store_title

    store = open_cli_store(workspace)
    try:
        messages = store.load(session_id)
        title = store_title(workspace, store)
    finally:
        store.close()
    if not messages:
        click.echo(f"no session {session_id!r} in {title}; `smoke sessions` lists them", err=True)
        sys.exit(EXIT_USAGE)
    for m in messages:
        for b in m["content"]:
            kind = b.get("type")
            if kind == "text":
                click.echo(f"[{m['role']}] {b['text']}")
            elif kind == "thinking":
                click.echo(f"[{m['role']} thinking] {b.get('text', '')}")
            elif kind == "tool_call":
                click.echo(f"[{m['role']} → {b['name']}] {json.dumps(b.get('input', {}), ensure_ascii=False)}")
            elif kind == "tool_result":
                text = " ".join(c.get("text", "") for c in b.get("content", []) if c.get("type") == "text")
                flag = " (error)" if b.get("is_error") else ""
                click.echo(f"[result{flag}] {text[:500]}")
