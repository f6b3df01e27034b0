"""Every test here is kept away from the person's real Smoke settings."""

from __future__ import annotations

import pytest

from smoke_core.testing import isolate_settings


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))
