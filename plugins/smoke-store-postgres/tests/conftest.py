"""Every test here is kept away from the person's real Smoke settings, and
shares one real PostgreSQL server started for the session (initdb + pg_ctl
in a temporary folder, as an unprivileged user)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from smoke_store_postgres.testing import PostgresServer, postgres_available

from smoke_core.testing import isolate_settings


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    why = postgres_available()
    if why:
        pytest.skip(why)
    server = PostgresServer(tmp_path_factory.mktemp("pg"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """A fresh database on the shared server, for one test."""
    return pg_server.create_database()
