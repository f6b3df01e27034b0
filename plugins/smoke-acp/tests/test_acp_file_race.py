"""Issue 28's reproduction 6, as an attacker would try it: `smoke acp` checked
and pinned a path, then asked the editor to read it *by path*; with a folder
swapped for a symlink to ~/.aws meanwhile, the editor returned the
credentials. Now a changed path returns nothing from outside the workspace,
and while a background command of the agent runs (the model's way to race a
path) the editor is not asked at all: the tools use their pinned descriptor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ReadTextFileResponse, TextContentBlock, WriteTextFileResponse

SECRET = "aws_secret_access_key = AKIAOUTSIDE0123456789"


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


def layout(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "notes.txt").write_text("inside the workspace\n")
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "notes.txt").write_text(SECRET + "\n")
    return ws, outside


async def session(agent: Any, ws: Path) -> str:
    await agent.initialize(fs=True)
    return (await agent.conn.new_session(cwd=str(ws), mcp_servers=[])).session_id


def results(client: Any) -> list[str]:
    return [c.content.text for u in client.of("tool_call_update") for c in (u.content or []) if c.type == "content"]


async def test_a_folder_swapped_for_a_symlink_during_the_editors_read_returns_nothing(
        tmp_path: Path, spawn: Any, monkeypatch: pytest.MonkeyPatch, client_class: Any) -> None:
    ws, outside = layout(tmp_path)

    async def racing_read(self: Any, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        # the worst moment: after Smoke's check, before the editor opens the path by name
        os.rename(ws / "docs", ws / "docs.real")
        os.symlink(outside, ws / "docs")
        self.reads.append(path)
        return ReadTextFileResponse(content=Path(path).read_text())  # an editor follows the link

    monkeypatch.setattr(client_class, "read_text_file", racing_read)  # before the connection binds its handlers
    agent = await spawn(ws, [{"tool_calls": [{"name": "read_file", "input": {"path": "docs/notes.txt"}}]}, "done"])
    client = agent.client
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("read the notes")])
    assert client.reads == [str(ws / "docs" / "notes.txt")]  # the editor was asked, and did read outside
    shown = "\n".join(results(client)) + client.text()
    assert "AKIAOUTSIDE" not in shown  # ... but nothing of it came back
    assert "changed while the editor read it" in shown and "nothing was read" in shown
    assert await agent.stop() == 0
    agent.validate()


async def test_while_a_background_command_runs_the_editor_is_not_asked(tmp_path: Path, spawn: Any) -> None:
    ws, _ = layout(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "docs/notes.txt", "old_string": "inside", "new_string": "still inside"}}
    turns = [{"tool_calls": [{"name": "run_command", "input": {"command": "sleep 300", "background": True}}]},
             {"tool_calls": [{"name": "read_file", "input": {"path": "docs/notes.txt"}}]},
             {"tool_calls": [edit]}, "done"]
    agent = await spawn(ws, turns)
    client = agent.client
    client.buffers[str(ws / "docs" / "notes.txt")] = "an unsaved buffer\n"
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("serve, then read and edit")])
    assert client.reads == [] and client.writes == []  # pinned descriptors only: no swap can steer them
    assert any("inside the workspace" in r for r in results(client))  # the disk, not the buffer
    assert (ws / "docs" / "notes.txt").read_text() == "still inside the workspace\n"
    assert await agent.stop() == 0
    agent.validate()


async def test_a_write_whose_path_changed_under_the_editor_says_so(tmp_path: Path, spawn: Any,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  client_class: Any) -> None:
    ws, outside = layout(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "docs/notes.txt", "old_string": "inside", "new_string": "edited"}}

    async def racing_write(self: Any, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        os.rename(ws / "docs", ws / "docs.real")
        os.symlink(outside, ws / "docs")
        self.writes.append((path, content))
        return WriteTextFileResponse()  # (this editor writes nothing: the check is what is under test)

    monkeypatch.setattr(client_class, "write_text_file", racing_write)
    agent = await spawn(ws, [{"tool_calls": [edit]}, "done"])
    client = agent.client
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("edit")])
    assert len(client.writes) == 1
    shown = "\n".join(results(client))
    assert "changed while the editor wrote it" in shown and "may have written elsewhere" in shown
    assert (outside / "notes.txt").read_text() == SECRET + "\n"
    assert await agent.stop() == 0
    agent.validate()


async def test_reads_and_writes_through_the_editor_still_work(tmp_path: Path, spawn: Any) -> None:
    ws, _ = layout(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "docs/notes.txt", "old_string": "unsaved", "new_string": "saved"}}
    agent = await spawn(ws, [{"tool_calls": [{"name": "read_file", "input": {"path": "docs/notes.txt"}}]},
                             {"tool_calls": [edit]}, "done"])
    client = agent.client
    client.buffers[str(ws / "docs" / "notes.txt")] = "an unsaved buffer\n"
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("read and edit")])
    assert any("an unsaved buffer" in r for r in results(client))
    assert client.writes == [(str(ws / "docs" / "notes.txt"), "an saved buffer\n")]
    assert await agent.stop() == 0
    agent.validate()
