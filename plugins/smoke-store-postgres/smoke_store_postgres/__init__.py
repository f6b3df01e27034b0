"""smoke-store-postgres: Smoke sessions in PostgreSQL (psycopg 3, async, pooled).

Open it by URL — ``SMOKE_STORE_URL=postgresql://user:pw@host:5432/db`` (or
``smoke batch --store URL``): the entry points ``postgresql`` / ``postgres``
of the group ``smoke.stores`` name :func:`open_store`. From code::

    from smoke_store_postgres import PostgresStore
    agent = create_agent(ws, store=PostgresStore("postgresql://..."), session_id="ses_1")

This module imports psycopg only when a store is made. Its hooks tell the run
using a session about trouble with the server (``run.warning``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core.plugin import hookimpl

if TYPE_CHECKING:
    from ._store import PostgresStore

__all__ = ["PostgresStore", "open_store"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from ._store import PostgresStore

        return PostgresStore
    raise AttributeError(name)


def open_store(url: str, **options: Any) -> PostgresStore:
    """The store for ``url`` (the ``smoke.stores`` entry point)."""
    from ._store import PostgresStore

    return PostgresStore(url, **options)


def _postgres_store(run: Any) -> Any:
    store = getattr(getattr(run, "agent", None), "store", None)
    if getattr(run, "parent", None) is None and getattr(store, "_smoke_postgres", False):
        return store
    return None


@hookimpl
def before_run(run: Any) -> None:
    store = _postgres_store(run)
    if store is not None:
        store.attach_run(run)


@hookimpl
def after_run(run: Any) -> None:
    store = _postgres_store(run)
    if store is not None:
        store.detach_run(run)
