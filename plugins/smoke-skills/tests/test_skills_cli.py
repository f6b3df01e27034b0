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
