"""``smoke acp`` driven by the SDK's client over real pipes: sessions, load,
cancel, malformed input, closing stdin, MCP servers from the editor, images,
modes, the editor's file system and what an approval shows."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from acp import RequestError
from acp.schema import EnvVariable, ImageContentBlock, McpServerStdio, TextContentBlock

from .conftest import all_gone, marker, with_marker

pytestmark = pytest.mark.slow

PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                  "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
).decode()


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("first line\nsecond line\n")
    return ws


async def session(agent, ws: Path, **kw) -> str:
    await agent.initialize(**kw)
    return (await agent.conn.new_session(cwd=str(ws), mcp_servers=[])).session_id


# ---------------------------------------------------------------- cancel and closing


async def test_cancel_mid_tool_kills_the_commands_process_group(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    m = marker()
    command = f"echo started; sleep {m} & sleep {m}; wait"
    agent = await spawn(ws, [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "never"])
    sid = await session(agent, ws)
    await agent.conn.set_session_mode(session_id=sid, mode_id="allow-all")
    prompt = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("run it")]))
    client = agent.client
    await client.wait_for(lambda: any("started" in c.content.text for u in client.of("tool_call_update")
                                      for c in (u.content or []) if c.type == "content"))
    assert len(with_marker(m)) >= 2  # the command's two sleeps are running
    await agent.conn.cancel(session_id=sid)
    response = await asyncio.wait_for(prompt, 30)
    assert response.stop_reason == "cancelled"
    assert await all_gone(m), "a process of the cancelled command survived"
    failed = [u for u in client.of("tool_call_update") if u.status == "failed"]
    assert failed, "the cancelled call was not reported as ended"
    assert await agent.stop() == 0
    assert not client.permissions  # allow-all: nothing was asked
    agent.validate()


async def test_closing_stdin_ends_the_agent_and_its_children(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    m = marker()
    server = tmp_path / "mcp_server.py"
    server.write_text(MCP_SERVER)
    agent = await spawn(ws, [{"tool_calls": [{"name": "run_command", "input": {"command": f"echo go; sleep {m}"}}]}])
    await agent.initialize()
    mcp = McpServerStdio(name="notes", command=sys.executable, args=[str(server), m], env=[])
    sid = (await agent.conn.new_session(cwd=str(ws), mcp_servers=[mcp])).session_id
    await agent.conn.set_session_mode(session_id=sid, mode_id="allow-all")
    prompt = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text("go")]))
    client = agent.client
    await client.wait_for(lambda: any("go" in c.content.text for u in client.of("tool_call_update")
                                      for c in (u.content or []) if c.type == "content"))
    assert len(with_marker(m)) >= 2  # the MCP server and the command
    assert await agent.stop() == 0  # stdin closed: the agent exits by itself
    assert await all_gone(m), "the MCP server or the command outlived smoke acp"
    # the pending prompt ended with the connection (answered "cancelled" on the way out, or cut off)
    assert prompt.done() and (prompt.exception() is not None or prompt.result().stop_reason == "cancelled")
    assert agent.validate() > 0  # every line it wrote before it exited


# ---------------------------------------------------------------- malformed input


async def test_malformed_json_rpc_and_unknown_methods_get_errors_and_the_agent_keeps_serving(
        tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    agent = await spawn(ws, ["still here"])
    await agent.raw(b"this is not json\n")
    await agent.raw(b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]\n')
    await agent.raw(b"42\n")
    await agent.raw(b'{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}\n')
    await agent.raw(b'{"jsonrpc":"2.0","id":"a","method":7}\n')
    await agent.raw(b'{"jsonrpc":"2.0","id":"b","method":"no/such/method","params":{}}\n')
    await agent.raw(b'{"jsonrpc":"2.0","method":"no/such/notification","params":{}}\n')
    await agent.raw(b'{"jsonrpc":"2.0","id":"c","method":"session/new","params":{"cwd":"relative"}}\n')
    await agent.raw(b'{"jsonrpc":"2.0","id":"d","method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}\n')
    sid = await session(agent, ws)  # still serving
    response = await agent.conn.prompt(session_id=sid, prompt=[text("hello")])
    assert response.stop_reason == "end_turn" and agent.client.text() == "still here"
    with pytest.raises(RequestError) as info:
        await agent.conn.new_session(cwd=str(ws / "missing"), mcp_servers=[])
    assert "is not a folder" in str(info.value) or "is not a folder" in json.dumps(info.value.data)
    assert await agent.stop() == 0
    errors = {m.get("id"): m["error"] for m in agent.messages() if "error" in m}
    nulls = [m["error"]["code"] for m in agent.messages() if "error" in m and m.get("id") is None]
    assert nulls == [-32700, -32600, -32600, -32600]  # not JSON, a batch, a number, a bad id
    assert errors["a"]["code"] == -32600 and errors["b"]["code"] == -32601
    assert errors["c"]["code"] == -32602  # no mcpServers, relative cwd: the SDK's params check
    assert errors["d"]["code"] in (-32602, -32002)
    agent.validate()


# ---------------------------------------------------------------- sessions


async def test_session_list_without_cwd_covers_every_folder_served(tmp_path: Path, spawn) -> None:
    home = workspace(tmp_path)  # the agent process's own folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x\n")
    agent = await spawn(home, ["done"])
    await agent.initialize()
    created = await agent.conn.new_session(cwd=str(other), mcp_servers=[])
    assert (await agent.conn.prompt(session_id=created.session_id, prompt=[text("hi")])).stop_reason == "end_turn"
    listed = await agent.conn.list_sessions()
    assert [(s.session_id, s.cwd) for s in listed.sessions] == [(created.session_id, str(other.resolve()))]
    assert await agent.stop() == 0


async def test_load_replays_a_stored_session_and_continues_it(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    first = await spawn(ws, [{"text": "Let me look.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
                             "It has two lines."])
    sid = await session(first, ws)
    assert (await first.conn.prompt(session_id=sid, prompt=[text("what is in notes.txt?")])).stop_reason == "end_turn"
    assert await first.stop() == 0

    second = await spawn(ws, ["DESCRIBE"])
    await second.initialize()
    listed = await second.conn.list_sessions(cwd=str(ws))
    assert [s.session_id for s in listed.sessions] == [sid] and "notes.txt" in (listed.sessions[0].title or "")
    loaded = await second.conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
    assert loaded.modes.current_mode_id == "ask"
    client = second.client
    kinds = [u.session_update for u in client.updates]
    assert kinds == ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update",
                     "agent_message_chunk"], kinds
    assert client.updates[0].content.text == "what is in notes.txt?"
    call = client.of("tool_call")[0]
    assert call.kind == "read" and call.status == "completed" and call.locations[0].path == str(ws / "notes.txt")
    assert "first line" in client.of("tool_call_update")[0].content[0].content.text
    assert client.text() == "Let me look.It has two lines."
    client.updates.clear()
    response = await second.conn.prompt(session_id=sid, prompt=[text("and now?")])
    assert response.stop_reason == "end_turn"
    assert client.text().startswith("I received 5 messages")  # the history came along
    with pytest.raises(RequestError):
        await second.conn.load_session(cwd=str(ws), session_id="ses_missing", mcp_servers=[])
    assert await second.stop() == 0
    first.validate()
    second.validate()


async def test_an_image_in_the_prompt_reaches_the_model(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    agent = await spawn(ws, ["DESCRIBE"])
    sid = await session(agent, ws)
    image = ImageContentBlock(type="image", data=PNG, mime_type="image/png")
    response = await agent.conn.prompt(session_id=sid, prompt=[text("what is this?"), image])
    assert response.stop_reason == "end_turn"
    said = agent.client.text()
    assert "text: what is this?" in said and f"image: image/png, {len(PNG)} base64 chars" in said
    with pytest.raises(RequestError) as info:
        await agent.conn.prompt(session_id=sid, prompt=[ImageContentBlock(type="image", data="bm90IGFuIGltYWdl",
                                                                           mime_type="image/png")])
    assert "not a PNG" in str(info.value) or "no text" in str(info.value)
    assert await agent.stop() == 0
    agent.validate()


# ---------------------------------------------------------------- MCP servers from the editor

MCP_SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("notes")

    @app.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper() + "!"

    app.run("stdio")
''')


async def test_an_mcp_server_passed_by_the_editor_asks_then_runs(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    server = tmp_path / "mcp_server.py"
    server.write_text(MCP_SERVER)
    agent = await spawn(ws, [{"tool_calls": [{"name": "notes__shout", "input": {"text": "hello"}}]}, "DESCRIBE"])
    await agent.initialize()
    mcp = McpServerStdio(name="notes", command=sys.executable, args=[str(server)],
                         env=[EnvVariable(name="NOTES_MODE", value="loud")])
    sid = (await agent.conn.new_session(cwd=str(ws), mcp_servers=[mcp])).session_id
    response = await agent.conn.prompt(session_id=sid, prompt=[text("shout hello")])
    assert response.stop_reason == "end_turn"
    client = agent.client
    asked = [r.tool_call.title for r in client.permissions]
    assert asked[0] == "Start MCP server notes" and "notes" in asked[1], asked
    shown = "\n".join(c.content.text for c in client.permissions[0].tool_call.content)
    assert str(server) in shown and "NOTES_MODE" in shown  # the command line and the env names
    assert "tool result: HELLO!" in client.text()
    assert await agent.stop() == 0
    agent.validate()


async def test_editor_mcp_entries_with_variables_are_refused(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    agent = await spawn(ws, ["ok"])
    await agent.initialize()
    mcp = McpServerStdio(name="leaky", command="/bin/echo", args=[], env=[EnvVariable(name="T", value="${HOME}")])
    sid = (await agent.conn.new_session(cwd=str(ws), mcp_servers=[mcp])).session_id
    await agent.conn.prompt(session_id=sid, prompt=[text("hi")])
    assert "MCP server 'leaky' holds ${...} references" in agent.client.text()
    assert not agent.client.permissions
    assert await agent.stop() == 0
    assert agent.validate() > 0


# ---------------------------------------------------------------- what an approval shows


async def test_the_approval_shows_control_characters_and_never_cuts_the_input(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    spoof = "touch PWNED;\x1bM\x1bE  $ ls -la" + " " * 5000 + "; touch ALSO_PWNED"
    agent = await spawn(ws, [{"tool_calls": [{"name": "run_command", "input": {"command": spoof}}]}, "ok"])
    agent.client.answer = lambda r: "reject_once"
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("list files")])
    assert await agent.stop() == 0
    [request] = agent.client.permissions
    call = request.tool_call
    shown = call.title + "\n" + "\n".join(c.content.text for c in call.content if c.type == "content")
    assert "\x1b" not in shown and "\r" not in shown
    assert "touch PWNED;␛M␛E  $ ls -la⟨5000 spaces⟩; touch ALSO_PWNED" in call.title
    assert "control or invisible character" in shown and "long runs of spaces" in shown
    assert shown.count("touch ALSO_PWNED") >= 2  # in the title and in the whole input: nothing cut
    raw = next(m for m in agent.messages() if m.get("method") == "session/request_permission")
    assert "\x1b" not in json.dumps(raw["params"]["toolCall"], ensure_ascii=False)
    assert not (ws / "PWNED").exists() and not (ws / "ALSO_PWNED").exists()
    agent.validate()


# ---------------------------------------------------------------- modes and "always"


async def test_modes_map_onto_permission_behaviour(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "first", "new_string": "1st"}}
    cmd = {"name": "run_command", "input": {"command": "echo hi > out.txt"}}
    agent = await spawn(ws, [{"tool_calls": [edit]}, {"tool_calls": [cmd]}, "done",
                             {"tool_calls": [{**edit, "input": {**edit["input"], "old_string": "second",
                                                                  "new_string": "2nd"}}]}, "done again"])
    sid = await session(agent, ws)
    client = agent.client
    await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
    await agent.conn.prompt(session_id=sid, prompt=[text("edit and run")])
    assert not client.permissions  # refused without asking
    assert (ws / "notes.txt").read_text() == "first line\nsecond line\n" and not (ws / "out.txt").exists()
    response = await agent.conn.set_config_option(session_id=sid, config_id="mode", value="accept-edits")
    assert next(o for o in response.config_options if o.id == "mode").current_value == "accept-edits"
    assert client.of("current_mode_update")[-1].current_mode_id == "accept-edits"
    await agent.conn.prompt(session_id=sid, prompt=[text("edit")])
    assert not client.permissions and (ws / "notes.txt").read_text() == "first line\n2nd line\n"
    with pytest.raises(RequestError):
        await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
    assert await agent.stop() == 0
    agent.validate()


async def test_plan_mode_shows_the_plan_and_approving_switches_the_editors_mode(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "first", "new_string": "1st"}}
    plan = "1. change *first* to 1st in notes.txt"
    agent = await spawn(ws, [
        {"tool_calls": [edit]},  # refused in plan mode, without asking
        {"tool_calls": [{"name": "exit_plan_mode", "input": {"plan": plan}}]},
        {"tool_calls": [edit]},  # accept-edits: runs without asking
        "done",
        {"tool_calls": [{"name": "exit_plan_mode", "input": {"plan": "another plan"}}]},
        "DESCRIBE",
    ])
    sid = await session(agent, ws)
    client = agent.client
    await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
    client.answer = lambda request: "approve_edits"
    await agent.conn.prompt(session_id=sid, prompt=[text("plan first")])
    assert len(client.permissions) == 1  # the plan, nothing else
    asked = client.permissions[0]
    assert asked.tool_call.kind == "switch_mode" and plan in asked.tool_call.content[0].content.text
    assert [o.option_id for o in asked.options] == ["approve_edits", "approve", "reject"]
    assert (ws / "notes.txt").read_text() == "1st line\nsecond line\n"
    assert client.of("current_mode_update")[-1].current_mode_id == "accept-edits"

    await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
    client.answer = lambda request: "reject"
    await agent.conn.prompt(session_id=sid, prompt=[text("plan again")])
    said = "".join(u.content.text for u in client.of("agent_message_chunk") if hasattr(u.content, "text"))
    assert "keep planning in their editor" in said  # the model read why, and that the next message says what
    assert len(client.permissions) == 2 and "another plan" in client.permissions[1].tool_call.content[0].content.text
    mode = next(o for o in client.of("config_option_update")[-1].config_options if o.id == "mode")
    assert mode.current_value == "plan"  # rejected: still planning
    assert await agent.stop() == 0
    agent.validate()


async def test_reject_always_writes_a_deny_rule_and_the_next_call_is_not_asked(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    cmd = {"name": "run_command", "input": {"command": "echo hi > out.txt"}}
    agent = await spawn(ws, [{"tool_calls": [cmd]}, {"tool_calls": [cmd]}, "gave up"])
    agent.client.answer = lambda r: "reject_always"
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("run")])
    assert len(agent.client.permissions) == 1 and not (ws / "out.txt").exists()
    local = yaml.safe_load((ws / ".smoke" / "config.local.yaml").read_text())
    assert local["permissions"]["deny"] == ["run_command(echo hi)"]  # one rule per simple command
    assert await agent.stop() == 0
    # a new process reads the rule: denied by the rule, nobody asked
    again = await spawn(ws, [{"tool_calls": [cmd]}, "DESCRIBE"])
    sid = await session(again, ws)
    await again.conn.prompt(session_id=sid, prompt=[text("run")])
    assert not again.client.permissions and "denied by deny rule" in again.client.text()
    assert await again.stop() == 0
    assert agent.validate() > 0
    assert again.validate() > 0


async def test_a_question_with_options_is_asked_as_a_choice(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    ask = {"name": "ask_user", "input": {"question": "Which one?", "options": ["tabs", "spaces"]}}
    agent = await spawn(ws, [{"tool_calls": [ask]}, "DESCRIBE"])
    agent.client.answer = lambda r: "answer_1"
    sid = await session(agent, ws)
    await agent.conn.prompt(session_id=sid, prompt=[text("format it")])
    [request] = agent.client.permissions
    assert request.tool_call.title == "Which one?" and [o.name for o in request.options][:2] == ["tabs", "spaces"]
    assert "The user answered: spaces" in agent.client.text()
    assert await agent.stop() == 0
    agent.validate()


# ---------------------------------------------------------------- the editor's file system


async def test_file_tools_read_unsaved_buffers_and_write_through_the_editor(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    edit = {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "unsaved", "new_string": "saved"}}
    agent = await spawn(ws, [{"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
                             {"tool_calls": [edit]}, "done"])
    client = agent.client
    client.buffers[str(ws / "notes.txt")] = "first line\nunsaved change\n"
    sid = await session(agent, ws, fs=True)
    await agent.conn.prompt(session_id=sid, prompt=[text("edit the buffer")])
    results = [c.content.text for u in client.of("tool_call_update") for c in (u.content or []) if c.type == "content"]
    assert any("unsaved change" in r for r in results)  # read_file saw the buffer
    assert client.writes == [(str(ws / "notes.txt"), "first line\nsaved change\n")]
    assert (ws / "notes.txt").read_text() == "first line\nsaved change\n"
    assert str(ws / "notes.txt") in client.reads
    assert await agent.stop() == 0
    agent.validate()


# ---------------------------------------------------------------- trust


async def test_an_untrusted_folder_cannot_loosen_the_mode_and_the_person_is_told(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    (ws / ".smoke").mkdir()
    (ws / ".smoke" / "config.yaml").write_text("permission: allow-all\nauto_approve: true\n")
    cmd = {"name": "run_command", "input": {"command": "echo hi > out.txt"}}
    agent = await spawn(ws, [{"tool_calls": [cmd]}, "ok"])
    agent.client.answer = lambda r: "reject_once"
    await agent.initialize()
    new = await agent.conn.new_session(cwd=str(ws), mcp_servers=[])
    assert new.modes.current_mode_id == "ask"  # the repository's allow-all is ignored
    await agent.conn.prompt(session_id=new.session_id, prompt=[text("run")])
    assert len(agent.client.permissions) == 1 and not (ws / "out.txt").exists()
    said = agent.client.text()
    assert "ignored settings in" in said and "smoke trust" in said
    assert await agent.stop() == 0
    assert agent.validate() > 0


async def test_managed_settings_fix_the_mode(tmp_path: Path, spawn) -> None:
    ws = workspace(tmp_path)
    managed = tmp_path / "managed.yaml"
    managed.write_text("permission: deny-all\n")
    edit = {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "first", "new_string": "1st"}}
    agent = await spawn(ws, [{"tool_calls": [edit]}, "ok"], env={"SMOKE_MANAGED_SETTINGS": str(managed)})
    await agent.initialize()
    new = await agent.conn.new_session(cwd=str(ws), mcp_servers=[])
    assert new.modes.current_mode_id == "read-only"
    assert [m.id for m in new.modes.available_modes] == ["read-only"]
    with pytest.raises(RequestError) as info:
        await agent.conn.set_session_mode(session_id=new.session_id, mode_id="allow-all")
    assert "managed settings" in str(info.value)
    await agent.conn.prompt(session_id=new.session_id, prompt=[text("edit")])
    assert not agent.client.permissions and (ws / "notes.txt").read_text().startswith("first")
    assert await agent.stop() == 0
    agent.validate()


async def test_the_model_config_option_switches_models_listed_in_acp_models(tmp_path: Path, spawn) -> None:
    from smoke_core.settings import user_settings_path

    user_settings_path().parent.mkdir(parents=True, exist_ok=True)
    user_settings_path().write_text("acp_models: [bigger-model]\n")
    ws = workspace(tmp_path)
    agent = await spawn(ws, ["ok"])
    await agent.initialize()
    new = await agent.conn.new_session(cwd=str(ws), mcp_servers=[])
    model = next(o for o in new.config_options if o.id == "model")
    assert model.current_value == "scripted-model" and [o.value for o in model.options] == ["scripted-model",
                                                                                            "bigger-model"]
    changed = await agent.conn.set_config_option(session_id=new.session_id, config_id="model", value="bigger-model")
    assert next(o for o in changed.config_options if o.id == "model").current_value == "bigger-model"
    with pytest.raises(RequestError) as info:
        await agent.conn.set_config_option(session_id=new.session_id, config_id="model", value="unknown-model")
    assert "acp_models" in str(info.value)
    assert (await agent.conn.prompt(session_id=new.session_id, prompt=[text("hi")])).stop_reason == "end_turn"
    assert await agent.stop() == 0
    agent.validate()
