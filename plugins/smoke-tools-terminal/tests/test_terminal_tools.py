"""Tests for smoke-tools-terminal: real subprocesses, real process groups."""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_terminal
from smoke_tools_terminal import _tools
from smoke_tools_terminal._tools import build_tools, run_command, run_test, summarize_tests

from smoke_core import create_agent, sandbox
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context

#: Tests that watch processes run twice: unsandboxed, and in the bwrap sandbox
#: (where pids printed by the command are the sandbox's own, so processes are
#: found on the host by a unique marker in their command line instead).
MODES = [
    pytest.param("off", id="unsandboxed"),
    pytest.param(
        "required",
        id="sandboxed",
        marks=pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox here: {sandbox.status().reason()}"),
    ),
]

# ---------------------------------------------------------------- helpers


def _alive(pid: int) -> bool:
    """True while ``pid`` is a live (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def _gone(pid: int, limit_s: float = 10.0) -> bool:
    """Poll (bounded) until ``pid`` is no longer a live process."""
    deadline = time.monotonic() + limit_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _ctx(tmp_path: Path, events: list[Any] | None = None, *, mode: str | None = None, **options: Any) -> Any:
    if mode is not None:
        options["sandbox"] = {"mode": mode}
    return make_tool_context(
        tmp_path,
        tool_name="run_command",
        tool_call_id="call_1",
        events=events,
        options=dict(options),
    )


def _pids(text: str) -> list[int]:
    return [int(line) for line in text.splitlines() if line.strip().isdigit()]


def _marker() -> str:
    """A unique ``sleep`` duration: finds the command's processes on the host."""
    return f"{300 + random.random():.6f}"


def _with_marker(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes() and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def _all_gone(marker: str, limit_s: float = 10.0) -> bool:
    deadline = time.monotonic() + limit_s
    while _with_marker(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


class _Watch(list):  # type: ignore[type-arg]
    """An event list that records, at the first output, the processes carrying ``marker``."""

    def __init__(self, marker: str, then: Any = None) -> None:
        super().__init__()
        self.marker = marker
        self.seen: list[int] = []
        self.then = then

    def append(self, item: Any) -> None:
        super().append(item)
        if item[0] == "tool.output" and not self.seen:
            self.seen = _with_marker(self.marker)
            if self.then is not None:
                self.then()


def _agent(tmp_path: Path, turns: list[Any], **kw: Any) -> Any:
    return create_agent(
        tmp_path,
        provider=ScriptedProvider(turns),
        autoload_plugins=False,
        plugins=[smoke_tools_terminal],
        permission="allow-all",
        **kw,
    )


# ---------------------------------------------------------------- registration


async def test_registers_both_tools_in_the_terminal_group(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [])
    assert set(agent.tools) == {"run_command", "run_test"}
    presentations = agent.get_tool_presentations()
    for name in ("run_command", "run_test"):
        tool = agent.tools[name]
        assert tool.group == "terminal"
        assert tool.read_only is False
        assert presentations[name]["icon"] and presentations[name]["label"]
        assert "presentation" not in tool.provider_schema()


async def test_mutating_commands_ask_for_permission(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"id": "c1", "name": "run_command", "input": {"command": "echo hi"}}]},
        "done",
    ]
    agent = create_agent(
        tmp_path,
        provider=ScriptedProvider(turns),
        autoload_plugins=False,
        plugins=[smoke_tools_terminal],
    )
    asked: list[str] = []

    def on_permission(event: Any) -> None:
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "allow")

    agent.on("permission.required", on_permission)
    result = await agent.run("say hi")
    assert asked == ["run_command"]
    assert result.status == "completed"


# ---------------------------------------------------------------- run_command basics


async def test_output_exit_code_and_streams(tmp_path: Path) -> None:
    events: list[Any] = []
    result = await run_command(
        {"command": "echo out; echo err >&2; exit 3"}, _ctx(tmp_path, events)
    )
    assert result.is_error is False  # a failing command is data, not a tool error
    assert result.data is not None
    assert result.data["exit_code"] == 3
    assert result.data["timed_out"] is False
    text = result.text_content()
    assert "out" in text and "err" in text and "exit code 3" in text
    outputs = [(d["stream"], d["text"]) for t, d in events if t == "tool.output"]
    assert ("stdout", "out\n") in outputs
    assert ("stderr", "err\n") in outputs
    assert all(d["tool_call_id"] == "call_1" for t, d in events if t == "tool.output")


async def test_output_events_are_whole_lines(tmp_path: Path) -> None:
    events: list[Any] = []
    script = "import sys\nfor i in range(200): sys.stdout.write(f'line {i}\\n')\n"
    (tmp_path / "lines.py").write_text(script)
    # block-buffered even where PYTHONUNBUFFERED is set around the tests (one write per line
    # would let a busy machine deliver 200 one-line chunks)
    result = await run_command(
        {"command": f"{sys.executable} lines.py", "env": {"PYTHONUNBUFFERED": ""}}, _ctx(tmp_path, events)
    )
    chunks = [d["text"] for t, d in events if t == "tool.output"]
    assert result.data["exit_code"] == 0
    assert chunks and all(c.endswith("\n") for c in chunks)
    assert len(chunks) < 200  # line-buffered batches, not one event per byte or line
    assert "".join(chunks) == "".join(f"line {i}\n" for i in range(200))


async def test_command_not_found_is_exit_127_as_data(tmp_path: Path) -> None:
    result = await run_command({"command": "definitely-not-a-command-xyz"}, _ctx(tmp_path))
    assert result.is_error is False
    assert result.data["exit_code"] == 127
    assert "exit code 127" in result.text_content()
    assert "not found" in result.text_content()


async def test_environment_is_non_interactive_and_takes_extra_vars(tmp_path: Path) -> None:
    result = await run_command(
        {
            "command": 'echo "$CI|$TERM|$NO_COLOR|$MY_VAR"; read x; echo "read=$?"',
            "env": {"MY_VAR": "hello world"},
        },
        _ctx(tmp_path),
    )
    assert "true|dumb|1|hello world" in result.text_content()
    assert "read=1" in result.text_content()  # stdin is closed: read hits EOF at once


async def test_bad_env_name_is_a_clear_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not a valid variable name"):
        await run_command({"command": "true", "env": {"1BAD=": "x"}}, _ctx(tmp_path))


async def test_workdir_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    result = await run_command({"command": "pwd", "workdir": "sub/dir"}, _ctx(tmp_path))
    assert str((tmp_path / "sub" / "dir").resolve()) in result.text_content()
    assert result.data["workdir"] == "sub/dir"


@pytest.mark.parametrize("workdir", ["..", "/", "/etc", "../..", "sub/../../", "~"])
async def test_workdir_outside_the_workspace_is_refused(tmp_path: Path, workdir: str) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    marker = tmp_path / "ran-outside"
    with pytest.raises(ToolError) as info:
        await run_command({"command": f"touch {marker}", "workdir": workdir}, _ctx(ws))
    assert str(ws.resolve()) in str(info.value) or "workspace" in str(info.value)
    assert not marker.exists()


async def test_workdir_symlink_leaving_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "escape").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="outside the workspace"):
        await run_command({"command": "pwd", "workdir": "escape"}, _ctx(ws))


async def test_workdir_missing_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="does not exist"):
        await run_command({"command": "pwd", "workdir": "nope"}, _ctx(tmp_path))
    with pytest.raises(ToolError, match="not a folder"):
        await run_command({"command": "pwd", "workdir": "f.txt"}, _ctx(tmp_path))


async def test_empty_or_nul_command_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        await run_command({"command": "   "}, _ctx(tmp_path))
    with pytest.raises(ToolError, match="NUL"):
        await run_command({"command": "echo a\x00b"}, _ctx(tmp_path))


async def test_output_cap_keeps_head_and_tail_and_spills_the_rest(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, terminal_output_limit=2000)
    result = await run_command({"command": "seq 1 20000"}, ctx)
    text = result.text_content()
    expected = "".join(f"{i}\n" for i in range(1, 20001))
    assert result.data["truncated"] is True
    assert result.data["output_chars"] == len(expected)
    assert len(text) < 3000
    assert text.splitlines()[1] == "1"  # head kept (after the "$ command" line)
    assert "\n20000\n" in text  # tail kept
    assert "characters omitted" in text
    log = Path(result.data["log_path"])
    assert log == ctx.artifacts_dir / "call_1.log"
    assert ".smoke/runs/run_test/call_1.log" in text  # the path is given to the model
    assert log.read_text() == expected  # the full output, nothing lost


async def test_small_output_is_not_spilled(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    result = await run_command({"command": "echo small"}, ctx)
    assert result.data["truncated"] is False
    assert "log_path" not in result.data
    assert not (tmp_path / ".smoke" / "runs" / "run_test" / "call_1.log").exists()


async def test_event_loop_is_not_blocked_while_a_command_runs(tmp_path: Path) -> None:
    # The command waits for a file that only this coroutine writes while it runs.
    command = "while [ ! -f flag ]; do sleep 0.01; done; echo saw-flag"
    task = asyncio.ensure_future(
        run_command({"command": command, "timeout_ms": 20000}, _ctx(tmp_path))
    )
    await asyncio.sleep(0)
    (tmp_path / "flag").write_text("1")
    result = await task
    assert result.data["timed_out"] is False
    assert "saw-flag" in result.text_content()


# ---------------------------------------------------------------- killing everything a command started


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path: Path, mode: str) -> None:
    m = _marker()
    events = _Watch(m)
    result = await run_command(
        {"command": f"sleep {m} & echo started; wait", "timeout_ms": 1500}, _ctx(tmp_path, events, mode=mode)
    )
    assert result.is_error is False
    assert result.data["timed_out"] is True
    assert result.data["exit_code"] != 0
    assert result.data["signal"] == "SIGTERM"
    assert "timed out" in result.text_content()
    assert events.seen, "the grandchild sleep never ran"
    assert await _all_gone(m), "the grandchild sleep survived the timeout"
    assert await _gone(result.data["pid"])
    stopped = {p["pid"] for p in result.data["stopped_processes"]}
    assert set(events.seen) <= stopped  # the result names what it killed
    assert f"stopped {len(stopped)} processes" in result.text_content()


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_term_ignoring_group_is_killed(tmp_path: Path, mode: str) -> None:
    m = _marker()
    events = _Watch(m)
    command = f"trap '' TERM; sh -c 'trap \"\" TERM; sleep {m}' & echo started; wait"
    result = await run_command({"command": command, "timeout_ms": 1500}, _ctx(tmp_path, events, mode=mode))
    assert result.data["timed_out"] is True
    assert events.seen
    assert await _all_gone(m)


async def test_timeout_above_the_limit_is_capped(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, terminal_max_timeout_ms=400)
    result = await run_command({"command": "sleep 300", "timeout_ms": 10_000_000}, ctx)
    assert result.data["timed_out"] is True
    assert "400 was used" in result.text_content()


def _go(tmp_path: Path) -> Any:
    return lambda: (tmp_path / "go").write_text("1")


#: waits (bounded) for the test to create ``go``: the test has seen the processes by then
_WAIT_GO = "for i in $(seq 1000); do [ -f go ] && break; sleep 0.01; done"


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_leftover_processes_holding_the_output_are_stopped(tmp_path: Path, mode: str) -> None:
    m = _marker()
    events = _Watch(m, then=_go(tmp_path))
    result = await run_command(
        {"command": f"sleep {m} & echo started; {_WAIT_GO}"}, _ctx(tmp_path, events, mode=mode)
    )
    assert result.data["exit_code"] == 0
    assert result.data["timed_out"] is False
    assert events.seen
    assert await _all_gone(m)
    if mode == "off":  # sandboxed, the PID namespace ended with the command: nothing was left to stop
        assert "left processes running" in result.text_content()


@pytest.mark.parametrize("mode", MODES)
async def test_detached_leftovers_are_stopped(tmp_path: Path, mode: str) -> None:
    m = _marker()
    events = _Watch(m, then=_go(tmp_path))
    result = await run_command(
        {"command": f"sleep {m} >/dev/null 2>&1 & echo started; {_WAIT_GO}"}, _ctx(tmp_path, events, mode=mode)
    )
    assert result.data["exit_code"] == 0
    assert events.seen
    assert await _all_gone(m)


@pytest.mark.parametrize("mode", MODES)
async def test_cancelled_event_kills_the_group(tmp_path: Path, mode: str) -> None:
    m = _marker()
    holder: list[Any] = []
    events = _Watch(m, then=lambda: holder[0].cancelled.set())
    ctx = _ctx(tmp_path, events, mode=mode)
    holder.append(ctx)
    result = await run_command({"command": f"sleep {m} & echo started; wait", "timeout_ms": 60_000}, ctx)
    assert result.data["aborted"] is True
    assert result.data["timed_out"] is False
    assert "aborted" in result.text_content()
    assert events.seen
    assert await _all_gone(m)


@pytest.mark.parametrize("mode", MODES)
async def test_abort_during_a_run_kills_the_group(tmp_path: Path, mode: str) -> None:
    m = _marker()
    turns = [
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "run_command",
                    "input": {"command": f"sleep {m} & echo started; wait"},
                }
            ]
        },
        "never reached",
    ]
    agent = _agent(tmp_path, turns, sandbox={"mode": mode})
    seen: list[int] = []

    def on_output(event: Any) -> None:
        seen.extend(_with_marker(m))
        agent.abort()

    agent.on("tool.output", on_output)
    completed: list[Any] = []
    agent.on("tool.completed", lambda e: completed.append(e.data))
    result = await agent.run("run something long")
    assert result.status == "interrupted"
    assert seen
    assert await _all_gone(m), "the grandchild sleep survived agent.abort()"
    assert completed and completed[0]["error"]["code"] == "tool_cancelled"


# ---------------------------------------------------------------- background


async def test_background_process_returns_at_once_and_is_stopped_when_the_run_ends(
    tmp_path: Path,
) -> None:
    command = "echo started; exec sleep 300"
    turns = [
        {
            "tool_calls": [
                {
                    "id": "bg1",
                    "name": "run_command",
                    "input": {"command": command, "background": True},
                }
            ]
        },
        "done",
    ]
    agent = _agent(tmp_path, turns)
    results: list[dict[str, Any]] = []
    alive_during_run: list[bool] = []

    def on_completed(event: Any) -> None:
        results.append(event.data)
        alive_during_run.append(_alive(event.data["data"]["pid"]))

    agent.on("tool.completed", on_completed)
    result = await agent.run("start a server")
    assert result.status == "completed"
    data = results[0]["data"]
    assert data["background"] is True
    assert alive_during_run == [True]
    assert "pid" in results[0]["content"][0]["text"]
    assert await _gone(data["pid"]), "after_run did not stop the background process"
    assert Path(data["log_path"]).parent == tmp_path / ".smoke" / "runs" / result.run_id
    assert data["pid"] not in _tools.LIVE


async def test_close_agent_stops_background_processes(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [])
    ctx = make_tool_context(tmp_path, tool_call_id="bg2", options=agent.options)
    result = await run_command({"command": "echo started; exec sleep 300", "background": True}, ctx)
    pid = result.data["pid"]
    assert _alive(pid)
    assert pid in ctx.state[_tools.STATE_KEY]
    log = Path(result.data["log_path"])
    deadline = time.monotonic() + 10
    while not log.read_text():
        assert time.monotonic() < deadline, "the background output never reached its log"
        await asyncio.sleep(0.01)
    assert log.read_text() == "started\n"
    await agent.aclose()
    assert await _gone(pid)
    assert pid not in _tools.LIVE


@pytest.mark.parametrize("mode", MODES)
async def test_after_run_stops_the_whole_background_group(tmp_path: Path, mode: str) -> None:
    m = _marker()
    ctx = make_tool_context(tmp_path, tool_call_id="bg3", options={"sandbox": {"mode": mode}})
    result = await run_command(
        {"command": f"sleep {m} & echo started > child.started; wait", "background": True}, ctx
    )
    marker = tmp_path / "child.started"
    deadline = time.monotonic() + 10
    while not marker.exists() or not marker.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert _with_marker(m)

    class Run:
        state = ctx.state

    await smoke_tools_terminal.after_run(Run())  # type: ignore[arg-type]
    assert await _all_gone(m)
    assert await _gone(result.data["pid"])
    assert _tools.STATE_KEY not in ctx.state


# ---------------------------------------------------------------- run_test


async def test_run_test_reports_a_real_pytest_failure_and_pass(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "def test_ok():\n    assert True\n\ndef test_bad():\n    assert 1 == 2\n"
    )
    command = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider test_sample.py"
    ctx = make_tool_context(tmp_path, tool_name="run_test", tool_call_id="t1")
    failing = await run_test({"command": command}, ctx)
    assert failing.is_error is False
    assert failing.data["exit_code"] == 1
    assert failing.data["status"] == "failed"
    assert failing.data["failed"] == 1 and failing.data["passed"] == 1
    assert failing.text_content().startswith("Tests FAILED (exit code 1; 1 failed, 1 passed)")

    (tmp_path / "test_sample.py").write_text("def test_ok():\n    assert True\n")
    passing = await run_test({"command": command}, ctx)
    assert passing.data["exit_code"] == 0
    assert passing.data["status"] == "passed"
    assert passing.data["passed"] == 1
    assert passing.text_content().startswith("Tests passed (exit code 0; 1 passed)")


async def test_run_test_timeout(tmp_path: Path) -> None:
    ctx = make_tool_context(tmp_path, tool_name="run_test")
    result = await run_test({"command": "sleep 300", "timeout_ms": 200}, ctx)
    assert result.data["timed_out"] is True
    assert result.data["status"] == "timed_out"
    assert result.text_content().startswith("Tests timed out")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "..F\n=== 1 failed, 2 passed, 1 skipped in 0.12s ===\n",
            {"failed": 1, "passed": 2, "skipped": 1},
        ),
        ("3 passed in 0.01s\n", {"passed": 3}),
        (
            "Ran 4 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n",
            {"total": 4, "passed": 2, "failed": 1, "errors": 1},
        ),
        ("Ran 2 tests in 0.001s\n\nOK\n", {"total": 2, "passed": 2, "failed": 0}),
        ("Tests:       1 failed, 3 passed, 4 total\n", {"failed": 1, "passed": 3, "total": 4}),
        ("test result: FAILED. 3 passed; 1 failed; 0 ignored\n", {"passed": 3, "failed": 1}),
        ("--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\nFAIL\n", {"passed": 1, "failed": 1}),
        ("nothing recognisable\n", {}),
    ],
)
def test_summarize_tests(output: str, expected: dict[str, int]) -> None:
    summary = summarize_tests(output)
    summary.pop("framework", None)
    assert summary == expected


def test_tool_schemas_are_strict() -> None:
    tools = {t.name: t for t in build_tools()}
    assert tools["run_command"].validate_input({"command": "ls", "bogus": 1}) is not None
    assert tools["run_command"].validate_input({"command": "ls", "timeout_ms": 0}) is not None
    assert tools["run_command"].validate_input({"command": "ls", "env": {"A": 1}}) is not None
    assert tools["run_test"].validate_input({"command": "pytest", "background": True}) is not None
    assert (
        tools["run_command"].validate_input(
            {"command": "ls", "env": {"A": "b"}, "background": False}
        )
        is None
    )
