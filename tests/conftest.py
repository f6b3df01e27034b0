from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """Core tests see no installed plugin unless a test opts in: other plugins
    may be installed in the same environment (the `tests` nox session)."""
    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real user settings, trust store or managed settings
    (/etc/smoke/managed.yaml), nor SMOKE_* settings from the environment."""
    home = tmp_path_factory.mktemp("settings-home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(home / "no-managed-settings.yaml"))
    for var in ("SMOKE_PROVIDER", "SMOKE_MODEL", "SMOKE_BASE_URL", "SMOKE_PERMISSION", "SMOKE_MAX_STEPS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
