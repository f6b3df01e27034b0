from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Core tests see no installed plugin unless a test opts in: other plugins
    may be installed in the same environment (the `tests` nox session)."""
    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
