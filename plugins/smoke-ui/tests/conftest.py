"""Every test here is kept away from the person's real Smoke settings; the
browser tests share one way to start Chromium (``browser``, once per module)
and to wait for a server (:func:`wait_healthy`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from smoke_core.testing import isolate_settings


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))


CHROMIUM = os.environ.get("SMOKE_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; never `playwright install`)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium, or set SMOKE_CHROMIUM)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


def wait_healthy(url: str) -> None:
    """Poll the health URL (bounded) until the server answers."""
    last: Exception | None = None
    for _ in range(100):
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError as exc:
            last = exc
    raise AssertionError(f"the server at {url} never became healthy: {last!r}")
