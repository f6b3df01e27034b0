"""`smoke skills` through the real CLI, in a subprocess with only this plugin loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


def run_smoke(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOME=str(home), SMOKE_LOAD_PLUGINS="skills", COLUMNS="200", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-c", "from smoke_core.cli import main; main()", "skills", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_entry_point_is_declared() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="smoke")}
    assert eps.get("skills") == "smoke_skills"


def test_smoke_skills_json_lists_ids_descriptions_and_sources(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    skill = ws / ".claude" / "skills" / "local" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: Local\ndescription: A workspace skill.\n---\nLocal body.\n")
    home_skill = home / ".config" / "opencode" / "skills" / "from-home.md"
    home_skill.parent.mkdir(parents=True)
    home_skill.write_text("---\ndescription: A home skill.\n---\nHome body.\n")

    proc = run_smoke("--workspace", str(ws), "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    rows = {r["id"]: r for r in data["skills"]}
    assert set(rows) == {"local", "from-home"}
    assert rows["local"]["description"] == "A workspace skill."
    assert rows["local"]["source_dir"] == str(ws.resolve() / ".claude" / "skills")
    assert rows["from-home"]["source_dir"] == str(home / ".config" / "opencode" / "skills")
    assert data["warnings"] == []


def test_smoke_skills_table_with_dir_and_warnings(tmp_path: Path) -> None:
    proc = run_smoke("--workspace", str(tmp_path), "--dir", str(FIXTURES), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pdf_processing" in proc.stdout
    assert "curated-skill" in proc.stdout
    assert str(FIXTURES) in proc.stdout
    assert "user-only" in proc.stdout  # people see every skill, with model: no
    assert proc.stderr.count("broken-yaml") == 1  # printed once, not also logged
    assert proc.stderr.count("no-frontmatter") == 1


def _write_user_settings(text: str) -> Path:
    from smoke_core.settings import user_settings_path

    path = user_settings_path()  # under the isolated settings home (conftest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_smoke_skills_lists_what_a_run_gets_from_the_settings(tmp_path: Path) -> None:
    """`skills_dir` from the person's settings decides, as for a run; an
    untrusted workspace's own `skills_dir` pointing outside it is refused, as
    in a run, with the warning that says why."""
    _write_user_settings(f"skills_dir: {FIXTURES}\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = run_smoke("--workspace", str(plain), "--json", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"pdf_processing", "curated-skill"} <= {r["id"] for r in data["skills"]}
    assert any("broken-yaml" in w for w in data["warnings"])

    cloned = tmp_path / "cloned"
    (cloned / ".smoke").mkdir(parents=True)
    (cloned / ".smoke" / "config.yaml").write_text(f"skills_dir: {FIXTURES}\n")
    proc = run_smoke("--workspace", str(cloned), "--json", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["skills"] == []
    assert any("set by the workspace's own settings, which are not trusted" in w for w in data["warnings"])


def test_smoke_skills_with_a_bad_setting_is_one_message_and_exit_2(tmp_path: Path) -> None:
    path = _write_user_settings("skills_dir: 7\n")
    proc = run_smoke("--workspace", str(tmp_path), home=tmp_path / "home")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}: skills_dir:" in proc.stderr and "smoke-skills" in proc.stderr and "got 7" in proc.stderr
