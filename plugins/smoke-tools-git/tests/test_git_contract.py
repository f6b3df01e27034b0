"""smoke-tools-git against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

import subprocess
from pathlib import Path

import smoke_tools_git

from smoke_core.testing import ToolContract


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


class TestGitToolContract(ToolContract):
    plugin = smoke_tools_git
    sample_inputs = {
        "git_status": {},
        "git_diff": {},
        "git_log": {"count": 5},
        "git_show": {"rev": "HEAD"},
        "git_add": {"paths": ["added.txt"]},
        "git_commit": {"message": "Commit what was staged"},
    }

    def prepare_workspace(self, root: Path) -> None:
        _git(root, "init", "-q")
        _git(root, "config", "user.name", "Contract")
        _git(root, "config", "user.email", "contract@example.invalid")
        (root / "README.md").write_text("a project\n")
        _git(root, "add", "README.md")
        _git(root, "commit", "-qm", "first")
        (root / "README.md").write_text("a project, changed\n")  # something for git_diff and git_status
        (root / "staged.txt").write_text("staged\n")
        _git(root, "add", "staged.txt")  # something for git_commit, whichever order the calls run in
        (root / "added.txt").write_text("to add\n")
