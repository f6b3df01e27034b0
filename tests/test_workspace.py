from __future__ import annotations

import os

import pytest

from smoke_core import Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x")
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", root / "link_out")
    os.symlink(root / "src", root / "link_in")
    os.symlink(root / "link_out", root / "chain")
    return Workspace(root)


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "link_out", "chain", "~/x", "a\x00b",
     "src/../../root/../outside.txt"],
)
def test_refused(ws, path):
    with pytest.raises(WorkspaceError) as exc:
        ws.resolve(path)
    assert str(ws.root) in str(exc.value)


@pytest.mark.parametrize("path,rel", [("src/a.py", "src/a.py"), ("./src/../src/a.py", "src/a.py"),
                                      ("link_in/a.py", "src/a.py"), ("", "."), (".", "."), ("new/file.txt", "new/file.txt")])
def test_allowed(ws, path, rel):
    assert ws.relative(ws.resolve(path)) == rel


def test_absolute_inside_is_allowed(ws):
    assert ws.resolve(str(ws.root / "src" / "a.py")) == ws.root / "src" / "a.py"


def test_extra_read_root_is_read_only(ws, tmp_path):
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "ref.md").write_text("r")
    ws.allow_read(skill)
    assert ws.resolve(str(skill / "ref.md")) == skill / "ref.md"
    with pytest.raises(WorkspaceError):
        ws.resolve(str(skill / "ref.md"), write=True)
    with pytest.raises(WorkspaceError):
        ws.resolve(str(tmp_path / "outside.txt"))


def test_non_string(ws):
    with pytest.raises(WorkspaceError, match="string"):
        ws.resolve(42)  # type: ignore[arg-type]
