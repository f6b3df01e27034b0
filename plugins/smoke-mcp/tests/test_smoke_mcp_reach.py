"""MCP beyond tools, against real servers: resources (tools and @server:uri
mentions), resource templates, prompts (API and CLI), tools/list_changed
between runs, subagents. Servers: the in-repo MCPServer test server
(subprocess) and @modelcontextprotocol/server-everything (npm)."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_mcp

from smoke_core import create_agent
from smoke_core.plugin import tool
from smoke_core.testing import ScriptedProvider

HERE = Path(__file__).parent
TEST_SERVER = str(HERE / "smoke_mcp_test_server.py")
EVERYTHING = HERE / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def _test_server(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TEST_SERVER, *args], **extra}


def _everything(**extra: Any) -> dict[str, Any]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed, so @modelcontextprotocol/server-everything cannot run")
    if not EVERYTHING.is_file():
        pytest.skip(f"@modelcontextprotocol/server-everything is not installed: run npm ci in {HERE / 'node'}")
    return {"command": "node", "args": [str(EVERYTHING), "stdio"], **extra}


class Recorder:
    """Events of an agent; permission pauses answered from ``answers`` (default: deny)."""

    def __init__(self, agent: Any, answers: dict[str, str] | None = None) -> None:
        self.events: list[Any] = []
        self.answers = answers or {}
        self.agent = agent
        agent.on_any(self.events.append)
        agent.on("permission.required", self._answer)

    def _answer(self, event: Any) -> None:
        call_id = event.data["tool_call_id"]
        self.agent.resolve_permission(call_id, self.answers.get(call_id, "deny"))

    def of(self, type: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == type]

    def warnings(self) -> list[dict[str, Any]]:
        return [d["error"] for d in self.of("run.warning")]

    def mention_warnings(self) -> list[dict[str, Any]]:
        return [w for w in self.warnings() if w["details"].get("kind") == "mcp_mention"]

    def completed(self, tool_name: str) -> list[dict[str, Any]]:
        return [d for d in self.of("tool.completed") if d["tool_name"] == tool_name]


def _agent(tmp_path: Path, turns: list[Any], servers: dict[str, Any] | None, **kw: Any) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider(turns)
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_mcp],
                         mcp_servers=servers, **kw)
    return agent, provider


def _tool_names(provider: ScriptedProvider, call: int = 0) -> list[str]:
    return [t["name"] for t in provider.requests[call].tools]


def _task_blocks(provider: ScriptedProvider, call: int = 0) -> list[dict[str, Any]]:
    """The content of the person's task message as the provider received it."""
    users = [m for m in provider.requests[call].messages if m["role"] == "user"]
    return users[0]["content"]


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b["type"] == "text")


# ---------------------------------------------------------------- resource tools


@pytest.mark.slow
async def test_resource_tools_list_and_read_text_images_binaries_and_templates(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"id": "ls", "name": "list_mcp_resources", "input": {}}]},
        {"tool_calls": [
            {"id": "md", "name": "read_mcp_resource", "input": {"server": "t", "uri": "note://readme"}},
            {"id": "png", "name": "read_mcp_resource", "input": {"server": "t", "uri": "note://logo.png"}},
            {"id": "bin", "name": "read_mcp_resource", "input": {"server": "t", "uri": "note://archive.bin"}},
            {"id": "tpl", "name": "read_mcp_resource",
             "input": {"server": "t", "template": "note://users/{user}/profile", "arguments": {"user": "ann lee"}}},
            {"id": "filled", "name": "read_mcp_resource", "input": {"server": "t", "uri": "note://users/bob/profile"}},
        ]},
        "done",
    ]
    # not auto-approved: a call that asked would be denied by the recorder
    agent, provider = _agent(tmp_path, turns, {"t": _test_server(trusted=True)})
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("what does the server offer?")
        tools = agent.tools
    assert result.status == "completed", rec.warnings()
    assert rec.of("permission.required") == []  # read-only: nothing asks
    assert {"list_mcp_resources", "read_mcp_resource"} <= set(_tool_names(provider))
    for name in ("list_mcp_resources", "read_mcp_resource"):
        t = tools[name]
        assert t.read_only and t.kind == "read" and t.group == "mcp"
        assert t.annotations.destructive_hint is False and t.annotations.title
        assert t.presentation_dict()["icon"] == "📚"

    listing = rec.completed("list_mcp_resources")[0]
    text = listing["content"][0]["text"]
    assert "note://readme — readme (text/markdown): What this test server is." in text
    assert "note://users/{user}/profile — profile (text/plain); arguments: user" in text
    servers = listing["data"]["servers"]
    assert [r["uri"] for r in servers["t"]["resources"]][:2] == ["note://readme", "note://logo.png"]
    assert servers["t"]["templates"][0]["arguments"] == ["user"]

    md = rec.completed("read_mcp_resource")
    by_uri = {d["data"]["uri"]: d for d in md}
    readme = by_uri["note://readme"]["content"]
    assert readme[0]["text"].startswith("[resource note://readme from MCP server 't', text/markdown")
    assert readme[0]["text"].endswith("It serves notes, users and a logo.")
    logo = by_uri["note://logo.png"]["content"]
    assert logo[1]["type"] == "image" and logo[1]["mime_type"] == "image/png"
    assert base64.b64decode(logo[1]["data"]).startswith(b"\x89PNG")
    binary = by_uri["note://archive.bin"]["content"]
    assert len(binary) == 1 and "binary resource note://archive.bin (application/octet-stream), 1028 bytes" in \
        binary[0]["text"] and "not shown" in binary[0]["text"]
    assert "profile of ann lee" in by_uri["note://users/ann%20lee/profile"]["content"][0]["text"]
    assert "profile of bob" in by_uri["note://users/bob/profile"]["content"][0]["text"]


@pytest.mark.slow
async def test_resource_tool_mistakes_come_back_to_the_model_and_the_run_goes_on(tmp_path: Path) -> None:
    calls = [
        {"server": "nope", "uri": "note://readme"},
        {"server": "t"},
        {"server": "t", "uri": "note://readme", "template": "note://users/{user}/profile"},
        {"server": "t", "template": "note://users/{user}/profile", "arguments": {}},
        {"server": "t", "template": "note://users/{user}/profile", "arguments": {"user": "a", "age": "3"}},
        {"server": "t", "uri": "note://missing"},
        {"server": "denied", "uri": "note://readme"},
    ]
    turns = [{"tool_calls": [{"id": f"c{i}", "name": "read_mcp_resource", "input": c} for i, c in enumerate(calls)]},
             "ok"]
    agent, _ = _agent(tmp_path, turns, {"t": _test_server(trusted=True), "denied": _test_server()})
    rec = Recorder(agent, {"mcp_server:denied": "deny"})
    async with agent:
        result = await agent.run("read things")
    assert result.status == "completed"
    done = {d["tool_call_id"]: d for d in rec.completed("read_mcp_resource")}
    errors = [done[f"c{i}"]["error"] for i in range(len(calls))]
    assert all(e is not None for e in errors)
    messages = [e["message"] for e in errors]
    assert "no MCP server named 'nope'" in messages[0] and "servers with resources: t" in messages[0]
    assert "give either `uri`" in messages[1] and "neither" in messages[1]
    assert "not both" in messages[2]
    assert "needs user in arguments" in messages[3]
    assert "has no argument age" in messages[4]
    assert "Unknown resource: note://missing" in messages[5] and errors[5]["code"] == "tool_failed"
    assert "'denied' was not started in this run (permission to start it was denied)" in messages[6]
    assert [e["code"] for e in errors[:5]] == ["tool_invalid_input"] * 5


async def test_no_resource_tools_without_a_server_that_offers_resources(tmp_path: Path) -> None:
    agent, provider = _agent(tmp_path, ["ok"], None)
    async with agent:
        await agent.run("hello")
    assert not {"list_mcp_resources", "read_mcp_resource"} & set(_tool_names(provider))


# ---------------------------------------------------------------- @server:uri mentions


@pytest.mark.slow
async def test_mentions_are_read_and_attached_before_the_first_model_call(tmp_path: Path) -> None:
    agent, provider = _agent(tmp_path, ["summarised"], {"t": _test_server(trusted=True)})
    rec = Recorder(agent)
    task = "Summarise @t:note://readme, look at @t:note://logo.png. And @t:note://users/zoe/profile."
    async with agent:
        result = await agent.run(task)
    assert result.status == "completed" and rec.mention_warnings() == []
    blocks = _task_blocks(provider)
    assert blocks[0] == {"type": "text", "text": task}  # the person's words, unchanged
    assert "not written by the person" in blocks[1]["text"]  # the preamble marks what follows as server text
    text = _text(blocks)
    assert "It serves notes, users and a logo." in text and "profile of zoe" in text
    assert [b["mime_type"] for b in blocks if b["type"] == "image"] == ["image/png"]
    # recorded in the transcript as part of the task
    assert result.messages[0]["content"] == blocks


@pytest.mark.slow
async def test_mention_problems_are_warned_about_and_the_run_goes_on(tmp_path: Path) -> None:
    task = ("Use @ghost:note://x, @t:note://missing, @t:note://archive.bin, @denied:note://readme, "
            "@t:note://readme. Write to me@example.com:8080 or @alice: hello, @bob:later.")
    agent, provider = _agent(tmp_path, ["ok"], {"t": _test_server(trusted=True), "denied": _test_server()})
    rec = Recorder(agent, {"mcp_server:denied": "deny"})
    async with agent:
        result = await agent.run(task)
    assert result.status == "completed"
    warned = {w["details"]["uri"]: w for w in rec.mention_warnings()}
    assert set(warned) == {"note://x", "note://missing", "note://readme"}  # the readme of "denied"
    assert "no MCP server named 'ghost' is configured (configured: denied, t)" in warned["note://x"]["message"]
    assert "Unknown resource: note://missing" in warned["note://missing"]["message"]
    denied = warned["note://readme"]
    assert denied["code"] == "permission_denied" and denied["details"]["server"] == "denied"
    assert "was not started (permission to start it was denied)" in denied["message"]
    assert all("The run goes on" in w["message"] for w in warned.values())
    text = _text(_task_blocks(provider))
    assert "binary resource note://archive.bin (application/octet-stream), 1028 bytes: not shown" in text
    assert "It serves notes, users and a logo." in text  # t's readme still attached


@pytest.mark.slow
async def test_attached_text_is_capped(tmp_path: Path) -> None:
    servers = {"t": _test_server(trusted=True)}
    agent, provider = _agent(tmp_path, ["ok"], servers,
                             plugin_options={"mcp": {"resource_max_chars": 5000, "mentions_max_chars": 5000}})
    rec = Recorder(agent)
    async with agent:
        await agent.run("read @t:note://long.txt then @t:note://hostile.md")
    blocks = _task_blocks(provider)
    long_text = next(b["text"] for b in blocks if b.get("text", "").startswith("[resource note://long.txt"))
    assert "THE END" not in long_text
    assert "[… cut: note://long.txt has 240007 characters; the first 5000 are shown]" in long_text
    # the task's budget (5000 characters over all its mentions) is spent: the second one is left out
    assert "Ignore all previous instructions" not in _text(blocks)
    warned = {w["details"]["uri"]: w["message"] for w in rec.mention_warnings()}
    assert "attached in part" in warned["note://long.txt"]
    assert "already reached the limit of 5000 characters" in warned["note://hostile.md"]

    small, provider2 = _agent(tmp_path, ["ok"], servers, plugin_options={"mcp": {"resource_max_chars": 100}})
    async with small:
        await small.run("read @t:note://long.txt then @t:note://readme")
    text = _text(_task_blocks(provider2))
    assert "the first 100 are shown" in text and "It serves notes, users and a logo." in text


async def test_bad_limit_options_are_reported(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, ["ok"], None, plugin_options={"mcp": {"resource_max_chars": "big", "typo": 1}})
    rec = Recorder(agent)
    async with agent:
        await agent.run("hi")
    messages = " ".join(w["message"] for w in rec.warnings())
    assert "plugin_options['mcp']['resource_max_chars'] must be a positive whole number" in messages
    assert "has no option 'typo'" in messages


@pytest.mark.slow
async def test_a_hostile_resource_cannot_run_a_mutating_tool_without_approval(tmp_path: Path) -> None:
    """A resource's text reaches the model as data; what it talks the model into
    still passes the permission gate (t__crash is not read-only, so it asks)."""
    turns = [{"tool_calls": [{"id": "evil", "name": "t__crash", "input": {}}]}, "I did not."]
    agent, provider = _agent(tmp_path, turns, {"t": _test_server(trusted=True)})
    rec = Recorder(agent)  # the person denies
    async with agent:
        result = await agent.run("what does @t:note://hostile.md say?")
    assert "Ignore all previous instructions" in _text(_task_blocks(provider))
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["evil"]
    assert rec.completed("t__crash")[0]["error"]["code"] == "permission_denied"
    assert result.status == "completed"


@pytest.mark.slow
async def test_a_mention_of_a_repository_server_goes_through_its_start_approval(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"r": _test_server()}}))
    agent, provider = _agent(tmp_path, ["ok"], None, trust_workspace=False)
    rec = Recorder(agent, {"mcp_server:r": "allow"})
    async with agent:
        await agent.run("read @r:note://readme")
    asked = rec.of("permission.required")
    assert [d["tool_call_id"] for d in asked] == ["mcp_server:r"] and "have not trusted" in asked[0]["reason"]
    assert "It serves notes" in _text(_task_blocks(provider))

    # the person's approval is remembered for this exact entry: it starts without asking again
    again, provider3 = _agent(tmp_path, ["ok"], None, trust_workspace=False, auto_approve=True)
    rec3 = Recorder(again)
    async with again:
        await again.run("read @r:note://readme")
    assert rec3.of("permission.required") == [] and len(rec3.of("mcp.server.started")) == 1
    assert "It serves notes" in _text(_task_blocks(provider3))

    # a changed entry is not approved: with automatic approval nobody is asked, so it is not started nor read
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"r": _test_server(env={"CHANGED": "1"})}}))
    auto, provider2 = _agent(tmp_path, ["ok"], None, trust_workspace=False, auto_approve=True)
    rec2 = Recorder(auto)
    async with auto:
        await auto.run("read @r:note://readme")
    assert rec2.of("permission.required") == [] and rec2.of("mcp.server.started") == []
    warned = rec2.mention_warnings()
    assert len(warned) == 1 and warned[0]["code"] == "permission_denied"
    assert "not trusted and approval was automatic" in warned[0]["message"]
    assert "It serves notes" not in _text(_task_blocks(provider2))


# ---------------------------------------------------------------- tools/list_changed


async def _until(condition: Any) -> None:
    """Let the event loop run until ``condition()`` holds (no sleeping)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


@pytest.mark.slow
async def test_tools_list_changed_updates_the_tool_list_between_runs_never_mid_run(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__grow", "input": {"name": "fresh"}}]}, "grew",
             {"tool_calls": [{"name": "t__fresh", "input": {}}]}, "used it"]
    agent, provider = _agent(tmp_path, turns, {"t": _test_server(trusted=True)}, auto_approve=True)
    rec = Recorder(agent)
    async with agent:
        first = await agent.run("grow a tool")
        state = smoke_mcp.mcp_state(agent)
        assert state is not None
        conn = state.connections["t"]
        await _until(lambda: conn.tools_changed)
        # the run that received the notification kept its tool list
        assert "t__fresh" not in _tool_names(provider, 0) and "t__fresh" not in _tool_names(provider, 1)
        assert "t__fresh" not in agent.tools
        second = await agent.run("use the new tool")
    assert first.status == second.status == "completed"
    assert "t__fresh" in _tool_names(provider, 2)
    assert rec.completed("t__fresh")[0]["content"][0]["text"] == "i am fresh"
    started = rec.of("mcp.server.started")
    assert [(d["reused"], d["tools_changed"]) for d in started] == [(False, False), (True, True)]
    assert "t__fresh" in started[1]["tools"] and not conn.tools_changed


# ---------------------------------------------------------------- subagents


def _delegate() -> Any:
    @tool(read_only=True, name="delegate")
    async def delegate(prompt: str, ctx: Any = None) -> str:
        """Hand a task to a subagent."""
        result = await ctx.run_subagent(prompt, tools=["t__upper", "read_mcp_resource"])
        return result.text or f"subagent {result.status}"

    return delegate


@pytest.mark.slow
async def test_a_subagent_run_starts_nothing_asks_nothing_and_uses_the_inherited_tools(tmp_path: Path) -> None:
    def turn(request: Any) -> Any:
        first = request.messages[0]["content"][0]["text"]
        n = sum(1 for m in request.messages if m["role"] == "tool")
        if first.startswith("parent"):
            return {"tool_calls": [{"name": "delegate", "input": {"prompt": "child: shout @t:note://readme"}}]} \
                if n == 0 else "parent done"
        return {"tool_calls": [{"name": "t__upper", "input": {"text": "from the child"}}]} if n == 0 else "child done"

    provider = ScriptedProvider([turn] * 4)
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_mcp],
                         tools=[_delegate()], mcp_servers={"t": _test_server(), "d": _test_server()})
    rec = Recorder(agent, {"mcp_server:t": "allow", "mcp_server:d": "deny"})
    async with agent:
        result = await agent.run("parent: delegate")
    assert result.status == "completed" and result.text == "parent done"
    # the parent's start questions only: the child asked nothing again (d stays denied, t is not re-asked)
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:t", "mcp_server:d"]
    assert len(rec.of("mcp.server.started")) == 1
    assert len([w for w in rec.warnings() if w["code"] == "permission_denied"]) == 1
    child_requests = [r for r in provider.requests if r.messages[0]["content"][0]["text"].startswith("child")]
    assert sorted(t["name"] for t in child_requests[0].tools) == ["read_mcp_resource", "t__upper"]
    # the subagent's prompt is the model's: its mentions are not resolved
    assert len(child_requests[0].messages[0]["content"]) == 1
    assert rec.completed("t__upper")[0]["content"][0]["text"] == "FROM THE CHILD"


# ---------------------------------------------------------------- prompts: API


@pytest.mark.slow
async def test_get_mcp_prompt_fills_in_a_prompt_and_checks_its_arguments(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, ["ok"], {"t": _test_server(trusted=True), "other": _test_server()})
    async with agent:
        listed = await smoke_mcp.list_mcp_prompts(agent)
        by_name = {(p.server, p.name): p for p in listed.prompts}
        review = by_name[("t", "review")]
        assert review.command == "/mcp__t__review" and review.title == "Code review"
        assert [(a.name, a.required) for a in review.arguments] == [("code", True), ("language", False)]
        # "other" is not trusted and was never approved: not started from here, and says why
        assert "not approved for this agent yet" in listed.unavailable["other"]

        prompt = await smoke_mcp.get_mcp_prompt(agent, "t", "review", {"code": "x = 1", "language": "python"})
        assert prompt.messages == [{"role": "user", "content": [
            {"type": "text", "text": "Please review this python code:\nx = 1"}]}]
        assert prompt.description == "Ask for a review of some code."

        logo = await smoke_mcp.get_mcp_prompt(agent, "t", "show_logo")
        task = logo.to_task()
        assert task[0] == "Here is the logo:" and task[2] == "[assistant] A one-pixel image."
        assert task[1].mime_type == "image/png" and task[1].data.startswith("iVBOR")

        cases = [
            (("t", "review", {}), "needs code; it takes code (required), language (optional)"),
            (("t", "review", {"code": "x", "colour": "red"}), "has no argument colour"),
            (("t", "review", {"code": 3}), "MCP prompt arguments are text: code=3"),
            (("t", "nope", {}), "has no prompt 'nope' (its prompts: review, show_logo)"),
            (("ghost", "review", {}), "no MCP server named 'ghost' is configured"),
            (("other", "review", {"code": "x"}), "is not approved for this agent yet"),
        ]
        for args, fragment in cases:
            with pytest.raises(smoke_mcp.MCPPromptError, match=None) as info:
                await smoke_mcp.get_mcp_prompt(agent, *args)
            assert fragment in str(info.value), (args, str(info.value))

        # after a run has approved "other", the API uses it
        rec = Recorder(agent, {"mcp_server:other": "allow"})
        await agent.run("start the servers")
        assert rec.of("permission.required")[0]["tool_call_id"] == "mcp_server:other"
        approved = await smoke_mcp.get_mcp_prompt(agent, "other", "review", {"code": "y"})
        assert "python code:\ny" in approved.messages[0]["content"][0]["text"]


# ---------------------------------------------------------------- server-everything: the "done when" scenario


@pytest.mark.slow
async def test_server_everything_resources_and_prompts_from_a_run_the_api_and_mentions(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "list_mcp_resources", "input": {"server": "everything"}}]},
        {"tool_calls": [
            {"name": "read_mcp_resource",
             "input": {"server": "everything", "uri": "demo://resource/static/document/features.md"}},
            {"name": "read_mcp_resource",
             "input": {"server": "everything", "template": "demo://resource/dynamic/text/{resourceId}",
                       "arguments": {"resourceId": "7"}}},
            {"name": "read_mcp_resource",
             "input": {"server": "everything", "uri": "demo://resource/dynamic/blob/3"}},
        ]},
        "read them",
    ]
    agent, provider = _agent(tmp_path, turns, {"everything": _everything()})
    rec = Recorder(agent, {"mcp_server:everything": "allow"})
    async with agent:
        result = await agent.run("Compare @everything:demo://resource/static/document/architecture.md with the rest")
        assert result.status == "completed", rec.warnings()
        assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:everything"]

        # the mention, attached before the first model call
        attached = _text(_task_blocks(provider))
        assert "[resource demo://resource/static/document/architecture.md from MCP server 'everything', " \
               "text/markdown" in attached
        # the tools
        listing = rec.completed("list_mcp_resources")[0]["data"]["servers"]["everything"]
        assert "demo://resource/static/document/features.md" in [r["uri"] for r in listing["resources"]]
        assert {t["uri_template"]: t["arguments"] for t in listing["templates"]} == {
            "demo://resource/dynamic/text/{resourceId}": ["resourceId"],
            "demo://resource/dynamic/blob/{resourceId}": ["resourceId"],
        }
        reads = {d["data"]["uri"]: _text(d["content"]) for d in rec.completed("read_mcp_resource")}
        assert "features" in reads["demo://resource/static/document/features.md"].lower()
        assert "Resource 7: This is a plaintext resource" in reads["demo://resource/dynamic/text/7"]
        # a text/plain blob is decoded as text, not dumped as base64
        assert "Resource 3: This is a base64 blob" in reads["demo://resource/dynamic/blob/3"]

        # prompts through the API, on the server the run started
        listed = await smoke_mcp.list_mcp_prompts(agent, "everything")
        commands = {p.command for p in listed.prompts}
        assert {"/mcp__everything__simple-prompt", "/mcp__everything__args-prompt",
                "/mcp__everything__resource-prompt"} <= commands
        args = await smoke_mcp.get_mcp_prompt(agent, "everything", "args-prompt", {"city": "Lyon", "state": "Rhône"})
        assert args.to_task() == ["What's weather in Lyon, Rhône?"]
        embedded = await smoke_mcp.get_mcp_prompt(agent, "everything", "resource-prompt",
                                                  {"resourceType": "Text", "resourceId": "2"})
        assert "[resource demo://resource/dynamic/text/2]\nResource 2: This is a plaintext resource" in \
            _text(embedded.messages[1]["content"])
        with pytest.raises(smoke_mcp.MCPPromptError, match="needs city"):
            await smoke_mcp.get_mcp_prompt(agent, "everything", "args-prompt", {"state": "Rhône"})
        # a server-side refusal (it checks resourceType itself) comes back as a clear error
        with pytest.raises(smoke_mcp.MCPPromptError, match="Invalid resourceType"):
            await smoke_mcp.get_mcp_prompt(agent, "everything", "resource-prompt",
                                           {"resourceType": "Video", "resourceId": "2"})

        # a prompt's messages become the next task, as a chat's /mcp__everything__args-prompt would send them
        provider.add("sunny")
        follow = await agent.run(args.to_task())
        assert follow.text == "sunny"
        assert _task_blocks(provider, len(provider.requests) - 1)[0]["text"] == "What's weather in Lyon, Rhône?"


# ---------------------------------------------------------------- CLI


@pytest.mark.slow
def test_cli_resources_read_prompts_and_prompt(tmp_path: Path) -> None:
    import click
    from click.testing import CliRunner

    servers: dict[str, Any] = {"t": _test_server()}
    if shutil.which("node") is not None and EVERYTHING.is_file():
        servers["everything"] = _everything()
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))

    @click.group()
    def cli() -> None:
        pass

    smoke_mcp.register_commands(cli)
    runner = CliRunner()
    w = ["-w", str(tmp_path)]

    res = runner.invoke(cli, ["mcp", "resources", "t", *w])
    assert res.exit_code == 0, res.output
    assert "note://readme — readme (text/markdown)" in res.stdout and "arguments: user" in res.stdout
    assert "@t:URI" in res.stdout
    assert f"starting MCP server 't' from {tmp_path / '.mcp.json'}" in res.stderr

    read = runner.invoke(cli, ["mcp", "read", "t", "note://readme", *w])
    assert read.exit_code == 0 and "It serves notes, users and a logo." in read.stdout
    png = runner.invoke(cli, ["mcp", "read", "t", "note://logo.png", *w])
    assert "[image image/png, 71 bytes: not shown in a terminal]" in png.stdout
    missing = runner.invoke(cli, ["mcp", "read", "t", "note://missing", *w])
    assert missing.exit_code != 0 and "Unknown resource: note://missing" in missing.output

    prompts = runner.invoke(cli, ["mcp", "prompts", "t", *w, "--json"])
    assert prompts.exit_code == 0, prompts.output
    rows = {r["name"]: r for r in json.loads(prompts.stdout)}
    assert rows["review"]["command"] == "/mcp__t__review"
    assert rows["review"]["arguments"][0] == {"name": "code", "required": True, "description": None}
    table = runner.invoke(cli, ["mcp", "prompts", "t", *w])
    assert "/mcp__t__review" in table.stdout

    filled = runner.invoke(cli, ["mcp", "prompt", "t", "review", "code=print(1)", "language=python", *w])
    assert filled.exit_code == 0, filled.output
    assert "--- user\nPlease review this python code:\nprint(1)" in filled.stdout
    bad = runner.invoke(cli, ["mcp", "prompt", "t", "review", *w])
    assert bad.exit_code != 0 and "needs code" in bad.output
    malformed = runner.invoke(cli, ["mcp", "prompt", "t", "review", "code", *w])
    assert malformed.exit_code != 0 and "give arguments as NAME=VALUE" in malformed.output

    if "everything" in servers:
        ev = runner.invoke(cli, ["mcp", "prompts", "everything", *w, "--json"])
        assert ev.exit_code == 0, ev.output
        assert "args-prompt" in {r["name"] for r in json.loads(ev.stdout)}
        ev_res = runner.invoke(cli, ["mcp", "resources", "everything", *w, "--json"])
        assert "demo://resource/dynamic/text/{resourceId}" in {
            t["uri_template"] for t in json.loads(ev_res.stdout)["templates"]}
