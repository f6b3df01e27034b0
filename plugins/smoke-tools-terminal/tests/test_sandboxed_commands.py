"""run_command / run_test under the sandbox settings: modes, the one warning
per run, honest refusal notes, the 🔒 badge; orphans (setsid, double fork,
disown) after a timeout or an abort, in both modes; and the output cap
(issue 21, rows 5 and 6)."""

from __future__ import annotations

import asyncio
import random
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_terminal
from smoke_tools_terminal import _tools
from smoke_tools_terminal._tools import run_command, run_test

from smoke_core import create_agent, sandbox
from smoke_core.demo import copy_sample_project
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context

SANDBOX = sandbox.available()
needs_bwrap = pytest.mark.skipif(not SANDBOX, reason=f"no sandbox here: {sandbox.status().reason()}")
MODES = [
    pytest.param("off", id="unsandboxed"),
    pytest.param("required", id="sandboxed", marks=needs_bwrap),
]
KEY = "sk-test-terminal-0123456789abcdef"


def _ctx(ws: Path, events: list[Any] | None = None, call: str = "call_1", **options: Any) -> Any:
    return make_tool_context(ws, tool_name="run_command", tool_call_id=call, events=events, options=options)


def _path_without_bwrap(tmp_path: Path) -> str:
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir(exist_ok=True)
    for tool in ("bash", "env", "touch", "cat"):
        found = shutil.which(tool)
        if found and not (folder / tool).exists():
            (folder / tool).symlink_to(found)
    return str(folder)


def _marked(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


async def _all_gone(marker: str, limit_s: float = 5.0) -> bool:
    deadline = time.monotonic() + limit_s
    while _marked(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


# ---------------------------------------------------------------- modes and reporting


async def test_auto_without_bwrap_runs_unsandboxed_with_one_warning_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    events: list[Any] = []
    ctx = _ctx(tmp_path, events, sandbox={"mode": "auto"})
    first = await run_command({"command": "env"}, ctx)
    second = await run_command({"command": "echo again"}, ctx)
    warnings = [d for t, d in events if t == "run.warning"]
    assert len(warnings) == 1
    message = warnings[0]["error"]["message"]
    assert "WITHOUT a sandbox" in message and "bubblewrap" in message
    assert warnings[0]["error"]["severity"] == "warning"
    assert "apt-get install bubblewrap" in warnings[0]["error"]["hint"]
    for result in (first, second):
        assert result.data["sandboxed"] is False
        assert result.presentation.badge is None
    assert KEY not in first.text_content()  # unsandboxed commands still get child_env()
    assert "CI=true" in first.text_content()


async def test_off_mode_runs_unsandboxed_without_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    events: list[Any] = []
    result = await run_command({"command": "env"}, _ctx(tmp_path, events, sandbox={"mode": "off"}))
    assert result.data["sandboxed"] is False and result.presentation.badge is None
    assert not [t for t, _ in events if t == "run.warning"]
    assert KEY not in result.text_content()


async def test_invalid_sandbox_settings_are_a_clear_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="sandbox settings are invalid"):
        await run_command({"command": "true"}, _ctx(tmp_path, sandbox={"mode": "sometimes"}))


@needs_bwrap
async def test_sandboxed_results_carry_the_badge_and_the_flag(tmp_path: Path) -> None:
    events: list[Any] = []
    result = await run_command({"command": "echo hi"}, _ctx(tmp_path, events))  # default: auto
    assert result.data["sandboxed"] is True
    assert result.presentation.badge == "🔒 sandboxed"
    assert result.presentation.tone == "success"
    assert not [t for t, _ in events if t == "run.warning"]
    test = await run_test({"command": "true"}, _ctx(tmp_path, call="t"))
    assert test.data["sandboxed"] is True and test.presentation.badge == "🔒 sandboxed"


@needs_bwrap
async def test_a_write_stopped_by_the_sandbox_says_so_and_how_to_allow_it(tmp_path: Path) -> None:
    outside = Path("/usr/smoke-sandbox-test-should-not-exist")
    result = await run_command({"command": f"touch {outside}"}, _ctx(tmp_path, sandbox={"mode": "required"}))
    text = result.text_content()
    assert result.data["exit_code"] == 1
    assert result.data["sandbox_refused"] == ["write"]
    assert f"the sandbox stopped a write outside the workspace ({outside})" in text
    assert "sandbox.allow_write" in text
    assert not outside.exists()


@needs_bwrap
async def test_a_write_to_the_git_folder_points_at_the_git_tools(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    result = await run_command({"command": "touch .git/index.lock"}, _ctx(tmp_path, sandbox={"mode": "required"}))
    assert result.data["sandbox_refused"] == ["protected"]
    assert "git_commit" in result.text_content()
    assert not (tmp_path / ".git" / "index.lock").exists()


class _Server:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.sendall(b"hello-from-the-host\n")
            conn.close()

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(5)


@needs_bwrap
async def test_network_is_off_by_default_and_the_setting_turns_it_on(tmp_path: Path) -> None:
    server = _Server()
    command = (f"{sys.executable} -c \"import socket; s = socket.create_connection(('127.0.0.1', {server.port}), 5); "
               "print(s.recv(100).decode())\"")
    try:
        off = await run_command({"command": command}, _ctx(tmp_path, sandbox={"mode": "required"}))
        assert "hello-from-the-host" not in off.text_content()
        assert off.data["sandbox_refused"] == ["network"]
        assert "sandbox.network: true" in off.text_content()
        on = await run_command({"command": command},
                               _ctx(tmp_path, call="c2", sandbox={"mode": "required", "network": True}))
        assert "hello-from-the-host" in on.text_content()
        assert on.data["sandboxed"] is True and "sandbox_refused" not in on.data
    finally:
        server.close()


@needs_bwrap
async def test_a_key_named_in_sandbox_env_is_passed_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    hidden = await run_command({"command": "echo \"[$OPENAI_API_KEY]\""}, _ctx(tmp_path))
    assert "[]" in hidden.text_content()
    named = await run_command({"command": "echo \"[$OPENAI_API_KEY]\""},
                              _ctx(tmp_path, call="c2", sandbox={"env": ["OPENAI_API_KEY"]}))
    assert f"[{KEY}]" in named.text_content()


@needs_bwrap
async def test_a_missing_allow_write_folder_is_warned_about_once(tmp_path: Path) -> None:
    events: list[Any] = []
    ctx = _ctx(tmp_path, events, sandbox={"allow_write": ["/nonexistent/smoke-folder"]})
    await run_command({"command": "true"}, ctx)
    await run_command({"command": "true"}, ctx)
    [warning] = [d for t, d in events if t == "run.warning"]
    assert "sandbox.allow_write: /nonexistent/smoke-folder" in warning["error"]["message"]


@needs_bwrap
async def test_the_demo_project_tests_run_in_the_sandbox(tmp_path: Path) -> None:
    project = copy_sample_project(tmp_path / "project")
    command = f"PYTHONDONTWRITEBYTECODE= {sys.executable} -m unittest discover -s tests"
    ctx = make_tool_context(project, tool_name="run_test", options={"sandbox": {"mode": "required"}})
    result = await run_test({"command": command}, ctx)
    assert result.data["sandboxed"] is True
    assert result.data["framework"] == "unittest" and result.data["total"] > 0
    assert result.data["status"] == "failed"  # the sample project has a real bug
    assert "Read-only file system" not in result.text_content()
    assert list(project.rglob("__pycache__"))  # byte-code written inside the workspace is fine


# ---------------------------------------------------------------- orphans (issue 21, row 5)

ORPHANS = "setsid sleep {m} & (sleep {m} &); sleep {m} & disown; echo started; wait"


def _sleeps(marker: str) -> list[int]:
    out = []
    for pid in _marked(marker):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                out.append(pid)
        except OSError:
            pass
    return out


async def _three_sleeps(marker: str) -> list[int]:
    """Wait (bounded) until the three sleeps of ORPHANS are running."""
    deadline = time.monotonic() + 10
    while len(_sleeps(marker)) < 3:
        assert time.monotonic() < deadline, f"the three sleeps never ran: {_sleeps(marker)}"
        await asyncio.sleep(0.01)
    return _sleeps(marker)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_timeout_kills_setsid_double_forked_and_disowned_children(tmp_path: Path, mode: str) -> None:
    m = f"{300 + random.random():.6f}"
    call = asyncio.ensure_future(run_command(
        {"command": ORPHANS.replace("{m}", m), "timeout_ms": 1500}, _ctx(tmp_path, sandbox={"mode": mode})
    ))
    seen = await _three_sleeps(m)
    result = await call
    assert result.data["timed_out"] is True
    assert await _all_gone(m), f"survived the timeout: {_marked(m)}"
    stopped = {p["pid"] for p in result.data["stopped_processes"]}
    assert set(seen) <= stopped
    text = result.text_content()
    assert f"stopped {len(stopped)} processes (" in text
    assert "survivors" not in result.data


@pytest.mark.parametrize("mode", MODES)
async def test_abort_kills_setsid_double_forked_and_disowned_children(tmp_path: Path, mode: str) -> None:
    m = f"{300 + random.random():.6f}"
    turns = [{"tool_calls": [{"id": "c1", "name": "run_command", "input": {"command": ORPHANS.replace("{m}", m)}}]},
             "never reached"]
    agent = create_agent(tmp_path, provider=ScriptedProvider(turns), autoload_plugins=False,
                         plugins=[smoke_tools_terminal], permission="allow-all", sandbox={"mode": mode})
    seen: list[int] = []

    async def abort_once_running() -> None:
        seen.extend(await _three_sleeps(m))
        agent.abort()

    watcher: list[asyncio.Future[None]] = []
    agent.on("tool.output", lambda e: watcher or watcher.append(asyncio.ensure_future(abort_once_running())))
    result = await agent.run("run it")
    await asyncio.gather(*watcher)
    assert result.status == "interrupted"
    assert len(seen) == 3
    assert await _all_gone(m), f"survived the abort: {_marked(m)}"


@pytest.mark.parametrize("mode", MODES)
async def test_orphans_left_by_a_finished_command_are_stopped(tmp_path: Path, mode: str) -> None:
    m = f"{300 + random.random():.6f}"
    command = f"setsid sleep {m} >/dev/null 2>&1 < /dev/null & (sleep {m} > /dev/null 2>&1 &); echo done"
    result = await run_command({"command": command}, _ctx(tmp_path, sandbox={"mode": mode}))
    assert result.data["exit_code"] == 0
    assert await _all_gone(m)
    if mode == "off":  # sandboxed, they died with the PID namespace before anything had to look
        assert "the command left processes running; stopped 2 processes" in result.text_content()


@pytest.mark.parametrize("mode", MODES)
async def test_background_processes_and_their_orphans_stop_when_the_run_ends(tmp_path: Path, mode: str) -> None:
    m = f"{300 + random.random():.6f}"
    ctx = make_tool_context(tmp_path, tool_call_id="bg", options={"sandbox": {"mode": mode}})
    result = await run_command(
        {"command": f"setsid sleep {m} & (sleep {m} &); echo up > up.txt; wait", "background": True}, ctx
    )
    assert result.data["sandboxed"] is (mode == "required")
    deadline = time.monotonic() + 10
    while len(_sleeps(m)) < 2:
        assert time.monotonic() < deadline, "the background sleeps never started"
        await asyncio.sleep(0.01)

    class Run:
        state = ctx.state

    await smoke_tools_terminal.after_run(Run())  # type: ignore[arg-type]
    assert await _all_gone(m)


# ---------------------------------------------------------------- output cap (issue 21, row 6)


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/self/status")


@pytest.mark.slow
async def test_an_output_flood_is_capped_in_the_log_the_view_and_the_live_stream(tmp_path: Path) -> None:
    size = 100 * 2**20
    cap = 1_000_000
    events: list[Any] = []
    ctx = _ctx(tmp_path, events, terminal_log_limit=cap, terminal_output_limit=2000,
               terminal_live_output_limit=50_000)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS (VmHWM) to now
    before = _rss_kib("VmRSS")
    result = await run_command({"command": f"head -c {size} /dev/zero | tr '\\0' 'y'; echo; echo END"}, ctx)
    peak = _rss_kib("VmHWM")
    data = result.data
    assert data["exit_code"] == 0 and data["timed_out"] is False  # the pipe was drained to the end
    assert data["output_bytes"] == size + len("\nEND\n")
    log = Path(data["log_path"])
    assert log.stat().st_size <= cap + 500  # the cap, plus the line saying what was cut
    assert data["log_cut_bytes"] >= size - cap
    content = log.read_bytes()
    assert content.startswith(b"yyyy") and content.endswith(b"\nEND\n")
    assert f"{data['log_cut_bytes']} bytes of output cut here".encode() in content
    assert not list(log.parent.glob("*.tail*"))  # the rotating tail segments are gone
    text = result.text_content()
    assert "bytes in the middle were cut: the log is capped at" in text and "\nEND\n" in text
    assert len(text) < 4000
    live = [d["text"] for t, d in events if t == "tool.output"]
    assert sum(map(len, live)) < 50_000 + 500
    assert "live output stopped here" in live[-1]
    assert data["live_output_stopped"] is True
    assert (peak - before) * 1024 < 64 * 2**20, f"memory grew by {(peak - before) // 1024} MiB during the flood"


async def test_a_background_flood_is_capped_too(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, call="bgflood", terminal_log_limit=100_000)
    result = await run_command(
        {"command": "head -c 5000000 /dev/zero | tr '\\0' 'z'; echo; echo END", "background": True}, ctx
    )
    bg = ctx.state[_tools.STATE_KEY][result.data["pid"]]
    await asyncio.to_thread(bg.drain.join, 30)  # the log is finished when the output ends
    assert not bg.drain.is_alive()
    log = Path(result.data["log_path"])
    content = log.read_bytes()
    assert len(content) <= 100_000 + 1000
    assert content.startswith(b"zzz") and content.endswith(b"\nEND\n")
    assert b"the rest of it is added here when the command ends" in content
    assert b"bytes of output cut here" in content
    await _tools.stop_tracked([bg])


def test_new_options_and_data_are_documented() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for option in ("terminal_log_limit", "terminal_live_output_limit", "sandboxed", "stopped_processes"):
        assert option in readme


@pytest.mark.slow
async def test_without_proc_the_process_group_is_still_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS and the BSDs have no /proc: the code path that stops the process group alone."""
    from smoke_tools_terminal import _kill

    monkeypatch.setattr(_kill, "HAVE_PROC", False)
    m = f"{300 + random.random():.6f}"
    call = asyncio.ensure_future(run_command({"command": f"sleep {m} & sleep {m} & wait", "timeout_ms": 500},
                                             _ctx(tmp_path, sandbox={"mode": "off"})))
    deadline = time.monotonic() + 10
    while len(_sleeps(m)) < 2:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    result = await call
    assert result.data["timed_out"] is True
    assert await _all_gone(m)
    assert result.data["stopped_processes"] == [{"pid": result.data["pid"], "name": "process group"}]


async def test_a_log_that_cannot_be_written_does_not_stall_the_command(tmp_path: Path) -> None:
    logs = tmp_path / ".smoke" / "runs" / "run_test"
    logs.mkdir(parents=True)
    (logs / "full.log").symlink_to("/dev/full")  # every write: "No space left on device"
    ctx = _ctx(tmp_path, call="full", terminal_output_limit=2000)
    result = await run_command({"command": "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo END"}, ctx)
    assert result.data["exit_code"] == 0 and result.data["timed_out"] is False  # the pipe kept draining
    assert result.data["output_bytes"] == 3_000_000 + len("\nEND\n")
    text = result.text_content()
    assert "the log could not be written: OSError: [Errno 28] No space left on device" in text
    assert "\nEND\n" in text
    assert not list(logs.glob("full.log.tail*"))


@pytest.mark.slow
async def test_allow_with_network_opens_the_network_for_that_one_command(tmp_path):
    """The person's "allow with network" answer reaches exactly the command it approved."""
    import socket
    import threading

    from smoke_core import sandbox as sandbox_module
    from smoke_core.plugin import create_agent
    from smoke_core.testing import ScriptedProvider

    if not sandbox_module.available():
        pytest.skip(f"the OS sandbox cannot run here: {sandbox_module.status().reason()}")
    import smoke_tools_terminal

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: [accepted.append(server.accept()[0]) for _ in range(2)], daemon=True).start()
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('REACH' + 'ED')\""
    turns = [{"tool_calls": [{"name": "run_command", "input": {"command": probe}}]},
             {"tool_calls": [{"name": "run_command", "input": {"command": probe}}]}, "done"]
    agent = create_agent(tmp_path, provider=ScriptedProvider(turns), autoload_plugins=False,
                         plugins=[smoke_tools_terminal], sandbox={"mode": "required"}, setting_sources=())
    answers = iter(["allow_network", "allow"])
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], next(answers)))
    completed = []
    agent.on("tool.completed", completed.append)
    result = await agent.run("try the network twice")
    server.close()
    assert result.status == "completed", result.error
    first, second = (c.data["content"][0]["text"] for c in completed)
    assert "REACHED" in first  # allowed with network: it connected
    assert "REACHED" not in second  # the next command is back to no network
    assert len(accepted) == 1
