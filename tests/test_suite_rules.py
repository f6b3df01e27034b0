"""The suite's own rule (smoke_pytest_rules.py at the root): a test that skips for a
missing package and is not marked ``integration`` fails, since no nox
session would ever run it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

CASES = '''
import pytest

def test_needs_a_missing_plugin():
    pytest.importorskip("smoke_no_such_plugin")

@pytest.mark.integration
def test_marked_needs_a_missing_plugin():
    pytest.importorskip("smoke_no_such_plugin")

def test_skips_for_another_reason():
    pytest.skip("node is not installed")
'''


def _setup(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((ROOT / "smoke_pytest_rules.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # the rules register `integration`


def test_an_unmarked_skip_for_a_missing_package_fails(pytester: pytest.Pytester) -> None:
    _setup(pytester)
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    out = result.stdout.str()
    assert "FAILED test_cases.py::test_needs_a_missing_plugin" in out
    assert "mark it `@pytest.mark.integration`" in out
    assert "FAILED test_cases.py::test_marked" not in out and "FAILED test_cases.py::test_skips_for" not in out
    result.assert_outcomes(failed=1, skipped=2)


@pytest.mark.parametrize("marked", [False, True])
def test_a_module_skipped_for_a_missing_package_fails_unless_marked(pytester: pytest.Pytester, marked: bool) -> None:
    _setup(pytester)
    mark = "pytestmark = pytest.mark.integration\n" if marked else ""
    pytester.makepyfile(test_module=f'import pytest\n{mark}pytest.importorskip("smoke_no_such_plugin")\n'
                        "def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    if marked:
        result.assert_outcomes(skipped=1)
    else:
        result.assert_outcomes(errors=1)
        assert "is not marked `integration`" in result.stdout.str()
