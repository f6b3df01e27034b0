"""A pytest plugin for this repository's suite, loaded in every nox session
(``-p smoke_pytest_rules``; ``conftest.py`` at the root loads it for runs from
the root). Its rule: a test that skips
because a Smoke plugin (or another package its session does not install) is
missing must be marked ``integration``.

``core`` runs ``tests/`` with core alone and ``plugin(name)`` runs a plugin's
tests with core and that plugin, both ``-m "not integration"``; ``tests``
installs everything and runs only ``-m integration``. So a test that needs a
missing package and is not marked ``integration`` skips in its own session and
is deselected in ``tests``: it never runs, and a green CI says nothing about
it. This turns that silent skip into a failure that names the fix.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

_MISSING_PACKAGE = re.compile(
    r"could not import '|No module named '|needs smoke-|needs every first-party|tool plugins are not installed"
    r"|pip install smoke-"
)
_FIX = ("skips because a package its nox session does not install is missing ({reason}), and it is not "
        "marked `integration`, so no session runs it: mark it `@pytest.mark.integration` (or "
        "`pytestmark = pytest.mark.integration` for the module), or declare the dependency")


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs several plugins installed together (the `tests` nox session)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.skipped and item.get_closest_marker("integration") is None:
        reason = _skip_reason(report)
        if _MISSING_PACKAGE.search(reason):
            report.outcome = "failed"
            report.longrepr = f"{item.nodeid} " + _FIX.format(reason=reason.removeprefix("Skipped: "))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    report = yield
    if report.skipped and isinstance(collector, pytest.Module):
        reason = _skip_reason(report)
        source = collector.path.read_text(encoding="utf-8")
        marked = re.search(r"^pytestmark\s*=.*\bintegration\b", source, re.M)
        if _MISSING_PACKAGE.search(reason) and not marked:
            report.outcome = "failed"
            report.longrepr = f"{collector.nodeid} " + _FIX.format(reason=reason.removeprefix("Skipped: "))
    return report
