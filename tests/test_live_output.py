"""Live command output that skips lines says so (``… 37 lines skipped …``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoke_core import create_agent, tool
from smoke_core.cli.render import LIVE_LINES, TerminalUI
from smoke_core.testing import ScriptedProvider


@tool(read_only=True)
def noisy(lines: int, ctx) -> str:  # type: ignore[no-untyped-def]
    """Print lines."""
    ctx.emit_output("".join(f"line {i}\n" for i in range(1, lines + 1)))
    return f"printed {lines}"


async def _shown(tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: int) -> list[str]:
    agent = create_agent(tmp_path, provider=ScriptedProvider(
        [{"tool_calls": [{"name": "noisy", "input": {"lines": lines}}]}, "done"]), tools=[noisy])
    agent.on_any(TerminalUI(agent, approve="deny").handle)
    try:
        await agent.run("go")
    finally:
        await agent.aclose()
    return [ln.strip() for ln in capsys.readouterr().out.splitlines() if "│" in ln]


async def test_a_burst_longer_than_the_view_marks_what_it_skips(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    shown = await _shown(tmp_path, capsys, 42)
    assert shown[0] == f"│ … {42 - LIVE_LINES} lines skipped …"
    assert shown[1:] == [f"│ line {i}" for i in range(42 - LIVE_LINES + 1, 43)]


async def test_a_short_burst_is_shown_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = await _shown(tmp_path, capsys, LIVE_LINES)
    assert shown == [f"│ line {i}" for i in range(1, LIVE_LINES + 1)]
    assert not any("skipped" in ln for ln in shown)


async def test_one_skipped_line_is_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = await _shown(tmp_path, capsys, LIVE_LINES + 1)
    assert shown[0] == "│ … 1 line skipped …"
