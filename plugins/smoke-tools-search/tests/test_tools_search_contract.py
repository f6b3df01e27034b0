"""smoke-tools-search against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

from pathlib import Path

import smoke_tools_search

from smoke_core.testing import ToolContract


class TestSearchToolContract(ToolContract):
    plugin = smoke_tools_search
    sample_inputs = {
        "glob": {"pattern": "**/*.py"},
        "grep": {"pattern": "def answer"},
    }

    def prepare_workspace(self, root: Path) -> None:
        (root / "src").mkdir()
        (root / "src" / "app.py").write_text("def answer():\n    return 42\n")
