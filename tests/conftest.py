from __future__ import annotations

import pytest

from smoke_core.testing import isolate_settings


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Core tests see no installed plugin unless a test opts in: other plugins
    may be installed in the same environment (the `tests` nox session)."""
    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real user settings, trust store or managed settings
    (/etc/smoke/managed.yaml), nor SMOKE_* settings from the environment."""
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
