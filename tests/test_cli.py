"""The CLI: click's runner for the plain paths, real subprocesses (and a
pseudo-terminal) for prompts, JSON streams, signals and the demo."""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoke_core.cli import cli
from smoke_core.testing import Pty

ROOT = Path(__file__).resolve().parents[1]
TOOL_PLUGINS = "tools_filesystem,tools_search,tools_terminal,tools_agent"


def have_tool_plugins() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in
               ("smoke_tools_filesystem", "smoke_tools_search", "smoke_tools_terminal", "smoke_tools_agent"))


def needs_tools(test):
    """Runs in the `tests` nox session (plugins installed together); skipped without them."""
    skip = pytest.mark.skipif(not have_tool_plugins(), reason="needs the smoke-tools-* plugins installed")
    return pytest.mark.integration(skip(test))

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY",
            "GEMINI_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "TOGETHER_API_KEY",
            "FIREWORKS_API_KEY", "CEREBRAS_API_KEY", "HF_TOKEN", "HUGGINGFACE_API_KEY")


def clean_env(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS and k != "SMOKE_LOAD_PLUGINS"}
    env["HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "home" / ".config")
    env["XDG_STATE_HOME"] = str(tmp_path / "home" / ".state")
    env["SMOKE_MANAGED_SETTINGS"] = str(tmp_path / "no-managed.yaml")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def smoke(*args, cwd, env, input=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=timeout)


def sample(tmp_path) -> Path:
    from smoke_core.demo import copy_sample_project

    return copy_sample_project(tmp_path / "project")


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and "smoke, version" in result.output


def test_no_key_is_a_usage_error_pointing_to_demo(tmp_path):
    proc = smoke("run", "do something", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2
    assert "no model provider is configured" in proc.stderr
    assert "smoke demo" in proc.stderr
    assert "smoke run --provider ollama" in proc.stderr  # the local-model line


def test_bad_config_is_a_usage_error(tmp_path):
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text("provider: [unclosed\n")
    proc = smoke("run", "x", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2 and "not valid YAML" in proc.stderr


def test_unknown_provider_is_a_usage_error(tmp_path):
    proc = smoke("run", "x", "--provider", "nope", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2 and "unknown provider 'nope'" in proc.stderr


@needs_tools
def test_json_stream_follows_event_order(tmp_path):
    project = sample(tmp_path)
    proc = smoke("run", "--provider", "demo", "--yes", "--json", "fix median", cwd=project,
                 env=clean_env(tmp_path, SMOKE_LOAD_PLUGINS=TOOL_PLUGINS))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert types.count("step.started") == types.count("step.ended")
    for a, b in itertools.pairwise(events):
        assert a["timestamp"] <= b["timestamp"]
    starts = [e["data"]["tool_call_id"] for e in events if e["type"] == "tool.started"]
    ends = [e["data"]["tool_call_id"] for e in events if e["type"] == "tool.completed"]
    assert sorted(starts) == sorted(ends) and len(starts) >= 8
    assert "sorted(values)" in (project / "stats" / "core.py").read_text()


@needs_tools
def test_without_terminal_or_yes_approvals_are_denied_not_hung(tmp_path):
    project = sample(tmp_path)
    proc = smoke("run", "--provider", "demo", "fix median", cwd=project,
                 env=clean_env(tmp_path, SMOKE_LOAD_PLUGINS=TOOL_PLUGINS), input="", timeout=120)
    assert "no terminal is attached: denied" in proc.stderr
    assert "--yes" in proc.stderr
    assert "list(values)" in (project / "stats" / "core.py").read_text()  # nothing changed


@needs_tools
def test_demo_yes_fixes_the_bug_and_tests_pass(tmp_path):
    target = tmp_path / "demo"
    proc = smoke("demo", "--yes", "--workspace", str(target), cwd=tmp_path,
                 env=clean_env(tmp_path, SMOKE_LOAD_PLUGINS=TOOL_PLUGINS, COLUMNS="200"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "simulated model" in proc.stdout
    assert "sample project tests after the run: pass" in proc.stdout
    from smoke_core import sandbox

    if sandbox.available():  # the default mode (auto) runs the demo's commands in the OS sandbox
        assert proc.stdout.count("🔒 sandboxed") == 2, proc.stdout
    assert "sorted(values)" in (target / "stats" / "core.py").read_text()
    check = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=target,
                           capture_output=True, text=True)
    assert check.returncode == 0


# ------------------------------------------------------------ sessions


def write_scripted_provider_plugin(root: Path) -> Path:
    """A real plugin distribution (dist-info on PYTHONPATH) adding the provider
    `cli-scripted`, whose turns are read from $SMOKE_TEST_TURNS."""
    info = root / "smoke_cli_scripted-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-cli-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\ncli_scripted = smoke_cli_scripted\n")
    (root / "smoke_cli_scripted.py").write_text(textwrap.dedent(
        """
        import json, os
        from smoke_core import hookimpl

        def _answer(request):
            last = request.messages[-1]
            texts = [c.get("text", "") for b in last["content"] for c in b.get("content", [])]
            return "the answer was: " + " ".join(texts)

        @hookimpl
        def register_providers(register):
            def factory(**kw):
                from smoke_core.testing import ScriptedProvider
                turns = json.loads(os.environ["SMOKE_TEST_TURNS"])
                turns = [_answer if t == "ECHO_LAST_RESULT" else t for t in turns]
                return ScriptedProvider(turns, delay=float(os.environ.get("SMOKE_TEST_DELAY", "0")))
            register("cli-scripted", factory, env_var="CLI_SCRIPTED_KEY")
        """
    ))
    return root


@pytest.mark.slow
def test_sessions_list_show_and_continue(tmp_path):
    plugdir = write_scripted_provider_plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted",
                    SMOKE_TEST_TURNS=json.dumps(["first answer"]))
    proc = smoke("run", "--provider", "cli-scripted", "--session", "work", "first task", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    env["SMOKE_TEST_TURNS"] = json.dumps(["second answer"])
    proc = smoke("run", "--provider", "cli-scripted", "--session", "work", "second task", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    proc = smoke("sessions", cwd=ws, env={**env, "COLUMNS": "200"})
    assert "work" in proc.stdout and "first task" in proc.stdout
    proc = smoke("sessions", "show", "work", cwd=ws, env=env)
    lines = proc.stdout.splitlines()
    assert lines == ["[user] first task", "[assistant] first answer", "[user] second task", "[assistant] second answer"]
    proc = smoke("sessions", "show", "nope", cwd=ws, env=env)
    assert proc.returncode == 2 and "smoke sessions" in proc.stderr


@pytest.mark.slow
@needs_tools
def test_sigkill_loses_at_most_the_step_in_flight(tmp_path):
    project = sample(tmp_path)
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS=TOOL_PLUGINS)
    cmd = [sys.executable, "-m", "smoke_core.cli", "run", "--provider", "demo", "--yes", "--json",
           "--session", "crashy", "fix median"]
    proc = subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = []
    try:
        for line in proc.stdout:
            event = json.loads(line)
            seen.append(event["type"])
            if event["type"] == "step.ended" and event["data"]["step"] == 3:
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    db = sqlite3.connect(project / ".smoke" / "sessions.db")
    rows = db.execute("SELECT role, content FROM messages WHERE session_id='crashy' ORDER BY seq").fetchall()
    db.close()
    roles = [r[0] for r in rows]
    # task + 3 complete steps (assistant + tool results) are on disk
    assert roles[:7] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    # continuing the session sees that history
    plugdir = write_scripted_provider_plugin(tmp_path / "plug")
    env2 = clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted",
                     SMOKE_TEST_TURNS=json.dumps(["continuing"]))
    done = smoke("run", "--provider", "cli-scripted", "--session", "crashy", "--json", "go on", cwd=project, env=env2)
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(project / ".smoke" / "sessions.db")
    count = db.execute("SELECT COUNT(*) FROM messages WHERE session_id='crashy'").fetchone()[0]
    db.close()
    assert count >= len(rows) + 2


# ------------------------------------------------------------ a real terminal (smoke_core.testing.Pty)


@needs_tools
def test_pty_approval_prompts(tmp_path):
    project = sample(tmp_path)
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS=TOOL_PLUGINS, COLUMNS="160", TERM="xterm")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "demo", "fix median"], project, env)
    term.read_until("allow once [y]")             # first run_test
    term.send("y\n")
    out = term.read_until("allow once [y]")       # the edit, shown as a diff
    assert "sorted(values)" in out and "list(values)" in out
    term.send("a\n")
    term.read_until("allow once [y]")             # run_test again (a different tool)
    term.send("y\n")
    assert term.finish() == 0
    assert "sorted(values)" in (project / "stats" / "core.py").read_text()


@pytest.mark.slow
@pytest.mark.integration
def test_pty_ask_user_and_ctrl_c(tmp_path):
    pytest.importorskip("smoke_tools_agent")
    plugdir = write_scripted_provider_plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        "ECHO_LAST_RESULT",
    ]
    env = clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted,tools_agent",
                    SMOKE_TEST_TURNS=json.dumps(turns), COLUMNS="160", TERM="xterm")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "pick"], ws, env)
    term.read_until("Which colour?")
    term.read_until("answer:")
    term.send("2\n")
    out = term.read_until("completed")
    assert term.finish() == 0
    assert "blue" in out + term.buffer and "the answer was:" in out + term.buffer

    # Ctrl-C while paused on a question: interrupted, exit 130, transcript kept
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", "--session", "cc", "pick"],
               ws, env)
    term.read_until("answer:")
    os.killpg(term.proc.pid, signal.SIGINT)
    term.read_until("interrupted")
    assert term.finish() == 130
    proc = smoke("sessions", "show", "cc", cwd=ws, env=env)
    assert "[user] pick" in proc.stdout and "ask_user" in proc.stdout


@pytest.mark.integration
def test_smoke_tools_lists_every_group(tmp_path):
    import importlib.util

    plugins = ("smoke_tools_filesystem", "smoke_tools_search", "smoke_tools_terminal", "smoke_tools_git",
               "smoke_tools_agent", "smoke_skills")
    if not all(importlib.util.find_spec(p) for p in plugins):
        pytest.skip("needs every first-party tool plugin installed")
    env = clean_env(tmp_path)
    (tmp_path / "home").mkdir()
    proc = smoke("tools", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    tools = listing["tools"]
    groups = {t["group"] for t in tools}
    assert {"filesystem", "search", "terminal", "git", "agent", "skills"} <= groups
    by_name = {t["name"]: t for t in tools}
    assert by_name["read_file"]["read_only"] and not by_name["write_file"]["read_only"]
    assert all(t["presentation"].get("icon") for t in tools)
    from smoke_core import sandbox

    assert listing["sandbox"]["available"] is sandbox.status().works
    assert listing["sandbox"]["mode"] == "auto"
    # the table fits 80 columns, and no tool name is cut
    proc = smoke("tools", cwd=tmp_path, env={**env, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for tool in tools:
        assert any(f" {tool['name']} " in line for line in lines), tool["name"]
    status = "available" if sandbox.status().works else "not available"
    assert f"sandbox: {status}" in proc.stdout


def test_provider_detected_from_environment_and_named(tmp_path):
    plugdir = write_scripted_provider_plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted",
                    SMOKE_TEST_TURNS=json.dumps(["hello from the detected provider"]), CLI_SCRIPTED_KEY="k")
    proc = smoke("run", "say hi", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "using provider cli-scripted (found CLI_SCRIPTED_KEY)" in proc.stderr
    assert "hello from the detected provider" in proc.stdout


def test_config_file_chooses_provider(tmp_path):
    plugdir = write_scripted_provider_plugin(tmp_path / "plug")
    ws = tmp_path / "ws"
    (ws / ".smoke").mkdir(parents=True)
    (ws / ".smoke" / "config.yaml").write_text("provider: cli-scripted\nmodel: tiny\n")
    env = clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="cli_scripted",
                    SMOKE_TEST_TURNS=json.dumps(["configured"]))
    # an untrusted folder does not choose the provider (nor its endpoint)
    proc = smoke("run", "--json", "go", cwd=ws, env=env)
    assert proc.returncode == 2
    assert "ignored settings in" in proc.stderr and "provider" in proc.stderr and "smoke trust" in proc.stderr
    # the user's own settings do
    user = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("provider: cli-scripted\n")
    proc = smoke("run", "--json", "go", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    started = json.loads(proc.stdout.splitlines()[0])
    assert started["type"] == "run.started" and started["data"]["provider"] == "scripted"
    # and so does a trusted folder's file
    user.write_text("")
    assert smoke("trust", str(ws), cwd=ws, env=env).returncode == 0
    proc = smoke("run", "--json", "go", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "ignored settings" not in proc.stderr


# ------------------------------------------------------------ trust and approvals at a terminal


def terminal_env(tmp_path, turns, plugins="cli_scripted,tools_terminal"):
    plugdir = tmp_path / "plug"
    if not plugdir.exists():
        write_scripted_provider_plugin(plugdir)
    return clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS=plugins,
                     SMOKE_TEST_TURNS=json.dumps(turns), COLUMNS="200", TERM="xterm")


def run_command_turns(command):
    return [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "ECHO_LAST_RESULT"]


def pty_smoke(ws, env, *args):
    return Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "cli-scripted", *args, "go"], ws, env)


@pytest.mark.slow
@pytest.mark.integration  # needs smoke-tools-terminal: the `tests` nox session
def test_pty_escape_sequences_are_shown_as_what_they_are(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    ws.mkdir()
    spoof = "touch X;\x1bM\x1bE  $ ls -la"
    term = pty_smoke(ws, terminal_env(tmp_path, run_command_turns(spoof)))
    out = term.read_until("allow once [y]")
    assert "touch X;␛M␛E  $ ls -la" in out
    assert "\x1bM" not in out and "\x1bE" not in out  # nothing reached the terminal raw
    assert "control or invisible character" in out
    term.send("n\n")
    assert term.finish() == 0
    assert not (ws / "X").exists()


@pytest.mark.slow
@pytest.mark.integration  # needs smoke-tools-terminal: the `tests` nox session
def test_pty_long_inputs_are_shown_whole_with_their_length(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    ws.mkdir()
    spoof = "ls -la" + " " * 5000 + "; touch Y"
    term = pty_smoke(ws, terminal_env(tmp_path, run_command_turns(spoof)))
    out = term.read_until("allow once [y]")
    assert "ls -la⟨5000 spaces⟩; touch Y" in out
    assert "long input: 5,015 characters" in out and "(5,015 characters)" in out
    term.send("n\n")
    assert term.finish() == 0
    assert not (ws / "Y").exists()


@pytest.mark.slow
@pytest.mark.integration  # needs smoke-tools-terminal: the `tests` nox session
def test_pty_always_writes_a_rule_the_next_run_honours(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = terminal_env(tmp_path, run_command_turns("echo remembered > out.txt"))
    assert smoke("trust", str(ws), cwd=ws, env=env).returncode == 0
    term = pty_smoke(ws, env)
    term.read_until("always [A]")
    term.send("A\n")
    term.read_until("remember for this folder")
    term.send("l\n")
    out = term.read_until("completed")
    assert term.finish() == 0
    # one rule per simple command; the redirection lands inside the workspace, which the parse checks each time
    assert "allow always: rule run_command(echo remembered)" in out
    local = ws / ".smoke" / "config.local.yaml"
    assert "run_command(echo remembered)" in local.read_text()
    (ws / "out.txt").unlink()
    # the next run, without a terminal and without --yes, does not ask
    proc = smoke("run", "--provider", "cli-scripted", "go", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs approval" not in proc.stdout
    assert (ws / "out.txt").read_text().strip() == "remembered"


@pytest.mark.slow
@pytest.mark.integration  # needs smoke-tools-terminal: the `tests` nox session
def test_pty_offers_to_trust_a_folder_once(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    (ws / ".smoke").mkdir(parents=True)
    (ws / ".smoke" / "config.yaml").write_text("permission: allow-all\n")
    env = terminal_env(tmp_path, run_command_turns("echo hi"))
    # declined: asked once, then never again for this folder
    term = pty_smoke(ws, env)
    out = term.read_until("trust this folder? [y/N]")
    assert "permission (looser than ask-default)" in out
    term.send("n\n")
    term.read_until("allow once [y]")  # not trusted: allow-all was ignored
    term.send("y\n")
    assert term.finish() == 0
    term = pty_smoke(ws, env)
    out = term.read_until("allow once [y]")
    assert "trust this folder?" not in out
    term.send("y\n")
    assert term.finish() == 0

    # accepted (another folder): trusted from then on, its settings honoured in this run already
    other = tmp_path / "other"
    (other / ".smoke").mkdir(parents=True)
    (other / ".smoke" / "config.yaml").write_text("permission: allow-all\n")
    term = pty_smoke(other, env)
    term.read_until("trust this folder? [y/N]")
    term.send("y\n")
    out = term.read_until("completed")
    assert term.finish() == 0
    assert "approval needed" not in out
    listed = smoke("trust", "--list", cwd=other, env=env).stdout
    assert str(other.resolve()) in listed and str(ws.resolve()) not in listed


@pytest.mark.parametrize("raw,shown", [
    ("touch X;\x1bM\x1bE  $ ls -la", "touch X;␛M␛E  $ ls -la"),
    ("rm -rf ~\r$ ls", "rm -rf ~␍$ ls"),
    ("abc\b\b\bls", "abc␈␈␈ls"),
    ("echo \u202eevil\u202c", "echo ⟨RLO⟩evil⟨PDF⟩"),
    ("a\u2066b\u2069", "a⟨LRI⟩b⟨PDI⟩"),
    ("x\u200by\ufeffz", "x⟨ZWSP⟩y⟨BOM⟩z"),
    ("csi\x9b31m", "csi⟨U+009B⟩31m"),
    ("nbsp\u00a0here", "nbsp⟨NBSP⟩here"),
    ("tab\there", "tab␉here"),
    ("del\x7f", "del␡"),
    ("fake ␛ mark", "fake ⟨U+241B⟩ mark"),
    ("ls" + " " * 40 + "; touch Y", "ls⟨40 spaces⟩; touch Y"),
    ("two\nlines", "two\nlines"),
    ("plain ascii: ok", "plain ascii: ok"),
    ("naïve ünïcödé 日本", "naïve ünïcödé 日本"),
])
def test_visible_marks_every_control_and_invisible_character(raw, shown):
    from smoke_core.display import hidden_characters, visible

    assert visible(raw) == shown
    assert (hidden_characters(raw) > 0) is (raw.strip() != shown.strip() and " " * 16 not in raw)


#: what neither loading the plugins nor `smoke --help` may import (bench/bench_startup.py's list)
HEAVY = ("httpx", "httpcore", "httpx_sse", "anyio", "mcp", "starlette", "uvicorn", "tiktoken", "jsonschema",
         "openai", "anthropic", "h11", "sse_starlette", "websockets", "yaml", "pydantic", "asyncio", "rich",
         "genai_prices", "opentelemetry", "ray", "psycopg", "acp", "tree_sitter", "tree_sitter_bash")


@pytest.mark.integration
def test_every_installed_plugin_loads_and_adds_its_help_without_heavy_imports(tmp_path):
    """With every first-party plugin installed, building the plugin manager
    and printing `smoke --help` import none of the heavy libraries (each costs
    start-up; they load when a command that needs them runs). Found by the
    bench: smoke-otel and smoke-acp imported asyncio."""
    for module in ("smoke_acp", "smoke_ui", "smoke_mcp", "smoke_skills", "smoke_otel"):
        pytest.importorskip(module)  # with core alone (a run of `pytest tests`), nothing to check
    probe = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from smoke_core.hooks.manager import create_plugin_manager
        from smoke_core.cli import cli
        pm = create_plugin_manager()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                cli.main(args=["--help"], prog_name="smoke")
            except SystemExit:
                pass
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
        names = sorted(str(name) for name, _ in pm.list_name_plugin())
        print(json.dumps({{"heavy": heavy, "help": out.getvalue(), "plugins": names}}))
        """
    )
    env = clean_env(tmp_path)
    env.pop("SMOKE_LOAD_PLUGINS", None)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for command in ("acp", "serve", "mcp", "skills", "batch"):
        assert f"  {command} " in data["help"], data["help"]
    assert any("smoke-otel" in n for n in data["plugins"]) and any("smoke-acp" in n for n in data["plugins"])
    assert data["heavy"] == []


def test_smoke_help_loads_no_pydantic_asyncio_or_rich(tmp_path):
    """`smoke --help` builds the plugin manager and the hook runner: neither
    needs pydantic, asyncio or rich (they cost ~100 ms of start-up), nor the
    shell grammar (loaded when a command is first checked)."""
    probe = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from smoke_core.cli import cli
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                cli.main(args=["--help"], prog_name="smoke")
            except SystemExit:
                pass
        heavy = sorted(m for m in ("pydantic", "asyncio", "rich", "yaml", "jsonschema", "tree_sitter",
                                   "tree_sitter_bash") if m in sys.modules)
        print(json.dumps({"heavy": heavy, "help": out.getvalue()}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(tmp_path, SMOKE_LOAD_PLUGINS=""))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert "chat" in data["help"] and "providers" in data["help"]
    assert data["heavy"] == []
