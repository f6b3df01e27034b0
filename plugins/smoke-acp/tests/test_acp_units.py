"""The pieces of smoke-acp that need no process: framing checks, the
translation of events and stored sessions into ACP updates, prompt content,
the editor's MCP servers, and the permission modes."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
import smoke_acp
from acp import RequestError
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    ResourceContentBlock,
    SessionNotification,
    TextContentBlock,
    TextResourceContents,
)
from smoke_acp import _updates as U
from smoke_acp._agent import mcp_config, task_parts
from smoke_acp._session import ACPSession
from smoke_acp._transport import StdioTransport, problem

from smoke_core import Image

from .conftest import strict

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def test_public_names() -> None:
    assert smoke_acp.__all__ == ["register_commands", "register_settings"]


# ---------------------------------------------------------------- framing


@pytest.mark.parametrize(("message", "code"), [
    ([1, 2], -32600), (42, -32600), ("text", -32600), ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}, -32600),
    ({"jsonrpc": "1.0", "id": 1, "method": "x"}, -32600), ({"jsonrpc": "2.0", "id": 1, "method": ""}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3}, -32600), ({"jsonrpc": "2.0", "id": 1}, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "x"}, -32600),
])
def test_malformed_messages_get_invalid_request(message: Any, code: int) -> None:
    answer = problem(message)
    assert answer is not None and answer["error"]["code"] == code and answer["jsonrpc"] == "2.0"


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, {"jsonrpc": "2.0", "method": "session/cancel"},
    {"jsonrpc": "2.0", "id": "x", "result": {}}, {"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "m"}},
])
def test_well_formed_messages_pass(message: Any) -> None:
    assert problem(message) is None


async def test_the_transport_answers_bad_lines_and_returns_good_ones() -> None:
    reader = asyncio.StreamReader()
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    transport = StdioTransport(reader, write)
    reader.feed_data(b'not json\n\n[1]\n{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}\n'
                     b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
    reader.feed_eof()
    first = await transport.receive()
    second = await transport.receive()  # the last line has no newline: still read
    assert first is not None and first["id"] == 5 and second is not None and second["method"] == "session/cancel"
    assert await transport.receive() is None
    codes = [json.loads(line)["error"]["code"] for line in written]
    assert codes == [-32700, -32600] and all(json.loads(line)["id"] is None for line in written)


# ---------------------------------------------------------------- updates


class FakeTool:
    def __init__(self, kind: str, permission_key: str | None = "path", title: str = "Edit file") -> None:
        self.kind = kind
        self.permission_key = permission_key
        self.annotations = type("A", (), {"title": title})()


def read_from(root: Path) -> Any:
    def read(raw: str) -> tuple[Path, str | None] | None:
        path = (root / raw).resolve()
        return path, path.read_text() if path.is_file() else None

    return read


def update_ok(update: Any) -> None:
    note = SessionNotification(session_id="s", update=update).model_dump(mode="json", by_alias=True,
                                                                         exclude_none=True)
    strict(SessionNotification, note, "update")


def test_an_edit_starts_with_its_diff_and_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    start = U.tool_call_start("c1", FakeTool("edit"), "edit_file",
                              {"path": "a.py", "old_string": "y = 2", "new_string": "y = 20"}, None,
                              read_from(tmp_path))
    assert start.kind == "edit" and start.title == "Edit file a.py" and start.status == "pending"
    assert start.locations[0].path == str(tmp_path / "a.py") and start.locations[0].line == 2
    [diff] = start.content
    assert (diff.type, diff.old_text, diff.new_text) == ("diff", "y = 2", "y = 20")
    update_ok(start)


def test_write_file_diffs_against_the_current_file_and_a_new_file_has_no_old_side(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    read = read_from(tmp_path)
    start = U.tool_call_start("c", FakeTool("edit", title="Write file"), "write_file",
                              {"path": "a.txt", "content": "new\n"}, {"label": "Write file"}, read)
    assert (start.content[0].old_text, start.content[0].new_text) == ("old\n", "new\n")
    start = U.tool_call_start("c", FakeTool("edit"), "write_file", {"path": "b.txt", "content": "x"}, None, read)
    assert start.content[0].old_text is None
    update_ok(start)


def test_replace_lines_shows_the_lines_it_replaces(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n4\n")
    start = U.tool_call_start("c", FakeTool("edit"), "replace_lines",
                              {"path": "a.txt", "start_line": 2, "end_line": 3, "replacement": "two\nthree\n"}, None,
                              read_from(tmp_path))
    assert start.locations[0].line == 2
    assert (start.content[0].old_text, start.content[0].new_text) == ("2\n3\n", "two\nthree\n")


def test_a_command_title_is_whole_and_visible() -> None:
    command = "ls\x1b[2J" + " " * 40 + "; rm -rf x"
    start = U.tool_call_start("c", FakeTool("execute", permission_key="command", title="Run command"),
                              "run_command", {"command": command}, {"label": "Run command"}, lambda raw: None)
    assert start.title == "Run command: `ls␛[2J⟨40 spaces⟩; rm -rf x`"
    assert start.kind == "execute" and "\x1b" not in start.content[0].content.text
    update_ok(start)


def test_approval_content_warns_and_shows_everything() -> None:
    content = U.approval_content("run_command", {"command": "a\u202eb" + "c" * 3000}, "asks by rule", [])
    texts = [c.content.text for c in content]
    assert "asks by rule" in texts[0] and "invisible" in texts[0] and "long input" in texts[0]
    assert "⟨RLO⟩" in texts[-1] and "c" * 3000 in texts[-1]


def test_approval_content_shows_a_commands_env_whole_and_marked() -> None:
    """Issue 28: the env that reaches the shell is approved with the command, so it is shown."""
    content = U.approval_content("run_command", {"command": "ls -la", "env": {"GREETING": "hi\u3164", "X": "\x1bM"}},
                                 None, [])
    texts = [c.content.text for c in content]
    env_block = next(t for t in texts if t.startswith("with env (2 variables, approved with the command)"))
    assert "GREETING=hi⟨U+3164⟩" in env_block and "X=␛M" in env_block
    assert "2 control or invisible" in texts[0]


def test_results_plan_and_fences() -> None:
    done = U.tool_call_done("c", is_error=False, content=[
        {"type": "text", "text": "ok ``` not a fence end"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"}])
    assert done.status == "completed" and done.content[0].content.text.startswith("````")
    assert done.content[1].content.type == "image"
    update_ok(done)
    plan = U.plan_update([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "cancelled"}])
    assert [(e.content, e.status) for e in plan.entries] == [("a", "in_progress"), ("(cancelled) b", "completed")]
    update_ok(plan)
    progress = U.output_progress("c", "x" * (U.OUTPUT_TAIL_CHARS + 10))
    assert "10 earlier characters not shown" in progress.content[0].content.text


def test_replay_turns_a_stored_session_into_updates(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("v = 2\n")
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "fix it"},
                                     {"type": "image", "data": "aGk=", "mime_type": "image/png"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "text": "hmm"}, {"type": "text", "text": "Editing."},
            {"type": "tool_call", "id": "c1", "name": "edit_file",
             "input": {"path": "a.py", "old_string": "v = 1", "new_string": "v = 2"}},
            {"type": "tool_call", "id": "c2", "name": "todo_write",
             "input": {"todos": [{"content": "fix", "status": "completed"}]}}]},
        {"role": "tool", "content": [
            {"type": "tool_result", "tool_call_id": "c1", "is_error": False, "content": [{"type": "text", "text": "Edited"}]},
            {"type": "tool_result", "tool_call_id": "c2", "is_error": False, "content": [{"type": "text", "text": "ok"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    tools = {"edit_file": FakeTool("edit"), "todo_write": FakeTool("think", permission_key=None)}
    updates = U.replay(messages, tools.get, lambda raw: ((tmp_path / raw), None))
    kinds = [u.session_update for u in updates]
    assert kinds == ["user_message_chunk", "user_message_chunk", "agent_thought_chunk", "agent_message_chunk",
                     "tool_call", "tool_call_update", "tool_call", "tool_call_update", "plan", "agent_message_chunk"]
    edit = updates[4]
    assert edit.status == "completed" and edit.content[0].old_text == "v = 1"
    assert updates[5].content[0].type == "diff"  # the diff stays with the result
    for update in updates:
        update_ok(update)


# ---------------------------------------------------------------- prompts and MCP servers


def test_prompt_blocks_become_task_parts() -> None:
    parts = task_parts([
        TextContentBlock(type="text", text="look"),
        ImageContentBlock(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/a.py"),
        EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(uri="file:///w/b.py", text="B")),
        EmbeddedResourceContentBlock(type="resource", resource=BlobResourceContents(uri="file:///w/c.bin", blob="AA==",
                                                                                    mime_type="application/zip")),
    ])
    assert parts[0] == "look" and isinstance(parts[1], Image) and parts[1].mime_type == "image/png"
    assert parts[2] == "[a.py: file:///w/a.py]" and parts[3] == '<context uri="file:///w/b.py">\nB\n</context>'
    assert "not shown" in parts[4]
    for bad in ([ImageContentBlock(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")],
                [TextContentBlock(type="text", text="x"), ImageContentBlock(type="image", data="!!", mime_type="image/png")],
                [TextContentBlock(type="text", text="x"), ImageContentBlock(type="image", data="aGk=", mime_type="image/png")]):
        with pytest.raises(RequestError):
            task_parts(bad)


def test_the_editors_mcp_servers_become_smoke_mcp_entries() -> None:
    servers, problems = mcp_config([
        McpServerStdio(name="a", command="/bin/a", args=["-x"], env=[EnvVariable(name="K", value="v")]),
        HttpMcpServer(type="http", name="b", url="http://127.0.0.1:1/mcp", headers=[HttpHeader(name="H", value="1")]),
        McpServerStdio(name="c", command="/bin/c", args=["${GITHUB_TOKEN}"], env=[]),
        McpServerStdio(name="a", command="/bin/other", args=[], env=[]),
    ])
    assert servers == {"a": {"command": "/bin/a", "args": ["-x"], "env": {"K": "v"}},
                       "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"H": "1"}}}
    assert len(problems) == 2 and "'c'" in problems[0] and "two MCP servers named 'a'" in problems[1]


# ---------------------------------------------------------------- modes


def test_each_mode_is_one_of_smokes_permission_modes(tmp_path: Path) -> None:
    from smoke_acp._session import CORE_MODE, MODE_OF_SETTING, MODES

    from smoke_core import PermissionGate

    assert set(CORE_MODE) == set(MODES) and {MODE_OF_SETTING[v] for v in CORE_MODE.values()} == set(MODES)
    for core in CORE_MODE.values():
        PermissionGate(core)  # each is a mode the gate decides with (tests/test_plan_mode.py: what each allows)
    assert CORE_MODE["read-only"] == "deny-all" and CORE_MODE["ask"] == "ask-default"
    fixed = ACPSession(session_id="s", cwd=tmp_path, conn=None, client_caps=None, mode="read-only",
                       fixed_mode="/etc/smoke/managed.yaml", models=[], trusted=True)
    assert [m.id for m in fixed.mode_state().available_modes] == ["read-only"]
    with pytest.raises(RequestError):
        fixed.set_mode("allow-all")
