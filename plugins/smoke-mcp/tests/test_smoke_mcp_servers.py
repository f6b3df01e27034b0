"""smoke-mcp against real MCP servers: mcp-server-time, mcp-server-git,
@modelcontextprotocol/server-everything (stdio, streamable HTTP, SSE) and
the in-repo test server (crash, hang, bad start, HTTP auth)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import smoke_mcp

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider

HERE = Path(__file__).parent
TEST_SERVER = str(HERE / "smoke_mcp_test_server.py")
EVERYTHING = HERE / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOOPBACK = HERE / "force_loopback.cjs"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def _test_server(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TEST_SERVER, *args], **extra}


def _user_servers(tmp_path: Path, servers: dict[str, Any]) -> None:
    """``mcp_servers`` in the user's own settings (under the XDG_CONFIG_HOME set above)."""
    user_config = tmp_path / "xdg" / "smoke" / "config.yaml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(json.dumps({"mcp_servers": servers}))


def _need_module(name: str) -> None:
    import importlib.util

    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install -e 'plugins/smoke-mcp[test]')")


def _need_everything() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed, so @modelcontextprotocol/server-everything cannot run")
    if not EVERYTHING.is_file():
        pytest.skip(f"@modelcontextprotocol/server-everything is not installed: run "
                    f"npm install --prefix {HERE / 'node'} @modelcontextprotocol/server-everything")


class Recorder:
    """Collects events and answers permission pauses from a script of answers by tool_call_id."""

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

    def completed(self, tool_name: str) -> list[dict[str, Any]]:
        return [d for d in self.of("tool.completed") if d["tool_name"] == tool_name]


def _agent(tmp_path: Path, turns: list[Any], servers: dict[str, Any] | None, **kw: Any) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider(turns)
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_mcp],
                         mcp_servers=servers, **kw)
    return agent, provider


def _tool_names(provider: ScriptedProvider, call: int = 0) -> list[str]:
    return [t["name"] for t in provider.requests[call].tools]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------- the "done when" scenario


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.txt").write_text("hello\n")
    return repo


async def test_time_and_git_servers_with_approval_pauses(git_repo: Path) -> None:
    _need_module("mcp_server_time")
    _need_module("mcp_server_git")
    servers = {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(git_repo)]},
    }
    turns = [
        {"tool_calls": [
            {"name": "time__get_current_time", "input": {"timezone": "Europe/Paris"}},
            {"name": "git__git_status", "input": {"repo_path": str(git_repo)}},
        ]},
        {"tool_calls": [{"name": "git__git_add", "input": {"repo_path": str(git_repo), "files": ["a.txt"]}}]},
        "all done",
    ]
    agent, provider = _agent(git_repo, turns, servers)
    rec = Recorder(agent, {"mcp_server:time": "allow", "mcp_server:git": "allow", "call_2_1": "allow"})
    async with agent:
        result = await agent.run("what time is it, and what is the git status?")
    assert result.status == "completed", result.error

    asked = [(d["tool_call_id"], d["kind"], d["tool_name"]) for d in rec.of("permission.required")]
    # servers first (before the first model call), then only the non-read-only tool call
    assert asked == [
        ("mcp_server:time", "mcp_server", "time"),
        ("mcp_server:git", "mcp_server", "git"),
        ("call_2_1", "tool", "git__git_add"),
    ]
    start = rec.of("permission.required")[1]
    assert start["input"]["command"] == sys.executable and "mcp_server_git" in start["input"]["args"]
    first_tools = _tool_names(provider)
    assert {"time__get_current_time", "git__git_status", "git__git_add"} <= set(first_tools)
    schemas = {t["name"]: t for t in provider.requests[0].tools}
    assert schemas["time__get_current_time"]["description"].startswith("[time] ")
    # the scripted provider takes full JSON Schema: mcp-server-git's anyOf [string, null] arrives as written
    # (providers that need it get it simplified: test_schemas_are_inlined_only_for_providers_that_need_it)
    assert {"type": "null"} in schemas["git__git_log"]["input_schema"]["properties"]["start_timestamp"]["anyOf"]

    time_result = rec.completed("time__get_current_time")[0]
    assert not time_result["is_error"]
    assert json.loads(time_result["content"][0]["text"])["timezone"] == "Europe/Paris"
    status = rec.completed("git__git_status")[0]
    assert not status["is_error"] and "a.txt" in status["content"][0]["text"]
    assert not rec.completed("git__git_add")[0]["is_error"]
    staged = subprocess.run(["git", "-C", str(git_repo), "diff", "--cached", "--name-only"],
                            capture_output=True, text=True, check=True).stdout
    assert staged.split() == ["a.txt"]
    log = git_repo / ".smoke" / "runs" / result.run_id / "mcp-git.stderr.log"
    assert log.is_file()


async def test_allow_run_at_server_start_allows_its_tools_and_denial_hides_tools(git_repo: Path) -> None:
    _need_module("mcp_server_git")
    servers = {
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
        "other": _test_server(),
    }
    turns = [{"tool_calls": [{"name": "git__git_add", "input": {"repo_path": str(git_repo), "files": ["a.txt"]}}]},
             "ok"]
    agent, provider = _agent(git_repo, turns, servers)
    rec = Recorder(agent, {"mcp_server:git": "allow_run", "mcp_server:other": "deny"})
    async with agent:
        result = await agent.run("stage a.txt")
    assert result.status == "completed"
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:git", "mcp_server:other"]
    assert not rec.completed("git__git_add")[0]["is_error"]
    assert not any(n.startswith("other__") for n in _tool_names(provider))
    denied = [w for w in rec.warnings() if w["code"] == "permission_denied"]
    assert len(denied) == 1 and "'other'" in denied[0]["message"] and "not started" in denied[0]["message"]


async def test_read_only_tool_runs_without_asking_and_auto_approve_skips_server_pause(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__upper", "input": {"text": "abc"}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, {"t": _test_server()}, auto_approve=True)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("shout")
    assert result.status == "completed"
    assert rec.of("permission.required") == []
    done = rec.completed("t__upper")[0]
    assert done["content"] == [{"type": "text", "text": "ABC"}]
    assert done["presentation"]["icon"] == "🔌" and done["presentation"]["label"] == "Upper-case"


async def test_trusted_server_from_code_starts_without_asking(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__tiny_image", "input": {}}]}, "ok"]
    agent, provider = _agent(tmp_path, turns, {"t": _test_server(trusted=True)}, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        await agent.run("picture")
    assert rec.of("permission.required") == []
    assert "t__tiny_image" in _tool_names(provider)
    image = rec.completed("t__tiny_image")[0]["content"][0]
    assert image["type"] == "image" and image["mime_type"] == "image/png" and image["data"].startswith("iVBOR")


async def test_second_run_reuses_the_running_server_and_close_stops_it(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__pid", "input": {}}]}, "one",
             {"tool_calls": [{"name": "t__pid", "input": {}}]}, "two"]
    agent, provider = _agent(tmp_path, turns, {"t": _test_server()})
    rec = Recorder(agent, {"mcp_server:t": "allow_run", "call_3_1": "allow"})
    async with agent:
        first = await agent.run("pid please")
        second = await agent.run("pid again")
        assert first.status == second.status == "completed"
        pids = [int(d["content"][0]["text"]) for d in rec.completed("t__pid")]
        assert len(pids) == 2 and pids[0] == pids[1]
        # the server is approved once per agent; "allow_run" covered run 1's call only
        assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:t", "call_3_1"]
        assert [d["reused"] for d in rec.of("mcp.server.started")] == [False, True]
        assert "t__pid" in _tool_names(provider, 2)
        assert _pid_alive(pids[0])
        state = smoke_mcp.mcp_state(agent)
        assert state is not None
        conn = state.connections["t"]
    assert not _pid_alive(pids[0])
    # closed from this task, opened in the run's task: the owning task exited cleanly
    assert conn._task is not None and conn._task.done() and not conn._task.cancelled()
    assert conn._ended_by is None and not conn.alive
    assert smoke_mcp.mcp_state(agent) is None


async def test_sanitised_names_and_collisions_are_visible(tmp_path: Path) -> None:
    servers = {"x.y": _test_server(trusted=True), "x_y": _test_server(trusted=True)}
    agent, provider = _agent(tmp_path, ["ok"], servers)
    rec = Recorder(agent)
    async with agent:
        await agent.run("names")
    names = _tool_names(provider)
    assert "x_y__weird_name_with_spaces" in names and "x_y__weird_name_with_spaces_2" in names
    collisions = [w for w in rec.warnings() if "is exposed as" in w["message"]]
    assert collisions and "'x_y__upper_2'" in " ".join(w["message"] for w in collisions)


async def test_calls_after_the_agent_is_closed_fail_clearly(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, ["ok"], {"t": _test_server(trusted=True)})
    async with agent:
        await agent.run("start")
        tool = agent.tools["t__upper"]
    from smoke_core.plugin import ToolError
    from smoke_core.testing import make_tool_context

    with pytest.raises(ToolError, match="the agent was closed"):
        await tool.execute({"text": "x"}, make_tool_context(tmp_path))


# ---------------------------------------------------------------- bad input: each gives a clear error, the run goes on


async def test_server_crashing_mid_call_reports_stderr_and_reconnects(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__pid", "input": {}}]},
             {"tool_calls": [{"name": "t__crash", "input": {}}]},
             {"tool_calls": [{"name": "t__pid", "input": {}}]},
             "survived"]
    agent, _ = _agent(tmp_path, turns, {"t": _test_server(trusted=True)}, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("crash it")
    assert result.status == "completed" and result.text == "survived"
    crash = rec.completed("t__crash")[0]
    assert crash["is_error"] and crash["error"]["code"] == "tool_failed"
    assert "stopped while crash was running" in crash["error"]["message"]
    assert "crashing on purpose" in crash["error"]["message"]  # the stderr tail
    before, after = (int(d["content"][0]["text"]) for d in rec.completed("t__pid"))
    assert before != after  # restarted on the next call
    assert any("restarting MCP server 't'" in (d["message"] or "") for d in rec.of("tool.progress"))


async def test_call_that_never_answers_times_out(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "t__hang", "input": {}}]},
             {"tool_calls": [{"name": "t__upper", "input": {"text": "still here"}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, {"t": _test_server(trusted=True, timeout=1)}, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("hang")
    assert result.status == "completed"
    hang = rec.completed("t__hang")[0]
    assert hang["is_error"] and "did not answer within 1 s" in hang["error"]["message"]
    assert rec.completed("t__upper")[0]["content"][0]["text"] == "STILL HERE"


@pytest.mark.parametrize(
    ("server", "code", "fragments"),
    [
        (_test_server("hang-initialize", connect_timeout=1), "tool_failed",
         ["did not finish starting within 1 s", "never answering"]),
        (_test_server("exit-at-start"), "tool_failed",
         ["before it finished starting", "fatal: missing configuration"]),
        ({"command": "/no/such/mcp-server-binary"}, "tool_failed", ["was not found", "/no/such/mcp-server-binary"]),
        ({"url": "http://127.0.0.1:9/mcp", "connect_timeout": 10}, "transport_disconnected",
         ["could not be reached", "http://127.0.0.1:9/mcp"]),
    ],
    ids=["hang-initialize", "exit-at-start", "nonexistent-command", "refused-url"],
)
async def test_servers_that_fail_to_start_are_warned_about(tmp_path: Path, server: dict[str, Any], code: str,
                                                           fragments: list[str]) -> None:
    servers = {"bad": {**server, "trusted": True}, "good": _test_server(trusted=True)}
    agent, provider = _agent(tmp_path, ["fine"], servers)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("go on")
    assert result.status == "completed" and result.text == "fine"
    warnings = [w for w in rec.warnings() if w["details"].get("server") == "bad"]
    assert len(warnings) == 1
    assert warnings[0]["code"] == code and warnings[0]["severity"] == "warning"
    for fragment in fragments:
        assert fragment in warnings[0]["message"]
    names = _tool_names(provider)
    assert "good__upper" in names and not any(n.startswith("bad__") for n in names)


async def test_arguments_the_server_rejects(tmp_path: Path) -> None:
    _need_module("mcp_server_time")
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "trusted": True}}
    turns = [{"tool_calls": [{"name": "time__get_current_time", "input": {"timezone": "Not/AZone"}}]},
             {"tool_calls": [{"name": "time__get_current_time", "input": {"zone": "UTC"}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, servers)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("bad zone")
    assert result.status == "completed"
    rejected, invalid = rec.completed("time__get_current_time")
    assert rejected["is_error"] and rejected["error"]["code"] == "tool_failed"
    assert "Invalid timezone" in rejected["content"][0]["text"]
    # arguments outside the schema never reach the server
    assert invalid["error"]["code"] == "tool_invalid_input" and "timezone" in invalid["error"]["message"]


async def test_malformed_mcp_json_is_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"broken": {"command": ')
    agent, provider = _agent(tmp_path, ["ok"], {"good": _test_server(trusted=True)})
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("go")
    assert result.status == "completed"
    problems = [w for w in rec.warnings() if ".mcp.json" in w["message"]]
    assert len(problems) == 1 and "not valid JSON" in problems[0]["message"]
    assert "good__upper" in _tool_names(provider)


async def test_servers_from_mcp_json_and_smoke_config_ask_before_starting(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"j": {**_test_server(), "trusted": True}}}))
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text(
        "mcp_servers:\n  y:\n    command: " + json.dumps(sys.executable) + "\n    args: [" + json.dumps(TEST_SERVER)
        + "]\n")
    agent, provider = _agent(tmp_path, ["ok"], None)
    rec = Recorder(agent, {"mcp_server:j": "allow", "mcp_server:y": "allow"})
    async with agent:
        await agent.run("go")
    # "trusted" in a workspace file is ignored: both servers asked
    assert sorted(d["tool_call_id"] for d in rec.of("permission.required")) == ["mcp_server:j", "mcp_server:y"]
    assert {"j__upper", "y__upper"} <= set(_tool_names(provider))


# ---------------------------------------------------------------- HTTP


@pytest.fixture
def http_test_server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, TEST_SERVER, "http", "tok3n"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


async def test_streamable_http_with_auth_headers(tmp_path: Path, http_test_server: str) -> None:
    servers = {
        "web": {"type": "http", "url": http_test_server, "headers": {"Authorization": "Bearer tok3n"},
                "trusted": True},
        "noauth": {"type": "http", "url": http_test_server, "headers": {"Authorization": "Bearer wrong"},
                   "trusted": True, "connect_timeout": 10},
    }
    turns = [{"tool_calls": [{"name": "web__structured", "input": {"city": "Lyon"}}]}, "ok"]
    agent, provider = _agent(tmp_path, turns, servers, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("weather")
    assert result.status == "completed"
    done = rec.completed("web__structured")[0]
    assert json.loads(done["content"][0]["text"]) == {"city": "Lyon", "temperature": 21}
    assert done["data"]["structured_content"] == {"city": "Lyon", "temperature": 21}
    refused = [w for w in rec.warnings() if w["details"].get("server") == "noauth"]
    assert len(refused) == 1 and "401" in refused[0]["message"]
    assert not any(n.startswith("noauth__") for n in _tool_names(provider))


@pytest.fixture
def everything_http() -> Iterator[tuple[str, str]]:
    """server-everything's HTTP transports, bound to 127.0.0.1 by force_loopback.cjs
    (the server itself calls app.listen(PORT) with no host, i.e. all interfaces)."""
    _need_everything()
    procs: list[subprocess.Popen[str]] = []

    def launch(mode: str) -> str:
        env = {**os.environ, "PORT": "0", "NODE_OPTIONS": f"--require {LOOPBACK}"}
        proc = subprocess.Popen(["node", str(EVERYTHING), mode], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("SMOKE_LISTENING "):
                host, port = line.split()[1:3]
                assert host == "127.0.0.1"
                return f"http://127.0.0.1:{port}"
        raise AssertionError(f"server-everything {mode} exited before listening")

    try:
        yield launch("streamableHttp") + "/mcp", launch("sse") + "/sse"
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
            if proc.stderr is not None:
                proc.stderr.close()


async def test_everything_echo_over_stdio(tmp_path: Path) -> None:
    _need_everything()
    servers = {"everything": {"command": "node", "args": [str(EVERYTHING), "stdio"], "trusted": True}}
    turns = [{"tool_calls": [{"name": "everything__echo", "input": {"message": "over stdio"}}]}, "ok"]
    agent, provider = _agent(tmp_path, turns, servers)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("echo")
    assert result.status == "completed"
    assert rec.of("permission.required") == []  # echo is annotated read-only
    assert rec.completed("everything__echo")[0]["content"][0]["text"] == "Echo: over stdio"
    assert all(t["input_schema"]["type"] == "object" for t in provider.requests[0].tools)


async def test_everything_echo_over_streamable_http_and_sse(tmp_path: Path, everything_http: tuple[str, str]) -> None:
    http_url, sse_url = everything_http
    servers = {"eh": {"type": "http", "url": http_url, "trusted": True},
               "es": {"type": "sse", "url": sse_url, "trusted": True}}
    turns = [{"tool_calls": [{"name": "eh__echo", "input": {"message": "over http"}},
                             {"name": "es__echo", "input": {"message": "over sse"}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, servers)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("echo")
    assert result.status == "completed", rec.warnings()
    assert rec.completed("eh__echo")[0]["content"][0]["text"] == "Echo: over http"
    assert rec.completed("es__echo")[0]["content"][0]["text"] == "Echo: over sse"


# ---------------------------------------------------------------- CLI


def test_cli_list_and_tools(tmp_path: Path) -> None:
    import click
    from click.testing import CliRunner

    _user_servers(tmp_path, {
        "t": _test_server(), "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "connect_timeout": 5},
    })
    started = tmp_path / "repository-server-started"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fromrepo": {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]},
        "t2": _test_server(),
    }}))

    @click.group()
    def cli() -> None:
        pass

    smoke_mcp.register_commands(cli)
    runner = CliRunner()
    listed = runner.invoke(cli, ["mcp", "list", "-w", str(tmp_path), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["t"]["type"] == "stdio" and TEST_SERVER in rows["t"]["target"] and rows["t"]["origin"] == "user"
    assert rows["remote"]["target"] == "http://127.0.0.1:9/mcp"
    assert rows["fromrepo"]["origin"] == "repository"

    checked = runner.invoke(cli, ["mcp", "list", "-w", str(tmp_path), "--check", "--json"])
    assert checked.exit_code == 1, checked.output  # "remote" failed
    status = {r["name"]: r["status"] for r in json.loads(checked.stdout)}
    assert status["t"] == "ok (18 tools)" and status["remote"].startswith("failed:")
    # --check does not run the commands a repository's .mcp.json names
    assert status["fromrepo"].startswith("not started") and "smoke mcp tools fromrepo" in status["fromrepo"]
    assert not started.exists()

    tools = runner.invoke(cli, ["mcp", "tools", "t2", "-w", str(tmp_path), "--json"])
    assert tools.exit_code == 0, tools.output
    assert f"starting MCP server 't2' from {tmp_path / '.mcp.json'}" in tools.stderr
    by_name = {r["name"]: r for r in json.loads(tools.stdout)}
    assert by_name["t2__upper"]["read_only"] is True and by_name["t2__crash"]["read_only"] is False
    assert by_name["t2__crash"]["annotations"]["destructive_hint"] is True

    table = runner.invoke(cli, ["mcp", "tools", "t", "-w", str(tmp_path)])
    assert table.exit_code == 0 and "t__upper" in table.stdout

    missing = runner.invoke(cli, ["mcp", "tools", "nope", "-w", str(tmp_path)])
    assert missing.exit_code != 0 and "no MCP server named 'nope'" in missing.output


def _smoke_mcp_list(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `smoke mcp list` in a subprocess, with this test's isolated settings."""
    env = {**os.environ, "SMOKE_LOAD_PLUGINS": "mcp", "COLUMNS": "250", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "mcp", "list", "-w", str(workspace), *args],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


@pytest.mark.slow
def test_cli_list_exits_1_on_a_broken_mcp_json_and_still_prints_the_listing(tmp_path: Path) -> None:
    _user_servers(tmp_path, {"mine": _test_server()})
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".mcp.json").write_text('{"mcpServers": {')

    listed = _smoke_mcp_list(ws, "--json")
    assert listed.returncode == 1, listed.stdout + listed.stderr
    assert f"warning: {ws / '.mcp.json'} is not valid JSON" in listed.stderr
    assert [r["name"] for r in json.loads(listed.stdout)] == ["mine"]  # the valid servers, listed in full

    table = _smoke_mcp_list(ws)
    assert table.returncode == 1, table.stdout + table.stderr
    assert "is not valid JSON" in table.stderr
    assert "MCP servers (1)" in table.stdout and "mine" in table.stdout

    # an invalid entry in a valid file is a problem too; the other entries are still listed
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"bad": {"args": ["x"]}, "good": _test_server()}}))
    entry = _smoke_mcp_list(ws, "--json")
    assert entry.returncode == 1, entry.stdout + entry.stderr
    assert "warning:" in entry.stderr and "'bad'" in entry.stderr
    assert sorted(r["name"] for r in json.loads(entry.stdout)) == ["good", "mine"]


@pytest.mark.slow
def test_cli_list_exits_0_on_a_valid_configuration(tmp_path: Path) -> None:
    _user_servers(tmp_path, {"mine": _test_server()})
    ws = tmp_path / "ws"
    ws.mkdir()
    started = tmp_path / "repository-server-started"
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fromrepo": {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]},
    }}))

    listed = _smoke_mcp_list(ws, "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "warning" not in listed.stderr
    assert sorted(r["name"] for r in json.loads(listed.stdout)) == ["fromrepo", "mine"]

    # --check: "mine" starts; "fromrepo" is not started, and that is not a failure
    checked = _smoke_mcp_list(ws, "--check", "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    status = {r["name"]: r["status"] for r in json.loads(checked.stdout)}
    assert status["mine"] == "ok (18 tools)" and status["fromrepo"].startswith("not started")
    assert not started.exists()


@pytest.mark.slow
def test_cli_list_check_exits_1_when_a_server_fails_to_start(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-mcp-server")
    _user_servers(tmp_path, {"gone": {"command": missing}, "mine": _test_server()})
    ws = tmp_path / "ws"
    ws.mkdir()

    # without --check nothing is started: nothing has failed yet
    assert _smoke_mcp_list(ws, "--json").returncode == 0

    checked = _smoke_mcp_list(ws, "--check", "--json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    status = {r["name"]: r["status"] for r in json.loads(checked.stdout)}
    assert status["gone"].startswith("failed:") and "was not found" in status["gone"]
    assert status["mine"] == "ok (18 tools)"  # every server is still reported

    table = _smoke_mcp_list(ws, "--check")
    assert table.returncode == 1, table.stdout + table.stderr
    assert "failed: MCP server 'gone'" in table.stdout and "ok (18 tools)" in table.stdout



# ---------------------------------------------------------------- provider keys stay out of a server's environment


def _environment_of(rec: Recorder, tool: str) -> dict[str, str]:
    return json.loads(rec.completed(tool)[0]["content"][0]["text"])


@pytest.mark.slow
async def test_a_stdio_server_gets_no_provider_key_unless_its_env_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    monkeypatch.setenv("ACME_API_KEY", "acme-0123456789")
    monkeypatch.setenv("SMOKE_TEST_ORDINARY", "kept")
    servers = {
        "plain": _test_server(trusted=True),
        "keyed": _test_server(trusted=True, env={"OPENAI_API_KEY": "${OPENAI_API_KEY}", "EXTRA": "x"}),
    }
    turns = [{"tool_calls": [{"name": "plain__environment", "input": {}},
                             {"name": "keyed__environment", "input": {}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, servers, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("show me your environment")
    assert result.status == "completed", rec.warnings()
    plain, keyed = _environment_of(rec, "plain__environment"), _environment_of(rec, "keyed__environment")
    for env in (plain, keyed):
        assert "ANTHROPIC_API_KEY" not in env and "ACME_API_KEY" not in env
        assert env["SMOKE_TEST_ORDINARY"] == "kept"  # the person's ordinary environment is inherited
    assert "OPENAI_API_KEY" not in plain
    # the server got the key its config names; what it printed was redacted before anyone saw it
    assert keyed["OPENAI_API_KEY"] == "***" and keyed["EXTRA"] == "x"
    assert "sk-openai-0123456789" not in str(result.messages)


@pytest.mark.slow
async def test_a_server_configured_sandboxed_runs_in_the_os_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from smoke_core import sandbox

    if not sandbox.available():
        pytest.skip(f"the OS sandbox cannot run here: {sandbox.status().reason()}")
    monkeypatch.setenv("SMOKE_TEST_ORDINARY", "kept")
    servers = {"boxed": _test_server(trusted=True, sandbox=True), "plain": _test_server(trusted=True)}
    turns = [{"tool_calls": [{"name": f"{s}__{t}", "input": {}} for s in ("boxed", "plain")
                             for t in ("pid", "environment")]}, "ok"]
    agent, _ = _agent(tmp_path, turns, servers, permission="allow-all")
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("where do you run?")
    assert result.status == "completed", rec.warnings()
    boxed_pid = int(rec.completed("boxed__pid")[0]["content"][0]["text"])
    plain_pid = int(rec.completed("plain__pid")[0]["content"][0]["text"])
    assert boxed_pid < 10 < plain_pid  # its own PID namespace: it sees none of the machine's processes
    boxed_env, plain_env = _environment_of(rec, "boxed__environment"), _environment_of(rec, "plain__environment")
    assert "SMOKE_TEST_ORDINARY" not in boxed_env  # the sandbox's environment is an allow-list
    assert plain_env["SMOKE_TEST_ORDINARY"] == "kept"


@pytest.mark.slow
async def test_a_repository_entry_cannot_take_its_server_out_of_the_settings_sandbox(tmp_path: Path) -> None:
    from smoke_core import sandbox

    if not sandbox.available():
        pytest.skip(f"the OS sandbox cannot run here: {sandbox.status().reason()}")
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"r": {**_test_server(), "sandbox": False}}}))
    turns = [{"tool_calls": [{"name": "r__pid", "input": {}}, {"name": "c__pid", "input": {}}]}, "ok"]
    # the person's trusted settings sandbox every MCP server; code's own entry may still opt out
    agent, _ = _agent(tmp_path, turns, {"c": _test_server(trusted=True, sandbox=False)},
                      permission="allow-all", sandbox={"mcp": True})
    rec = Recorder(agent, {"mcp_server:r": "allow"})
    async with agent:
        result = await agent.run("where do you run?")
    assert result.status == "completed", rec.warnings()
    assert int(rec.completed("r__pid")[0]["content"][0]["text"]) < 10  # sandboxed: its own PID namespace
    assert int(rec.completed("c__pid")[0]["content"][0]["text"]) > 10  # the programmer's opt-out holds


def test_a_bad_sandbox_value_in_a_server_config_is_a_clear_problem() -> None:
    from smoke_mcp._config import parse_server

    cfg, problem = parse_server("s", {"command": "x", "sandbox": "yes"}, source=".mcp.json", allow_trusted=False)
    assert cfg is None and "'sandbox' must be true, false or {\"network\": true}" in (problem or "")
    cfg, problem = parse_server("s", {"command": "x", "sandbox": {"network": True}}, source="code", allow_trusted=True)
    assert problem is None and cfg is not None and cfg.sandbox is True and cfg.sandbox_network is True


# ---------------------------------------------------------------- a repository's servers and trust


def _repo_server(tmp_path: Path, name: str = "r", **extra: Any) -> Path:
    """A .mcp.json server whose process leaves a file behind when it starts."""
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {name: _test_server(**extra)}}))
    return tmp_path


def _started_servers(rec: Recorder) -> list[str]:
    return [d["server"] for d in rec.of("mcp.server.started")]


@pytest.mark.slow
async def test_untrusted_workspace_asks_before_starting_its_servers_even_when_marked_trusted(
    tmp_path: Path,
) -> None:
    _repo_server(tmp_path, trusted=True)
    agent, provider = _agent(tmp_path, ["ok"], None, trust_workspace=False)
    rec = Recorder(agent, {"mcp_server:r": "deny"})
    async with agent:
        await agent.run("go")
    asked = rec.of("permission.required")
    assert [d["tool_call_id"] for d in asked] == ["mcp_server:r"]
    assert "a workspace you have not trusted" in asked[0]["reason"] and ".mcp.json" in asked[0]["reason"]
    assert _started_servers(rec) == [] and "r__upper" not in _tool_names(provider)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{"auto_approve": True}, {"permission": "allow-all"}], ids=["auto_approve", "allow-all"])
async def test_automatic_approval_never_starts_an_untrusted_workspaces_servers(
    tmp_path: Path, kw: dict[str, Any]
) -> None:
    _repo_server(tmp_path)
    code = {"mine": _test_server()}  # the programmer's own server is approved automatically
    agent, provider = _agent(tmp_path, ["ok"], code, trust_workspace=False, **kw)
    rec = Recorder(agent)
    async with agent:
        result = await agent.run("go")
    assert result.status == "completed"
    assert rec.of("permission.required") == []
    assert _started_servers(rec) == ["mine"]
    refused = [w for w in rec.warnings() if w["details"].get("server") == "r"]
    assert len(refused) == 1 and refused[0]["code"] == "permission_denied"
    assert "workspace is not trusted" in refused[0]["message"] and "smoke trust" in refused[0]["message"]
    assert "r__upper" not in _tool_names(provider) and "mine__upper" in _tool_names(provider)


@pytest.mark.slow
async def test_a_trusted_workspace_with_auto_approve_still_asks_a_person_for_a_new_entry(tmp_path: Path) -> None:
    """Issue 28, item 4: folder trust decides whether the file is read, not whether each server may start."""
    _repo_server(tmp_path)
    agent, provider = _agent(tmp_path, ["ok"], None, auto_approve=True, permission="allow-all")
    rec = Recorder(agent)  # answers "deny": nobody approves
    async with agent:
        await agent.run("go")
    asked = rec.of("permission.required")
    assert [d["tool_call_id"] for d in asked] == ["mcp_server:r"] and "only a person approves" in asked[0]["reason"]
    assert _started_servers(rec) == [] and "r__upper" not in _tool_names(provider)
    refused = [w for w in rec.warnings() if w["details"].get("server") == "r"]
    assert refused[0]["code"] == "permission_denied" and "smoke mcp approve r" in refused[0]["message"]

    approving, provider2 = _agent(tmp_path, ["ok"], None, auto_approve=True)
    rec2 = Recorder(approving, {"mcp_server:r": "allow"})
    async with approving:
        await approving.run("go")
    assert _started_servers(rec2) == ["r"] and "r__upper" in _tool_names(provider2)

    remembered, _ = _agent(tmp_path, ["ok"], None, auto_approve=True)
    rec3 = Recorder(remembered)
    async with remembered:
        await remembered.run("go")
    assert rec3.of("permission.required") == [] and _started_servers(rec3) == ["r"]


@pytest.mark.slow
async def test_a_workspace_entry_passed_back_through_create_agent_keeps_its_origin(tmp_path: Path) -> None:
    """`smoke run` (and the settings layers) hand .smoke/config.yaml's mcp_servers to
    create_agent; the entry's `trusted: true` must still count for nothing."""
    entry = _test_server(trusted=True)
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text(json.dumps({"mcp_servers": {"y": entry}}))
    agent, _ = _agent(tmp_path, ["ok"], {"y": dict(entry)})
    rec = Recorder(agent, {"mcp_server:y": "allow"})
    async with agent:
        await agent.run("go")
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:y"]
    assert _started_servers(rec) == ["y"]


@pytest.mark.slow
async def test_the_users_own_config_can_trust_a_repository_server(tmp_path: Path) -> None:
    _repo_server(tmp_path, name="same")
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "same": _test_server(), "changed": _test_server("stdio"),
    }}))
    _user_servers(tmp_path, {"same": _test_server(trusted=True), "changed": _test_server(trusted=True)})
    agent, _ = _agent(tmp_path, ["ok"], None, trust_workspace=False)
    rec = Recorder(agent, {"mcp_server:changed": "deny"})
    async with agent:
        await agent.run("go")
    # "same": the repository's entry is the one the person trusted; "changed": its args differ, so it asks
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["mcp_server:changed"]
    assert _started_servers(rec) == ["same"]


@pytest.mark.slow
@pytest.mark.parametrize("entry", [
    {"env": {"K": "${OPENAI_API_KEY}"}},
    {"args": [TEST_SERVER, "stdio", "--token=${GITHUB_TOKEN}"]},
], ids=["env-provider-key", "args-token"])
async def test_an_untrusted_workspace_cannot_pass_secrets_to_its_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0123456789")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_0123456789")
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"r": {**_test_server(), **entry}}}))
    agent, _ = _agent(tmp_path, ["ok"], None, trust_workspace=False)
    rec = Recorder(agent, {"mcp_server:r": "allow"})
    async with agent:
        await agent.run("go")
    assert rec.of("permission.required") == [] and _started_servers(rec) == []
    skipped = [w for w in rec.warnings() if "secret variable" in w["message"]]
    assert len(skipped) == 1 and "smoke trust" in skipped[0]["message"]
    assert "sk-openai" not in skipped[0]["message"] and "ghp_" not in skipped[0]["message"]

    trusted, _ = _agent(tmp_path, ["ok"], None)  # a trusted workspace may (it asks, then starts)
    rec2 = Recorder(trusted, {"mcp_server:r": "allow"})
    async with trusted:
        await trusted.run("go")
    assert _started_servers(rec2) == ["r"]


# ---------------------------------------------------------------- annotations


@pytest.mark.slow
async def test_mcp_annotations_map_onto_smokes_and_unannotated_tools_ask(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"id": "u", "name": "t__upper", "input": {"text": "a"}}]},
             {"tool_calls": [{"id": "p", "name": "t__pid", "input": {}}]},
             {"tool_calls": [{"id": "a", "name": "t__annotated", "input": {}}]}, "ok"]
    agent, _ = _agent(tmp_path, turns, {"t": _test_server(trusted=True)})
    rec = Recorder(agent, {"p": "allow", "a": "allow"})
    async with agent:
        result = await agent.run("go")
        tools = agent.tools
        upper, pid, annotated = tools["t__upper"], tools["t__pid"], tools["t__annotated"]
    assert result.status == "completed"
    # readOnlyHint → no question; no annotations → mutating, asks; declared hints → asks (not read-only)
    assert [d["tool_call_id"] for d in rec.of("permission.required")] == ["p", "a"]
    assert upper.annotations.read_only_hint is True and upper.kind == "read"
    assert upper.annotations.title == "Upper-case" and upper.annotations.destructive_hint is False
    pa = pid.annotations
    assert (pa.read_only_hint, pa.destructive_hint, pa.idempotent_hint, pa.open_world_hint, pid.kind) == (
        False, True, False, True, "other")  # MCP's defaults for a tool that says nothing
    aa = annotated.annotations
    assert (aa.title, aa.destructive_hint, aa.idempotent_hint, aa.open_world_hint, annotated.kind) == (
        "Count up", False, True, False, "other")
