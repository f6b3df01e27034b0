"""Skills as slash commands in `smoke chat` (the register_slash_commands hook)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import smoke_skills

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider


def write_skill(root: Path, name: str, frontmatter: str, body: str) -> None:
    folder = root / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n{body}\n")


def commands_for(workspace: Path) -> dict[str, dict[str, Any]]:
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, plugins=[smoke_skills])
    got: dict[str, dict[str, Any]] = {}

    def register(name: str, handler: Any, *, description: str = "", usage: str = "") -> None:
        got[name] = {"handler": handler, "description": description, "usage": usage}

    smoke_skills.register_slash_commands(register=register, agent=agent)
    return got


def test_each_skill_a_person_may_invoke_is_a_slash_command(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf-tools", "name: PDF Tools\ndescription: Work with PDF files\nargument-hint: FILE",
                "Use pdftotext.")
    write_skill(tmp_path, "release", "name: release\ndescription: Cut a release\ndisable-model-invocation: true",
                "Bump, tag, push.")
    write_skill(tmp_path, "internal", "name: internal\ndescription: for the model only\nuser-invocable: false", "x")
    commands = commands_for(tmp_path)
    assert sorted(commands) == ["pdf-tools", "release"]
    pdf = commands["pdf-tools"]
    assert pdf["description"] == "Work with PDF files" and pdf["usage"] == "/pdf-tools FILE"
    text = pdf["handler"]("report.pdf", None)
    assert "use_skill" in text and "'pdf-tools'" in text and text.endswith("report.pdf")
    assert "Use pdftotext." not in text  # the model loads it with use_skill
    # use_skill refuses this one (disable-model-invocation), so the person's choice brings it inline
    release = commands["release"]["handler"]("", None)
    assert "Bump, tag, push." in release and "use_skill" not in release
    assert commands["release"]["usage"] == "/release [what to do]"


def test_no_skills_no_commands(tmp_path: Path) -> None:
    assert commands_for(tmp_path) == {}


@pytest.mark.parametrize("hint", ["", "FILE"])
def test_arguments_follow_the_skill_instruction(tmp_path: Path, hint: str) -> None:
    extra = f"\nargument-hint: {hint}" if hint else ""
    write_skill(tmp_path, "fmt", f"name: fmt\ndescription: format code{extra}", "Run the formatter.")
    handler = commands_for(tmp_path)["fmt"]["handler"]
    assert handler("  ", None).endswith("and follow it.")
    assert handler("src/app.py", None).endswith("\n\nsrc/app.py")
