"""A generated battery of hostile paths for every path-taking filesystem tool:
nothing outside the workspace is read, listed, written or deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_filesystem

from smoke_core.plugin import ToolDefinition, ToolError, ToolResult
from smoke_core.testing import make_tool_context

SECRET = "SENTINEL-7f3a9-do-not-leak"
NEIGHBOUR = "zz_neighbour_q9"


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


def build(tmp: Path) -> tuple[Path, Path]:
    ws, outside = tmp / "ws", tmp / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "sentinel.txt").write_text(f"{SECRET}\nline two\n")
    (outside / f"{NEIGHBOUR}.txt").write_text(f"{SECRET} neighbour\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "deep.txt").write_text(f"{SECRET} deep\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "inner.txt").write_text("inside\n")
    (ws / "readme.txt").write_text("hello\n")
    restore_links(ws, outside)
    return ws, outside


def restore_links(ws: Path, outside: Path) -> None:
    links = {
        "link_out": outside,
        "link_file": outside / "sentinel.txt",
        "chain1": ws / "chain2",
        "chain2": ws / "chain3",
        "chain3": "../outside",
        "loop1": ws / "loop2",
        "loop2": ws / "loop1",
        "sub/up": "../../outside/sub",
        "abs_root": Path("/"),
    }
    for name, target in links.items():
        link = ws / name
        if link.is_symlink() or link.exists():
            if link.is_symlink() and os.readlink(link) == str(target):
                continue
            if link.is_symlink() or link.is_file():
                link.unlink()
        link.symlink_to(target)


def snapshot(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, p.read_bytes() if p.is_file() else None)
    return out


def hostile_paths(ws: Path, outside: Path, *, for_writes: bool) -> list[str]:
    targets = [
        "../outside/sentinel.txt", "../../outside/sentinel.txt", "../outside", "..", "../", "../..",
        "../outside/sub/deep.txt", "../outside/new.txt",
        str(outside / "sentinel.txt"), str(outside), str(outside / "new.txt"), str(outside / "sub"),
        f"{ws}/../outside/sentinel.txt", f"{ws}/sub/../../outside/sentinel.txt",
        "link_out/sentinel.txt", "link_out", "link_out/new.txt", "link_out/sub/deep.txt", "link_file",
        "chain1", "chain1/sentinel.txt", "chain1/new.txt", "chain3/sentinel.txt", "sub/up/deep.txt", "sub/up",
        "loop1", "loop1/x", "abs_root/tmp", f"abs_root{outside}/sentinel.txt",
        "sub/../../outside/sentinel.txt", "./../outside/sentinel.txt", "sub/./../../outside/sentinel.txt",
        "~", "~/sentinel.txt", "~root/.bashrc", "~/../outside/sentinel.txt",
        "..%2Foutside%2Fsentinel.txt", "%2e%2e/outside/sentinel.txt", "%2e%2e%2foutside%2fsentinel.txt",
        "..%252Foutside%252Fsentinel.txt", "..\\outside\\sentinel.txt", "..\\..\\outside",
        "\u2025/outside/sentinel.txt", "\uff0e\uff0e/outside/sentinel.txt", "..\u2215outside\u2215sentinel.txt",
        "%c0%ae%c0%ae/outside/sentinel.txt", "\u202e../outside/sentinel.txt", "..\u200b/outside/sentinel.txt",
        "sentinel.txt\x00", "sub/\x00../../outside/sentinel.txt", "\x00", "../outside/sentinel.txt\x00.png",
        "\udcff../outside", "\ud800", "../outside/\udcffsentinel", "a" * 5000, "x/" * 3000,
        "../" * 40 + "etc/passwd", "/" + "../" * 10 + str(outside)[1:] + "/sentinel.txt",
        "file:///etc/passwd", "file://" + str(outside / "sentinel.txt"), " ../outside/sentinel.txt ",
        "\t../outside/sentinel.txt", "../outside/./sentinel.txt", "..//outside//sentinel.txt",
        "sub/../../../outside", "/proc/self/root" + str(outside / "sentinel.txt"), "/dev/null",
        "", " ", ".", "/", "//", str(ws), str(ws) + "/", "sub/../..",
    ]
    if not for_writes:
        targets += ["/etc/passwd", "/etc/shadow", "/proc/self/environ", "/proc/self/cwd/../outside", "/root"]
    prefixes = ["", "./", "sub/", "sub//./"]
    suffixes = ["", "/", "/."]
    out: list[str] = []
    for t in targets:
        out.append(t)
        if t.startswith(("/", "~", "\x00")) or not t.strip():
            continue
        for p in prefixes[1:]:
            out.append(p + t)
        for s in suffixes[1:]:
            out.append(t + s)
    return out


def _calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read_file", {"path": path}),
        ("read_file", {"path": path, "start_line": 1, "end_line": 5}),
        ("list_directory", {"path": path}),
        ("write_file", {"path": path, "content": "PWNED\n"}),
        ("edit_file", {"path": path, "old_string": "line two", "new_string": "PWNED"}),
        ("edit_file", {"path": path, "old_string": "", "new_string": "PWNED"}),
        ("replace_lines", {"path": path, "start_line": 1, "end_line": 1, "replacement": "PWNED"}),
        ("delete_file", {"path": path}),
        ("apply_patch", {"patch": f"*** Begin Patch\n*** Update File: {path}\n-line two\n+PWNED\n*** End Patch"}),
        ("apply_patch", {"patch": f"*** Begin Patch\n*** Add File: {path}\n+PWNED\n*** End Patch"}),
        ("apply_patch", {"patch": f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch"}),
        ("apply_patch", {"patch": f"--- a/{path}\n+++ b/{path}\n@@ -2 +2 @@\n-line two\n+PWNED\n"}),
        ("apply_patch", {"patch": f"*** Begin Patch\n*** Update File: readme.txt\n*** Move to: {path}\n-hello\n"
                                  f"+PWNED\n*** End Patch"}),
    ]


def _leaks(result: ToolResult | str) -> bool:
    if isinstance(result, str):
        text = result
    else:
        text = json.dumps(result.model_dump(), ensure_ascii=False, default=str)
    return SECRET in text or NEIGHBOUR in text or "root:x:0:0" in text


def _intact(path: Path) -> bool:
    try:
        return path.read_bytes() == b"hello\n"
    except OSError:
        return False


@pytest.mark.parametrize("tool_name", sorted(TOOLS))
def test_hostile_paths_never_leave_the_workspace(tmp_path: Path, tool_name: str):
    ws, outside = build(tmp_path)
    before = snapshot(outside)
    top_before = sorted(p.name for p in tmp_path.iterdir())
    paths = hostile_paths(ws, outside, for_writes=True) + (
        hostile_paths(ws, outside, for_writes=False) if TOOLS[tool_name].read_only else []
    )
    assert len(paths) >= 300
    calls = [(n, a) for p in paths for n, a in _calls(p) if n == tool_name]
    refused = 0
    for name, args in calls:
        tool = TOOLS[name]
        ctx = make_tool_context(ws, tool_name=name)
        try:
            outcome: ToolResult | str = tool.execute(args, ctx)
        except ToolError as exc:  # the only exception a tool may raise
            outcome = str(exc)
            refused += 1
        assert not _leaks(outcome), (name, args, outcome)
        restore_links(ws, outside)
        if TOOLS[name].read_only is False and not _intact(ws / "readme.txt"):
            (ws / "readme.txt").write_text("hello\n")
    assert snapshot(outside) == before, f"{tool_name} changed something outside the workspace"
    assert sorted(p.name for p in tmp_path.iterdir()) == top_before
    assert refused > len(calls) // 3


def test_refusal_names_the_workspace(tmp_path: Path):
    ws, outside = build(tmp_path)
    ctx = make_tool_context(ws, tool_name="read_file")
    for bad in ("../outside/sentinel.txt", "link_file", "chain1/sentinel.txt", str(outside / "sentinel.txt")):
        with pytest.raises(ToolError) as info:
            TOOLS["read_file"].execute({"path": bad}, ctx)
        assert str(ws) in str(info.value) and "outside the workspace" in str(info.value)
    with pytest.raises(ToolError, match="NUL byte"):
        TOOLS["write_file"].execute({"path": "a\x00b", "content": "x"}, ctx)
