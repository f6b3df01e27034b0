"""Each filesystem tool, called through its real ToolDefinition."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_filesystem

from smoke_core import FILE_MUTATING_TOOLS
from smoke_core.plugin import ToolDefinition, ToolError, ToolResult
from smoke_core.testing import make_tool_context


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


def call(ws: Path, name: str, events: list[Any] | None = None, **args: Any) -> ToolResult:
    tool = TOOLS[name]
    problem = tool.validate_input(args)
    assert problem is None, problem
    ctx = make_tool_context(ws, tool_name=name, events=events)
    result = tool.execute(args, ctx)
    assert isinstance(result, ToolResult)
    return result


def fails(ws: Path, name: str, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        call(ws, name, **args)
    return str(info.value)


# ---------------------------------------------------------------- registration


def test_registers_seven_tools_with_presentations():
    assert smoke_tools_filesystem.__all__ == ["TOOL_NAMES", "EditorFiles", "editor_files", "register_tools"]
    assert set(TOOLS) == set(smoke_tools_filesystem.TOOL_NAMES)
    for tool in TOOLS.values():
        assert tool.group == "filesystem"
        pres = tool.presentation_dict()
        assert pres["label"] and pres["icon"] and pres["tone"] and pres["group"] == "filesystem"
        assert tool.read_only == (tool.name not in FILE_MUTATING_TOOLS)
        assert tool.annotations.read_only_hint == (tool.name in ("read_file", "list_directory"))


def test_plugin_import_is_cheap():
    import subprocess
    import sys

    code = (
        "import sys, smoke_tools_filesystem; "
        "bad=[m for m in ('smoke_tools_filesystem._tools','jsonschema','httpx') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- read_file


def test_read_file_numbers_lines(tmp_path: Path):
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    result = call(tmp_path, "read_file", path="a.py")
    assert result.text_content() == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.data["total_lines"] == 3
    middle = call(tmp_path, "read_file", path="a.py", start_line=2, end_line=2).text_content()
    assert "     2\ttwo" in middle and "one" not in middle and "three" not in middle


def test_read_file_windows_huge_files(tmp_path: Path):
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    text = call(tmp_path, "read_file", path="big.txt").text_content()
    assert "  2000\tline 2000" in text and "line 2001" not in text
    assert "of 5000 shown" in text and "start_line=2001" in text
    tail = call(tmp_path, "read_file", path="big.txt", start_line=4999).text_content()
    assert "  5000\tline 5000" in tail and "start_line=" not in tail
    capped = call(tmp_path, "read_file", path="big.txt", start_line=1, end_line=4000)
    assert capped.data["end_line"] == 2000 and "start_line=2001" in capped.text_content()
    assert "past the end" in fails(tmp_path, "read_file", path="big.txt", start_line=6000)


def test_read_file_images_binary_and_bad_utf8(tmp_path: Path):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    (tmp_path / "pic.png").write_bytes(png)
    result = call(tmp_path, "read_file", path="pic.png")
    image = next(b for b in result.content if b["type"] == "image")
    assert image["mime_type"] == "image/png" and base64.b64decode(image["data"]) == png
    (tmp_path / "blob.bin").write_bytes(b"ELF\x00\x01\x02")
    assert "binary file" in fails(tmp_path, "read_file", path="blob.bin")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    latin = call(tmp_path, "read_file", path="latin.txt")
    assert "caf\ufffd" in latin.text_content() and "not valid UTF-8" in latin.text_content()
    assert latin.data["encoding_errors"] is True


def test_read_file_missing_suggests_close_matches(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.py").write_text("x = 1\n")
    message = fails(tmp_path, "read_file", path="src/confg.py")
    assert "does not exist" in message and "src/config.py" in message
    assert "directory" in fails(tmp_path, "read_file", path="src")


# ---------------------------------------------------------------- list_directory


def test_list_directory_pages(tmp_path: Path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x" * i)
    (tmp_path / "sub").mkdir()
    (tmp_path / "ln").symlink_to("f1.txt")
    text = call(tmp_path, "list_directory").text_content()
    assert "sub/" in text and "f0.txt  (0 B)" in text and "ln@" in text
    page = call(tmp_path, "list_directory", offset=2, limit=2)
    assert page.data["entries"] == ["f2.txt", "f3.txt"]
    assert "3 more entries not shown; call list_directory with offset=4" in page.text_content()
    assert "is a file" in fails(tmp_path, "list_directory", path="f1.txt")


# ---------------------------------------------------------------- write_file


def test_write_file_creates_parents_keeps_mode_and_returns_diff(tmp_path: Path):
    result = call(tmp_path, "write_file", path="deep/er/new.txt", content="hello\n")
    assert (tmp_path / "deep/er/new.txt").read_text() == "hello\n"
    assert result.data["created"] is True and "+hello" in result.data["diff"]
    script = tmp_path / "run.sh"
    script.write_text("old\n")
    script.chmod(0o751)
    result = call(tmp_path, "write_file", path="run.sh", content="new\n")
    assert script.read_text() == "new\n" and stat.S_IMODE(script.stat().st_mode) == 0o751
    assert "-old" in result.data["diff"] and "+new" in result.data["diff"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".smoke-tmp")]


def test_write_file_progress_for_large_writes(tmp_path: Path):
    events: list[Any] = []
    call(tmp_path, "write_file", events, path="big.txt", content="x" * (3 * 1024 * 1024))
    progress = [d for t, d in events if t == "tool.progress"]
    assert len(progress) >= 3 and progress[-1]["progress"] == progress[-1]["total"] == 3 * 1024 * 1024
    small: list[Any] = []
    call(tmp_path, "write_file", small, path="small.txt", content="x")
    assert small == []


def test_failed_write_leaves_file_as_it_was(tmp_path: Path):
    target = tmp_path / "keep.txt"
    target.write_text("original\n")
    assert "lone surrogates" in fails(tmp_path, "write_file", path="keep.txt", content="bad \ud800")
    assert target.read_text() == "original\n"
    os.chmod(tmp_path, 0o500)  # the temp file cannot be created
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores permissions
            pytest.skip("running as root: directory permissions are not enforced")
        fails(tmp_path, "write_file", path="keep.txt", content="new")
    finally:
        os.chmod(tmp_path, 0o700)
    assert target.read_text() == "original\n"


# ---------------------------------------------------------------- edit_file


def test_edit_file_exact_unique_match(tmp_path: Path):
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    result = call(tmp_path, "edit_file", path="m.py", old_string="return 1", new_string="return 2")
    assert (tmp_path / "m.py").read_text() == "def f():\n    return 2\n"
    assert "-    return 1" in result.data["diff"] and "+    return 2" in result.data["diff"]


def test_edit_file_several_matches_named_and_replace_all(tmp_path: Path):
    (tmp_path / "m.py").write_text("x = 1\ny = 2\nx = 1\n")
    message = fails(tmp_path, "edit_file", path="m.py", old_string="x = 1", new_string="x = 3")
    assert "2 times" in message and "lines 1, 3" in message and "replace_all" in message
    assert (tmp_path / "m.py").read_text() == "x = 1\ny = 2\nx = 1\n"
    call(tmp_path, "edit_file", path="m.py", old_string="x = 1", new_string="x = 3", replace_all=True)
    assert (tmp_path / "m.py").read_text() == "x = 3\ny = 2\nx = 3\n"


def test_edit_file_not_found_shows_nearest_region(tmp_path: Path):
    body = "".join(f"line {i}\n" for i in range(40)) + "def compute(a, b):\n    return a + b\n"
    (tmp_path / "m.py").write_text(body)
    message = fails(tmp_path, "edit_file", path="m.py", old_string="def compute(a,b):\n  return a+b",
                    new_string="x")
    assert "not found" in message and "    41\tdef compute(a, b):" in message


def test_edit_file_keeps_crlf_and_reports_already_applied(tmp_path: Path):
    target = tmp_path / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    call(tmp_path, "edit_file", path="win.txt", old_string="one\ntwo", new_string="uno\ndos")
    assert target.read_bytes() == b"uno\r\ndos\r\nthree\r\n"
    again = call(tmp_path, "edit_file", path="win.txt", old_string="one\ntwo", new_string="uno\ndos")
    assert again.is_error is False and "already applied" in again.text_content()
    assert again.data["already_applied"] is True and target.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_edit_file_keeps_undecodable_bytes_and_creates_with_empty_old(tmp_path: Path):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9 = 1\n")
    call(tmp_path, "edit_file", path="latin.txt", old_string="= 1", new_string="= 2")
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9 = 2\n"
    call(tmp_path, "edit_file", path="fresh/new.txt", old_string="", new_string="hi\n")
    assert (tmp_path / "fresh/new.txt").read_text() == "hi\n"
    assert "empty" in fails(tmp_path, "edit_file", path="fresh/new.txt", old_string="", new_string="x")


# ---------------------------------------------------------------- replace_lines / delete_file


def test_replace_lines_replace_insert_append_delete(tmp_path: Path):
    target = tmp_path / "t.txt"
    target.write_text("a\nb\nc\n")
    call(tmp_path, "replace_lines", path="t.txt", start_line=2, end_line=2, replacement="B1\nB2")
    assert target.read_text() == "a\nB1\nB2\nc\n"
    call(tmp_path, "replace_lines", path="t.txt", start_line=1, end_line=0, replacement="top")
    assert target.read_text() == "top\na\nB1\nB2\nc\n"
    call(tmp_path, "replace_lines", path="t.txt", start_line=6, end_line=5, replacement="end\n")
    assert target.read_text() == "top\na\nB1\nB2\nc\nend\n"
    result = call(tmp_path, "replace_lines", path="t.txt", start_line=2, end_line=4, replacement="")
    assert target.read_text() == "top\nc\nend\n" and "-B1" in result.data["diff"]
    assert "out of range" in fails(tmp_path, "replace_lines", path="t.txt", start_line=9, end_line=9,
                                   replacement="x")
    crlf = tmp_path / "w.txt"
    crlf.write_bytes(b"a\r\nb")
    call(tmp_path, "replace_lines", path="w.txt", start_line=2, end_line=2, replacement="B\nC")
    assert crlf.read_bytes() == b"a\r\nB\r\nC"


def test_delete_file(tmp_path: Path):
    (tmp_path / "gone.txt").write_text("bye\n")
    result = call(tmp_path, "delete_file", path="gone.txt")
    assert not (tmp_path / "gone.txt").exists() and "-bye" in result.data["diff"]
    (tmp_path / "d").mkdir()
    assert "directory" in fails(tmp_path, "delete_file", path="d")
    assert "does not exist" in fails(tmp_path, "delete_file", path="gone.txt")
    (tmp_path / "target.txt").write_text("stay\n")
    (tmp_path / "alias").symlink_to("target.txt")
    call(tmp_path, "delete_file", path="alias")
    assert not (tmp_path / "alias").is_symlink() and (tmp_path / "target.txt").read_text() == "stay\n"


def _noisy_png(width: int, height: int) -> bytes:
    """A PNG that does not compress (random pixels), so its size follows its area."""
    import io

    from PIL import Image

    img = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def test_read_file_scales_a_large_image_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import io

    from PIL import Image
    from smoke_tools_filesystem import _read

    monkeypatch.setattr(_read, "MAX_IMAGE_BYTES", 200_000)
    big = _noisy_png(1200, 800)  # ~2.9 MB of incompressible pixels; even as JPEG too big
    assert len(big) > 200_000
    (tmp_path / "shot.png").write_bytes(big)
    result = call(tmp_path, "read_file", path="shot.png")
    image = next(b for b in result.content if b["type"] == "image")
    sent = base64.b64decode(image["data"])
    assert len(sent) <= 200_000 and result.data["sent_bytes"] == len(sent) and result.data["bytes"] == len(big)
    scaled = Image.open(io.BytesIO(sent))
    assert scaled.size[0] < 1200 and scaled.size[1] < 800
    assert abs(scaled.size[0] / scaled.size[1] - 1.5) < 0.05  # the aspect ratio is kept
    assert "scaled down to" in result.text_content() and "1200x800" in result.text_content()
    # a small image is sent untouched
    small = _noisy_png(40, 40)
    (tmp_path / "icon.png").write_bytes(small)
    icon = next(b for b in call(tmp_path, "read_file", path="icon.png").content if b["type"] == "image")
    assert base64.b64decode(icon["data"]) == small


def test_read_file_large_image_without_pillow_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import sys

    from smoke_tools_filesystem import _read

    monkeypatch.setattr(_read, "MAX_IMAGE_BYTES", 1000)
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now raises ImportError
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(5000))
    message = fails(tmp_path, "read_file", path="shot.png")
    assert "more than the 1000 bytes" in message and "install Pillow" in message


def test_read_file_damaged_or_huge_image_is_refused_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from smoke_tools_filesystem import _read

    monkeypatch.setattr(_read, "MAX_IMAGE_BYTES", 1000)
    (tmp_path / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(5000))
    assert "could not be read as an image" in fails(tmp_path, "read_file", path="cut.png")
    monkeypatch.setattr(_read, "MAX_SCALABLE_IMAGE_BYTES", 2000)
    assert "too large to send or to scale down" in fails(tmp_path, "read_file", path="cut.png")
