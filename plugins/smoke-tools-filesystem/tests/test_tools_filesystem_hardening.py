"""list_directory and the harness's own folder; writes pinned inside the
workspace (issue 20 item 4, issue 21 rows 2 and 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import smoke_tools_filesystem

from smoke_core.plugin import ToolDefinition, ToolError
from smoke_core.testing import make_tool_context


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


def call(ws: Path, name: str, **args: object) -> str:
    return TOOLS[name].execute(args, make_tool_context(ws, tool_name=name)).text_content()


def test_list_directory_hides_the_harness_folder_unless_asked(tmp_path: Path):
    (tmp_path / ".smoke" / "runs").mkdir(parents=True)
    (tmp_path / "sub" / ".smoke").mkdir(parents=True)
    (tmp_path / "app.py").write_text("x\n")
    (tmp_path / ".env").write_text("TOKEN=hidden-value\n")
    root = call(tmp_path, "list_directory")
    assert root.splitlines() == ["./ (3 entries)", ".env  (19 B)", "app.py  (2 B)", "sub/"]
    assert "hidden-value" not in root  # a secret file is shown to exist, never read
    assert call(tmp_path, "list_directory", path=".smoke").splitlines() == [".smoke/ (1 entries)", "runs/"]
    # only the workspace's own .smoke is the harness's: a project folder of that name is listed
    assert ".smoke/" in call(tmp_path, "list_directory", path="sub")


def test_read_file_does_not_block_on_a_fifo(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        call(tmp_path, "read_file", path="pipe")


def test_write_creates_folders_and_keeps_the_mode(tmp_path: Path):
    assert call(tmp_path, "write_file", path="a/b/c.txt", content="one\n").startswith("Created a/b/c.txt")
    target = tmp_path / "a" / "b" / "c.txt"
    target.chmod(0o640)
    call(tmp_path, "write_file", path="a/b/c.txt", content="two\n")
    assert target.read_text() == "two\n" and (target.stat().st_mode & 0o777) == 0o640
    assert not [p for p in (tmp_path / "a" / "b").iterdir() if p.name.endswith(".smoke-tmp")]
    (tmp_path / "file").write_text("x")
    with pytest.raises(ToolError, match="file is a file, not a folder"):
        call(tmp_path, "write_file", path="file/inner.txt", content="y")


def test_writes_through_an_inside_symlink_reach_its_target(tmp_path: Path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "t.txt").write_text("old\n")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "file_alias.txt").symlink_to(tmp_path / "real" / "t.txt")
    call(tmp_path, "write_file", path="alias/t.txt", content="new\n")
    assert (tmp_path / "real" / "t.txt").read_text() == "new\n"
    call(tmp_path, "edit_file", path="file_alias.txt", old_string="new", new_string="newer")
    assert (tmp_path / "real" / "t.txt").read_text() == "newer\n"
    assert (tmp_path / "file_alias.txt").is_symlink()
    call(tmp_path, "delete_file", path="file_alias.txt")
    assert not (tmp_path / "file_alias.txt").exists() and (tmp_path / "real" / "t.txt").exists()
