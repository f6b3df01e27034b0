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


# ---------------------------------------------------------------- open_path (issue 21, row 2)


def test_open_path_pins_the_folder(ws, tmp_path):
    with ws.open_path("link_in/a.py") as wp:
        assert wp.path == ws.root / "src" / "a.py" and wp.name == "a.py"
        assert wp.read_bytes() == b"x"
        # the name swapped for a symlink after pinning: the descriptor is refused, not followed
        os.rename(ws.root / "src" / "a.py", ws.root / "src" / "a.moved")
        os.symlink(tmp_path / "outside.txt", ws.root / "src" / "a.py")
        with pytest.raises(WorkspaceError, match="changed while it was being opened"):
            wp.read_bytes()


def test_open_path_refuses_a_folder_swapped_after_resolution(ws, tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.py").write_text("outside")
    real_resolve = ws.resolve
    calls = []

    def resolve_then_swap(path, *, write=False):
        calls.append(path)
        resolved = real_resolve(path, write=write)
        if (ws.root / "src").is_dir() and not (ws.root / "src").is_symlink():
            os.rename(ws.root / "src", ws.root / "src.parked")
            os.symlink(tmp_path / "elsewhere", ws.root / "src")
        return resolved

    monkeypatch.setattr(ws, "resolve", resolve_then_swap)
    # the walk meets the symlink and starts again; resolving again then sees where it leads
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.open_path("src/a.py")
    assert len(calls) == 2


def test_open_path_makes_parents_and_leaves_links_alone(ws):
    with ws.open_path("new/deeper/file.txt", write=True, make_parents=True) as wp:
        assert wp.lstat() is None
    assert (ws.root / "new" / "deeper").is_dir()
    with pytest.raises(FileNotFoundError):
        ws.open_path("missing/file.txt", write=True)
    with ws.open_path("link_out", write=True, follow_leaf=False) as wp:
        assert wp.name == "link_out" and wp.lstat() is not None
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.open_path("link_out", write=True)
    with pytest.raises(NotADirectoryError, match=r"a\.py is a file, not a folder"):
        ws.open_path("src/a.py/inner", write=True)


def test_open_path_in_a_read_root_is_read_only(ws, tmp_path):
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "ref.md").write_text("r")
    ws.allow_read(skill)
    with ws.open_path(str(skill / "ref.md")) as wp:
        assert wp.read_bytes() == b"r"
    with pytest.raises(WorkspaceError):
        ws.open_path(str(skill / "ref.md"), write=True)
