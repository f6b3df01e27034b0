"""``smoke doctor`` validates every settings layer, as a run does: a layer
that makes every run exit 2 is reported, never "everything is here"."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoke_core.cli import cli


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    return ws


def _user_settings() -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_an_unknown_key_in_the_user_settings_is_reported(here: Path) -> None:
    user = _user_settings()
    user.write_text("modle: gpt-5\n")
    run = CliRunner().invoke(cli, ["run", "hello"])
    assert run.exit_code == 2 and "unknown setting 'modle'" in run.output  # what every run does
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 0, result.output  # it reports, it does not judge
    assert f"✗ user settings: invalid ({user})" in result.output
    assert "unknown setting 'modle'; did you mean 'model'?" in result.output
    assert "until it is fixed: every `smoke run`" in result.output and "exit status 2" in result.output
    assert "everything is here" not in result.output
    assert result.output.rstrip().splitlines()[-1].endswith("invalid: user settings")


def test_every_layer_is_checked_and_named(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (here / ".smoke").mkdir()
    (here / ".smoke" / "config.yaml").write_text("max_steps: lots\n")
    (here / ".smoke" / "config.local.yaml").write_text("model: fine\n")
    monkeypatch.setenv("SMOKE_MAX_STEPS", "many")
    report = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["project settings"]["ok"] is False
    assert "max_steps" in checks["project settings"]["detail"] and "in this folder" in checks["project settings"]["disables"]
    assert checks["local settings"]["ok"] is True and checks["local settings"]["detail"] == "valid"
    assert checks["environment settings"]["ok"] is False and "SMOKE_MAX_STEPS" in checks["environment settings"]["detail"]
    assert checks["user settings"]["ok"] is True and checks["user settings"]["detail"] == "no file"
    assert checks["managed settings"]["ok"] is True


def test_a_broken_managed_file_is_reported_once(here: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    managed = tmp_path / "managed.yaml"
    managed.write_text("permisions: {}\n")
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    result = CliRunner().invoke(cli, ["doctor"])
    assert f"✗ managed settings: invalid ({managed})" in result.output
    assert "permisions" in result.output
    assert "user settings" not in result.output  # every other layer would repeat the managed file's error
    assert result.output.rstrip().splitlines()[-1].endswith("invalid: managed settings")


def test_valid_settings_are_all_well(here: Path) -> None:
    _user_settings().write_text("max_steps: 12\n")
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(result.output)["checks"]}
    assert checks["user settings"] == {"name": "user settings", "ok": True, "path": str(_user_settings()),
                                       "version": None, "detail": "valid", "disables": None}
