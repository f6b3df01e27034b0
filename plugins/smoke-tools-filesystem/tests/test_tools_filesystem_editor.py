"""editor_files: text reads see the editor's unsaved buffers, writes go through it.

The editor here is a small in-memory one (open buffers over the disk) that
records every call; the sandbox checks must hold whichever way the bytes go.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_filesystem
from smoke_tools_filesystem import editor_files

from smoke_core import create_agent
from smoke_core.plugin import ToolDefinition, ToolError, ToolResult
from smoke_core.testing import ScriptedProvider, make_tool_context


class Editor:
    """Open buffers over the disk, like an editor: reads prefer the buffer;
    a write updates the buffer and saves it."""

    def __init__(self, buffers: dict[Path, str] | None = None, *, read: bool = True, write: bool = True) -> None:
        self.buffers = dict(buffers or {})
        self.read, self.write = read, write
        self.calls: list[tuple[str, Path]] = []

    def read_text(self, path: Path) -> str | None:
        if not self.read:
            return None
        self.calls.append(("read", path))
        return self.buffers[path] if path in self.buffers else path.read_text()

    def write_text(self, path: Path, text: str) -> bool:
        if not self.write:
            return False
        self.calls.append(("write", path))
        self.buffers[path] = text
        path.write_text(text)
        return True


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


def call(ws: Path, name: str, **args: Any) -> ToolResult:
    result = TOOLS[name].execute(args, make_tool_context(ws, tool_name=name))
    assert isinstance(result, ToolResult)
    return result


def test_read_file_shows_the_unsaved_buffer(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("on disk\n")
    editor = Editor({tmp_path / "a.py": "in the buffer\nsecond line\n"})
    with editor_files(editor):
        text = call(tmp_path, "read_file", path="a.py").text_content()
    assert "in the buffer" in text and "second line" in text and "on disk" not in text
    assert editor.calls == [("read", tmp_path / "a.py")]
    # outside the block the disk is read again
    assert "on disk" in call(tmp_path, "read_file", path="a.py").text_content()


def test_edit_file_edits_the_buffer_and_writes_through_the_editor(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("x = 1\n")
    editor = Editor({target: "x = 1\ny = 2\n"})
    with editor_files(editor):
        result = call(tmp_path, "edit_file", path="a.py", old_string="y = 2", new_string="y = 3")
    assert result.data["diff"].count("+y = 3") == 1
    assert editor.buffers[target] == "x = 1\ny = 3\n"
    assert target.read_text() == "x = 1\ny = 3\n"  # saved by the editor
    assert ("write", target) in editor.calls


def test_write_file_creates_parents_and_goes_through_the_editor(tmp_path: Path) -> None:
    editor = Editor()
    with editor_files(editor):
        call(tmp_path, "write_file", path="new/dir/b.txt", content="hello\n")
    assert editor.calls == [("write", tmp_path / "new" / "dir" / "b.txt")]
    assert (tmp_path / "new" / "dir" / "b.txt").read_text() == "hello\n"


def test_an_editor_that_offers_neither_leaves_the_disk(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    editor = Editor({tmp_path / "a.txt": "buffer\n"}, read=False, write=False)
    with editor_files(editor):
        call(tmp_path, "edit_file", path="a.txt", old_string="one", new_string="two")
    assert (tmp_path / "a.txt").read_text() == "two\n" and editor.calls == []


def test_binary_and_non_utf8_files_never_go_to_the_editor(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 = 1\n")
    editor = Editor()
    with editor_files(editor):
        call(tmp_path, "edit_file", path="latin.txt", old_string="= 1", new_string="= 2")
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9 = 2\n"  # the byte kept, on disk
    assert editor.calls == []


def test_the_sandbox_still_refuses_paths_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside.txt").write_text("secret\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    editor = Editor()
    with editor_files(editor):
        for args in ({"path": "../outside.txt"}, {"path": "link.txt"}, {"path": str(tmp_path / "outside.txt")}):
            with pytest.raises(ToolError):
                call(ws, "write_file", content="x", **args)
            with pytest.raises(ToolError):
                call(ws, "read_file", **args)
    assert editor.calls == []
    assert (tmp_path / "outside.txt").read_text() == "secret\n"


def test_an_editor_failure_is_a_tool_error_and_nothing_is_written(tmp_path: Path) -> None:
    class Broken(Editor):
        def write_text(self, path: Path, text: str) -> bool:
            raise ToolError("the editor refused to save a.txt: read-only buffer")

    (tmp_path / "a.txt").write_text("one\n")
    with editor_files(Broken()), pytest.raises(ToolError, match="read-only buffer"):
        call(tmp_path, "edit_file", path="a.txt", old_string="one", new_string="two")
    assert (tmp_path / "a.txt").read_text() == "one\n"


async def test_a_run_inside_the_block_reaches_the_editor_from_its_tool_threads(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("v = 1\n")
    editor = Editor({target: "v = 1  # unsaved comment\n"})
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "edit_file", "input": {"path": "a.py", "old_string": "v = 1", "new_string": "v = 2"}}]},
        "done",
    ])
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_tools_filesystem],
                         permission="allow-all")
    with editor_files(editor):
        result = await agent.run("edit")
    assert result.status == "completed"
    assert target.read_text() == "v = 2  # unsaved comment\n"
    assert [c[0] for c in editor.calls] == ["read", "write"]
    # a thread started outside the block reads the disk
    editor.buffers[target] = "v = 3  # newer, unsaved\n"
    assert "v = 2" in await asyncio.to_thread(lambda: call(tmp_path, "read_file", path="a.py").text_content())
