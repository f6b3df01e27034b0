"""smoke-skills against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

from pathlib import Path

import smoke_skills

from smoke_core.testing import ToolContract


class TestSkillsToolContract(ToolContract):
    plugin = smoke_skills
    sample_inputs = {
        "list_skills": {},
        "use_skill": {"skill_id": "release-notes"},
    }

    def prepare_workspace(self, root: Path) -> None:
        skill = root / ".smoke" / "skills" / "release-notes"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n"
            "Read the log since the last tag, group the changes, write RELEASE.md.\n"
        )
