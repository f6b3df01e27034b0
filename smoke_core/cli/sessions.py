"""The session database from the command line: opening it with clear errors
(``smoke run``, ``smoke sessions``) and ``smoke sessions doctor``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

EXIT_USAGE = 2


def sessions_db(workspace: Path) -> Path:
    return workspace / ".smoke" / "sessions.db"


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
