"""``smoke run`` in scripts and pipes, and the session flags: ``-p/--print``,
the task from stdin, exit statuses, closed pipes, ``--continue``,
``--resume`` (the picker driven by keys in a real terminal), ``--fork``,
``.smoke/.gitignore`` and ``smoke sessions`` naming its store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_cli import Pty, clean_env, smoke, write_scripted_provider_plugin

pytestmark = pytest.mark.slow


def scripted_env(tmp_path: Path, turns: list, **extra: str) -> dict[str, str]:
    plugdir = tmp_path / "plug"
    if not plugdir.exists():
        write_scripted_provider_plugin(plugdir)
    return clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted",
                     SMOKE_TEST_TURNS=json.dumps(turns), COLUMNS="200", **extra)


def ws_of(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


def run(*args: str, ws: Path, env: dict[str, str], input: str | None = None) -> subprocess.CompletedProcess:
    return smoke("run", "--provider", "cli-scripted", *args, cwd=ws, env=env, input=input)


# ------------------------------------------------------------ answer only


def test_piped_stdout_gets_only_the_answer_and_the_transcript_goes_to_stderr(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["the final answer"])
    proc = run("say it", ws=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "the final answer\n"
    assert "✔ completed" in proc.stderr and "session:" in proc.stderr


def test_print_flag_and_transcript_flag(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["only this"])
    proc = run("-p", "go", ws=ws, env=env)
    assert proc.returncode == 0 and proc.stdout == "only this\n"
    proc = run("--print", "go", ws=ws, env=env)
    assert proc.returncode == 0 and proc.stdout == "only this\n"
    proc = run("--transcript", "go", ws=ws, env=env)
    assert proc.returncode == 0 and "✔ completed" in proc.stdout and "only this" in proc.stdout


def test_provider_has_no_short_p_any_more(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["x"])
    proc = smoke("run", "-p", "cli-scripted", "go", cwd=ws, env=env)
    # -p is --print now: "cli-scripted" is the TASK and "go" an extra argument
    assert proc.returncode == 2 and "unexpected extra argument" in proc.stderr.lower()


def test_task_from_stdin_dash_and_appended_context(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["ok"])
    proc = run(ws=ws, env=env, input="fix the thing from stdin\n")
    assert proc.returncode == 0, proc.stderr
    proc2 = run("-", ws=ws, env=env, input="dash task\n")
    assert proc2.returncode == 0, proc2.stderr
    proc3 = run("summarise this", ws=ws, env=env, input="line one\nline two\n")
    assert proc3.returncode == 0, proc3.stderr
    shown = smoke("sessions", cwd=ws, env=env).stdout
    assert "fix the thing from stdin" in shown and "dash task" in shown
    sessions = [s for s in shown.split() if s.startswith("ses_")]
    transcripts = "\n".join(smoke("sessions", "show", s, cwd=ws, env=env).stdout for s in sessions)
    assert "[user] summarise this\n\n<stdin>\nline one\nline two\n</stdin>" in transcripts


def test_binary_or_huge_stdin_is_one_message_and_exit_2(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["never"])
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted"],
                          cwd=ws, env=env, input=b"\x89PNG\r\n\x1a\n\x00\x00", capture_output=True)
    assert proc.returncode == 2 and b"stdin is binary" in proc.stderr and b"Traceback" not in proc.stderr
    big = "word " * 200_000  # ~250k tokens: more than the 128k context window
    proc = run("look at this", ws=ws, env=env, input=big)
    assert proc.returncode == 2 and "more than the model's context window" in proc.stderr
    assert not (ws / ".smoke" / "sessions.db").exists() or "ses_" not in smoke("sessions", cwd=ws, env=env).stdout


def test_exit_status_table(tmp_path):
    ws = ws_of(tmp_path)
    looping = [{"tool_calls": [{"name": "nosuch", "input": {}}]}] * 5
    env = scripted_env(tmp_path, looping)
    proc = run("--max-steps", "2", "go", ws=ws, env=env)
    assert proc.returncode == 3, proc.stderr  # the step limit
    proc = run("", ws=ws, env=env)
    assert proc.returncode == 2  # nothing ran


def test_json_into_a_closed_pipe_ends_quietly(tmp_path):
    ws = ws_of(tmp_path)
    steps = [{"text": "x" * 10, "tool_calls": [{"name": f"nosuch{i}", "input": {}}]} for i in range(30)]
    env = scripted_env(tmp_path, [*steps, "done"], SMOKE_TEST_DELAY="0.05")
    script = (f"{sys.executable} -m smoke_core.cli run --provider cli-scripted --json go | head -1; "
              f"echo \"status=${{PIPESTATUS[0]}}\"")
    proc = subprocess.run(["bash", "-c", script], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines()[0].startswith('{"type": "run.started"')
    status = int(proc.stdout.strip().rsplit("status=", 1)[1])
    assert status in (0, 141)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr


def test_print_into_a_closed_pipe_ends_quietly(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["line\n" * 10_000])
    script = f"{sys.executable} -m smoke_core.cli run --provider cli-scripted -p go | head -1"
    proc = subprocess.run(["bash", "-c", script], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout == "line\n"
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_the_final_answer_is_printed_once_at_a_terminal(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, [{"text": "let me look first", "tool_calls": [{"name": "nosuch", "input": {}}]},
                                  "THE-ANSWER-TEXT"], TERM="xterm")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "go"], ws, env)
    assert term.finish() == 0
    assert term.buffer.count("THE-ANSWER-TEXT") == 1, term.buffer
    assert term.buffer.count("let me look first") == 1


def test_print_at_a_terminal_shows_the_answer_once(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["THE-ANSWER-TEXT"], TERM="xterm")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "-p", "go"], ws, env)
    assert term.finish() == 0
    assert term.buffer.count("THE-ANSWER-TEXT") == 1, term.buffer


# ------------------------------------------------------------ sessions


def test_continue_takes_the_last_session_of_this_folder(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["ECHO_LAST_RESULT"])
    proc = run("--continue", "go", ws=ws, env=env)
    assert proc.returncode == 2 and "no session in this folder yet" in proc.stderr
    env["SMOKE_TEST_TURNS"] = json.dumps(["first answer"])
    assert run("first task", ws=ws, env=env).returncode == 0
    env["SMOKE_TEST_TURNS"] = json.dumps(["second answer"])
    proc = run("-c", "second task", ws=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    sessions = [s for s in smoke("sessions", cwd=ws, env=env).stdout.split() if s.startswith("ses_")]
    assert len(sessions) == 1
    shown = smoke("sessions", "show", sessions[0], cwd=ws, env=env).stdout.splitlines()
    assert shown == ["[user] first task", "[assistant] first answer", "[user] second task",
                     "[assistant] second answer"]


def test_resume_by_id_and_unknown_id(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["a1"])
    assert run("--session", "named", "t1", ws=ws, env=env).returncode == 0
    env["SMOKE_TEST_TURNS"] = json.dumps(["a2"])
    assert run("t2", "--resume", "named", ws=ws, env=env).returncode == 0
    assert smoke("sessions", "show", "named", cwd=ws, env=env).stdout.count("[user]") == 2
    proc = run("t3", "--resume", "nosuch", ws=ws, env=env)
    assert proc.returncode == 2 and "no session 'nosuch'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("t3", "--resume", ws=ws, env=env)  # no id and no terminal
    assert proc.returncode == 2 and "needs a terminal" in proc.stderr
    proc = run("t3", "--continue", "--session", "named", ws=ws, env=env)
    assert proc.returncode == 2 and "give one of them" in proc.stderr


def test_resume_picker_is_driven_by_keys(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["older answer"], TERM="xterm")
    assert run("--session", "older", "the older task", ws=ws, env=env).returncode == 0
    env["SMOKE_TEST_TURNS"] = json.dumps(["newer answer"])
    assert run("--session", "newer", "the newer task", ws=ws, env=env).returncode == 0
    env["SMOKE_TEST_TURNS"] = json.dumps(["ECHO_LAST_RESULT"])
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "follow up",
                "--resume"], ws, env)
    screen = term.read_until("q leave")
    screen += term.read_until("the older task")
    assert screen.index("the newer task") < screen.index("the older task")  # the most recent first
    assert "answered" in screen
    term.send("\x1b[B")   # down: the older session
    term.read_until("\x1b[7m>  2.")
    term.send("\r")
    term.read_until("resuming older")
    assert term.finish() == 0
    shown = smoke("sessions", "show", "older", cwd=ws, env=env).stdout
    assert "[user] follow up" in shown
    assert "follow up" not in smoke("sessions", "show", "newer", cwd=ws, env=env).stdout
    # q leaves without running anything
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "x", "--resume"],
               ws, env)
    term.read_until("q leave")
    term.send("q")
    assert term.finish() == 130
    assert "no session chosen" in term.buffer


def test_fork_copies_the_history_and_leaves_the_source(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["base answer"])
    assert run("--session", "base", "base task", ws=ws, env=env).returncode == 0
    env["SMOKE_TEST_TURNS"] = json.dumps(["fork answer"])
    proc = run("--fork", "base", "fork task", ws=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "forked base (2 messages)" in proc.stderr
    new = proc.stderr.split("into the new session ", 1)[1].split()[0]
    assert smoke("sessions", "show", "base", cwd=ws, env=env).stdout.count("[user]") == 1
    forked = smoke("sessions", "show", new, cwd=ws, env=env).stdout.splitlines()
    assert forked == ["[user] base task", "[assistant] base answer", "[user] fork task", "[assistant] fork answer"]
    proc = run("--fork", "nosuch", "x", ws=ws, env=env)
    assert proc.returncode == 2 and "no session 'nosuch'" in proc.stderr


def test_fork_of_a_session_held_by_another_run_is_refused(tmp_path):
    from smoke_core.store.protocol import LeaseHolder
    from smoke_core.store.sqlite import SQLiteStore

    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["base answer"])
    assert run("--session", "base", "base task", ws=ws, env=env).returncode == 0
    store = SQLiteStore(ws / ".smoke" / "sessions.db")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        holder = LeaseHolder(token="other-run", host=os.uname().nodename, pid=other.pid)
        assert store.acquire_lease("base", holder, 120).acquired
        proc = run("--fork", "base", "x", ws=ws, env=env)
        assert proc.returncode == 2 and "in use by another run" in proc.stderr and "nothing was copied" in proc.stderr
    finally:
        other.kill()
        other.wait()
        store.close()


def test_smoke_folder_gets_its_gitignore_once(tmp_path):
    ws = ws_of(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    env = scripted_env(tmp_path, ["ok"])
    assert run("go", ws=ws, env=env).returncode == 0
    assert (ws / ".smoke" / ".gitignore").exists()
    (ws / ".smoke" / "config.yaml").write_text("max_steps: 5\n")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws,
                            capture_output=True, text=True).stdout
    assert ".smoke/config.yaml" in status and ".smoke/.gitignore" in status
    assert "sessions.db" not in status and "last-session" not in status


def test_python_api_session_and_fork(tmp_path):
    import asyncio

    from smoke_core import create_agent
    from smoke_core.store.sqlite import SQLiteStore
    from smoke_core.testing import ScriptedProvider

    store = SQLiteStore(tmp_path / "s.db")
    provider = ScriptedProvider(["one", "two", "three"])
    agent = create_agent(tmp_path, provider=provider, store=store, session_id="a", autoload_plugins=False)

    async def go() -> None:
        await agent.run("first")
        await agent.run("second", session="a", fork=True)
        assert agent.session_id != "a"
        with pytest.raises(LookupError):
            await agent.run("x", session="nosuch", fork=True)
        await agent.run("third", session="a")
        assert agent.session_id == "a"

    asyncio.run(go())
    assert [m["role"] for m in store.load("a")] == ["user", "assistant", "user", "assistant"]
    forks = [i.session_id for i in store.list_sessions() if i.session_id != "a"]
    assert len(forks) == 1
    texts = [b["text"] for m in store.load(forks[0]) for b in m["content"] if b["type"] == "text"]
    assert texts == ["first", "one", "second", "two"]
    store.close()


def test_a_misspelt_provider_gets_did_you_mean(tmp_path):
    ws = ws_of(tmp_path)
    env = scripted_env(tmp_path, ["x"])
    proc = smoke("run", "--provider", "cli-scriptd", "go", cwd=ws, env=env)
    assert proc.returncode == 2 and "Did you mean 'cli-scripted'?" in proc.stderr
