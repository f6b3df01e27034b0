"""Tests do not depend on the host's home (tests/conftest.py's ``_fake_home``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smoke_core.policy.sandbox.settings import SandboxPolicy
from tests.conftest import REAL_HOME, _audit


def test_home_is_a_fresh_folder_not_the_real_one(_fake_home: Path) -> None:
    assert Path.home() == _fake_home == Path(os.path.expanduser("~"))
    assert Path.home().resolve() != REAL_HOME
    assert list(_fake_home.iterdir()) == []


def test_the_sandbox_policy_hides_the_fake_home_secrets(_fake_home: Path, tmp_path: Path) -> None:
    (_fake_home / ".aws").mkdir()
    policy = SandboxPolicy.from_settings(None, tmp_path)
    assert (_fake_home / ".aws").resolve() in policy.masked


def test_opening_a_file_under_the_real_home_is_caught() -> None:
    import tests.conftest as conftest

    outer, conftest._home_reads = conftest._home_reads, []
    try:
        _audit("open", (str(REAL_HOME / ".aws" / "credentials"), "r", 0))
        _audit("open", (str(REAL_HOME.parent / "elsewhere"), "r", 0))
        with pytest.raises(OSError):
            (REAL_HOME / "no-such-file-for-smoke-tests").read_bytes()  # a real open goes through the hook too
        reads = conftest._home_reads
    finally:
        conftest._home_reads = outer
    assert reads == [f"open {REAL_HOME / '.aws' / 'credentials'}", f"open {REAL_HOME / 'no-such-file-for-smoke-tests'}"]
