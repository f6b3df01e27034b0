from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Iterator
from pathlib import Path

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


#: The account's real home (from the password database, not ``$HOME``, which
#: the fixture below points elsewhere). No test may open a file under it.
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
#: Python's own files may live under the real home (pyenv, a user install).
_PYTHON_FILES = tuple(
    str(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path} if p
)
_home_reads: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _home_reads is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    target = args[0] if args else None
    if not isinstance(target, str | bytes | os.PathLike):
        return
    path = os.path.abspath(os.fsdecode(target))
    real = str(REAL_HOME)
    if (path == real or path.startswith(real + os.sep)) and not path.startswith(_PYTHON_FILES):
        _home_reads.append(f"{event} {path}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _fake_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets an empty home (``HOME``; git's identity from the
    environment, since ``~/.gitconfig`` is the host's) and fails if it opens
    a file under the account's real home: a test must not depend on what the
    host keeps there (``~/.aws``, ``~/.config/smoke``, ...). A test that
    wants secrets in a home writes them into its own fake one."""
    global _home_reads
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, value in (("GIT_AUTHOR_NAME", "Smoke Tests"), ("GIT_AUTHOR_EMAIL", "tests@smoke.invalid"),
                       ("GIT_COMMITTER_NAME", "Smoke Tests"), ("GIT_COMMITTER_EMAIL", "tests@smoke.invalid")):
        monkeypatch.setenv(var, os.environ.get(var, value))
    _home_reads = []
    try:
        yield home
        reads, _home_reads = _home_reads, None
        assert not reads, f"the test opened files under the real home {REAL_HOME}: {reads[:5]}"
    finally:
        _home_reads = None


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
