"""The check-then-use race (issue 21): while a second process keeps swapping
a workspace folder for a symlink to an outside folder, no read, listing or
write may reach outside. Before the fix, 27 of 2,000 reads returned the
outside file and 9 of 2,000 writes landed outside."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import smoke_tools_filesystem

from smoke_core.plugin import ToolDefinition, ToolError
from smoke_core.testing import make_tool_context

CANARY = "OUTSIDE-CANARY-3c9e"
CALLS = 2000

# Swaps ws/d (a real folder) with a symlink to the outside folder and back, as
# fast as it can, until it is killed. Each swap is one atomic exchange
# (renameat2 RENAME_EXCHANGE), so ``d`` always exists: a folder or a link.
FLIPPER = r"""
import ctypes, os, sys
d, link, outside = sys.argv[1:4]
os.symlink(outside, link)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = os.fsencode(d), os.fsencode(link)
print("ready", flush=True)
while True:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
"""


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_filesystem.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


@pytest.fixture
def racing(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text(f"{CANARY}\n")
    (outside / f"{CANARY}.txt").write_text("x\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(ws / "d"), str(ws / "d.link"), str(outside)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield ws, outside
        assert proc.poll() is None, "the flipping process stopped early"
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def _call(ws: Path, name: str, args: dict[str, object]) -> str:
    try:
        return TOOLS[name].execute(args, make_tool_context(ws, tool_name=name)).text_content()
    except ToolError as exc:
        return f"error: {exc}"


@pytest.mark.slow
def test_reads_and_listings_never_escape_while_a_folder_flips(racing: tuple[Path, Path]):
    ws, _ = racing
    outcomes: Counter[str] = Counter()
    for i in range(CALLS):
        name, args = ("read_file", {"path": "d/f.txt"}) if i % 2 else ("list_directory", {"path": "d"})
        text = _call(ws, name, args)
        if CANARY in text:
            outcomes["escaped"] += 1
        elif text.startswith("error:"):
            outcomes["refused"] += 1
        else:
            outcomes["inside"] += 1
    assert outcomes["escaped"] == 0, outcomes
    # the race really ran: some calls met the symlink (refused), others the folder (worked)
    assert outcomes["refused"] > 0 and outcomes["inside"] > 0, outcomes


@pytest.mark.slow
def test_writes_never_land_outside_while_a_folder_flips(racing: tuple[Path, Path]):
    ws, outside = racing
    before = sorted(p.name for p in outside.iterdir())
    outcomes: Counter[str] = Counter()
    for i in range(CALLS):
        text = _call(ws, "write_file", {"path": "d/w.txt", "content": f"write {i}\n"})
        outcomes["refused" if text.startswith("error:") else "written"] += 1
    assert sorted(p.name for p in outside.iterdir()) == before, "a write landed outside the workspace"
    assert (outside / "f.txt").read_text() == f"{CANARY}\n"
    assert outcomes["written"] > 0 and outcomes["refused"] > 0, outcomes
