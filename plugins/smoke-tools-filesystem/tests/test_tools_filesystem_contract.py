"""smoke-tools-filesystem against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

from pathlib import Path

import smoke_tools_filesystem

from smoke_core.testing import ToolContract

PATCH = """*** Begin Patch
*** Update File: patched.txt
@@
-old line
+new line
*** End Patch
"""


class TestFilesystemToolContract(ToolContract):
    plugin = smoke_tools_filesystem
    sample_inputs = {
        "read_file": {"path": "notes.txt"},
        "list_directory": {"path": "."},
        "write_file": {"path": "written.txt", "content": "hello\n"},
        "edit_file": {"path": "edited.txt", "old_string": "alpha", "new_string": "beta"},
        "replace_lines": {"path": "lines.txt", "start_line": 1, "end_line": 1, "replacement": "first"},
        "delete_file": {"path": "gone.txt"},
        "apply_patch": {"patch": PATCH},
    }

    def prepare_workspace(self, root: Path) -> None:
        (root / "notes.txt").write_text("one\ntwo\n")
        (root / "edited.txt").write_text("alpha\n")
        (root / "lines.txt").write_text("one\ntwo\n")
        (root / "gone.txt").write_text("bye\n")
        (root / "patched.txt").write_text("old line\n")
