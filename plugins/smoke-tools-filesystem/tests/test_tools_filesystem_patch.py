"""apply_patch: formats, drift, file creation/deletion, all-or-nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_filesystem

from smoke_core.plugin import ToolDefinition, ToolError, ToolResult
from smoke_core.testing import make_tool_context


def _apply_patch_tool() -> ToolDefinition:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return next(t for t in found if t.name == "apply_patch")


APPLY = _apply_patch_tool()


def patch(ws: Path, text: str) -> ToolResult:
    result = APPLY.execute({"patch": text}, make_tool_context(ws, tool_name="apply_patch"))
    assert isinstance(result, ToolResult)
    return result


def refused(ws: Path, text: str) -> str:
    with pytest.raises(ToolError) as info:
        patch(ws, text)
    return str(info.value)


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def test_unified_diff(tmp_path: Path):
    (tmp_path / "a.txt").write_text(lines(10))
    result = patch(tmp_path, (
        "--- a/a.txt\n+++ b/a.txt\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE FIVE\n line 6\n"
    ))
    assert (tmp_path / "a.txt").read_text() == lines(10).replace("line 5\n", "LINE FIVE\n")
    assert result.data["paths"] == ["a.txt"] and "+LINE FIVE" in result.data["diff"]
    assert "M a.txt (+1 -1)" in result.text_content()


def test_drifted_hunks_are_reanchored(tmp_path: Path):
    (tmp_path / "a.txt").write_text("header\n" * 7 + lines(30))
    # the line numbers are 7 off (someone added 7 lines at the top)
    patch(tmp_path, (
        "--- a/a.txt\n+++ b/a.txt\n"
        "@@ -2,3 +2,3 @@\n line 2\n-line 3\n+line three\n line 4\n"
        "@@ -20,3 +20,4 @@\n line 20\n line 21\n+inserted\n line 22\n"
    ))
    text = (tmp_path / "a.txt").read_text()
    assert "line three\n" in text and "line 21\ninserted\nline 22\n" in text and "line 3\n" not in text


def test_plain_diff_without_prefixes_and_fenced(tmp_path: Path):
    (tmp_path / "x.py").write_text("a = 1\nb = 2\n")
    patch(tmp_path, "```diff\n--- x.py\n+++ x.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 10\n b = 2\n```\n")
    assert (tmp_path / "x.py").read_text() == "a = 10\nb = 2\n"


def test_git_diff_new_deleted_renamed(tmp_path: Path):
    (tmp_path / "old.txt").write_text("bye\n")
    (tmp_path / "keep.txt").write_text("k1\nk2\n")
    (tmp_path / "moved.txt").write_text("m\n")
    text = (
        "diff --git a/new/file.txt b/new/file.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
        "--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
        "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\nindex e69de29..0000000\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
        "diff --git a/keep.txt b/keep.txt\nindex 1..2 100644\n--- a/keep.txt\n+++ b/keep.txt\n"
        "@@ -1,2 +1,2 @@\n k1\n-k2\n+K2\n"
        "diff --git a/moved.txt b/renamed.txt\nsimilarity index 100%\nrename from moved.txt\nrename to renamed.txt\n"
    )
    result = patch(tmp_path, text)
    assert (tmp_path / "new/file.txt").read_text() == "hello\nworld\n"
    assert not (tmp_path / "old.txt").exists()
    assert (tmp_path / "keep.txt").read_text() == "k1\nK2\n"
    assert not (tmp_path / "moved.txt").exists() and (tmp_path / "renamed.txt").read_text() == "m\n"
    assert {f["action"] for f in result.data["files"]} == {"A", "D", "M"}


def test_begin_patch_format(tmp_path: Path):
    (tmp_path / "app.py").write_text(
        "def one():\n    return 1\n\n\ndef two():\n    return 1\n"
    )
    (tmp_path / "dead.py").write_text("x\n")
    patch(tmp_path, (
        "*** Begin Patch\n"
        "*** Update File: app.py\n"
        "@@ def two():\n"
        "-    return 1\n"
        "+    return 2\n"
        "*** Add File: pkg/__init__.py\n"
        "+VERSION = '1'\n"
        "*** Delete File: dead.py\n"
        "*** End Patch\n"
    ))
    assert (tmp_path / "app.py").read_text() == "def one():\n    return 1\n\n\ndef two():\n    return 2\n"
    assert (tmp_path / "pkg/__init__.py").read_text() == "VERSION = '1'\n"
    assert not (tmp_path / "dead.py").exists()


def test_begin_patch_move_and_crlf_kept(tmp_path: Path):
    (tmp_path / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    patch(tmp_path, "*** Begin Patch\n*** Update File: w.txt\n*** Move to: v.txt\n a\n-b\n+B\n*** End Patch")
    assert not (tmp_path / "w.txt").exists() and (tmp_path / "v.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


def test_no_newline_at_end_of_file(tmp_path: Path):
    (tmp_path / "n.txt").write_text("a\nb")
    patch(tmp_path, "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n")
    assert (tmp_path / "n.txt").read_text() == "a\nb\n"


def test_failing_second_hunk_leaves_everything_unchanged(tmp_path: Path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text(lines(5))
    second.write_text(lines(5))
    first.chmod(0o640)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (first, second)}
    message = refused(tmp_path, (
        "--- a/first.txt\n+++ b/first.txt\n@@ -1,2 +1,2 @@\n-line 1\n+LINE 1\n line 2\n"
        "--- a/second.txt\n+++ b/second.txt\n@@ -2,2 +2,2 @@\n line 2\n-not in the file\n+x\n"
    ))
    assert "hunk 1 of 1 for second.txt" in message and "Nothing was changed" in message
    assert "    2\tline 2" in message  # shows the region it looked at
    for p, (data, mtime) in before.items():
        assert p.read_bytes() == data and p.stat().st_mtime_ns == mtime
    assert stat.S_IMODE(first.stat().st_mode) == 0o640
    # same within one file: hunk 1 fits, hunk 2 does not
    message = refused(tmp_path, (
        "--- a/first.txt\n+++ b/first.txt\n@@ -1,2 +1,2 @@\n-line 1\n+LINE 1\n line 2\n"
        "@@ -4,2 +4,2 @@\n-nope\n+x\n line 5\n"
    ))
    assert "hunk 2 of 2" in message and first.read_bytes() == before[first][0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.txt", "second.txt"]


def test_add_existing_delete_missing_and_already_applied(tmp_path: Path):
    (tmp_path / "here.txt").write_text("new\n")
    assert "already exists" in refused(tmp_path, "*** Begin Patch\n*** Add File: here.txt\n+x\n*** End Patch")
    message = refused(tmp_path, "*** Begin Patch\n*** Delete File: her.txt\n*** End Patch")
    assert "does not exist" in message and "here.txt" in message
    message = refused(tmp_path, "--- a/here.txt\n+++ b/here.txt\n@@ -1 +1 @@\n-old\n+new\n")
    assert "already applied" in message
    assert "no file changes" in refused(tmp_path, "just some words")
    assert "End Patch" in refused(tmp_path, "*** Begin Patch\n*** Add File: z.txt\n+z\n")
    assert not (tmp_path / "z.txt").exists()


def test_write_failure_rolls_back_written_files(tmp_path: Path):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "blocker").write_text("I am a file, not a folder\n")
    # the second change needs blocker/ to be a folder: the OS refuses after a.txt was planned
    message = refused(tmp_path, (
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: blocker/child.txt\n+c\n*** End Patch"
    ))
    assert "patch not applied" in message or "file system error" in message
    assert (tmp_path / "a.txt").read_text() == "a\n"


def test_patch_result_reaches_ui_data(tmp_path: Path):
    (tmp_path / "f.txt").write_text("1\n")
    data: dict[str, Any] = patch(tmp_path, "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-1\n+2\n").data or {}
    assert data["path"] == "f.txt" and data["diff"].startswith("--- a/f.txt\n+++ b/f.txt\n")
    assert os.path.exists(tmp_path / "f.txt")
