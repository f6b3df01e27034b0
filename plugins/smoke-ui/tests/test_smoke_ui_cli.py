"""``smoke serve`` as a user runs it: a real process, a real port."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

PLUGIN_DIR = Path(__file__).resolve().parents[1]
SMOKE = [sys.executable, "-c", "from smoke_core.cli import main; main()"]


DEMO_PLUGINS = "smoke-ui,smoke-tools-filesystem,smoke-tools-search,smoke-tools-terminal,smoke-tools-agent"


def env(tmp_path: Path, plugins: str = "smoke-ui") -> dict[str, str]:
    # only core's built-ins and the named plugins; no user config leaks in
    return {**os.environ, "SMOKE_LOAD_PLUGINS": plugins, "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PYTHONUNBUFFERED": "1"}


def test_importing_the_plugin_does_not_import_the_web_stack() -> None:
    code = "import sys, smoke_ui; print(json.dumps([m in sys.modules for m in ('starlette', 'uvicorn')]))"
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False]


def test_serve_is_a_smoke_command(tmp_path: Path) -> None:
    out = subprocess.run([*SMOKE, "serve", "--help"], capture_output=True, text=True, env=env(tmp_path))
    assert out.returncode == 0, out.stderr
    for option in ("--workspace", "--port", "--host", "--demo", "--provider", "--model", "--yes"):
        assert option in out.stdout


def test_serve_without_a_provider_says_what_to_do(tmp_path: Path) -> None:
    clean = {k: v for k, v in env(tmp_path).items() if not k.endswith("_API_KEY")}
    out = subprocess.run([*SMOKE, "serve", "-w", str(tmp_path), "--port", "0"], capture_output=True, text=True,
                         env=clean, timeout=60)
    assert out.returncode != 0
    assert "no model provider is configured" in out.stderr
    assert "smoke serve --demo" in out.stderr
    bad = subprocess.run([*SMOKE, "serve", "-w", str(tmp_path), "--provider", "nope", "--port", "0"],
                         capture_output=True, text=True, env=clean, timeout=60)
    assert bad.returncode != 0 and "unknown provider 'nope'" in bad.stderr


def start_serve(tmp_path: Path, *args: str, plugins: str = "smoke-ui") -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen([*SMOKE, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(tmp_path, plugins))
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:  # ends if the process dies
        lines.append(line)
        match = re.search(r"(http://\S+/\?token=\S+)", line)
        if match:
            return proc, match.group(1), lines
    _, err = proc.communicate(timeout=30)
    raise AssertionError(f"smoke serve printed no URL: {lines!r} {err}")


def stop_serve(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, err


def test_serve_runs_a_real_server_with_a_token(tmp_path: Path) -> None:
    # the built-in `demo` provider needs no key; the tools do not matter here
    proc, url, _ = start_serve(tmp_path, "-w", str(tmp_path), "--provider", "demo", "--port", "0")
    try:
        base, token = url.split("/?token=")
        assert base.startswith("http://127.0.0.1:")
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and token in page.text
        assert httpx.get(base + "/api/state", timeout=30).status_code == 403
        state = httpx.get(base + "/api/state", headers={"X-Smoke-Token": token}, timeout=30).json()
        assert state["workspace"] == str(tmp_path.resolve())
        assert state["demo"] is False
        refused = httpx.post(base + "/api/runs", json={"task": "x"}, timeout=30,
                             headers={"X-Smoke-Token": token, "Origin": "http://evil.example"})
        assert refused.status_code == 403
    finally:
        code, err = stop_serve(proc)
    assert code == 0, err
    assert (tmp_path / ".smoke" / "sessions.db").exists()  # sessions persist in the workspace


def test_serve_on_all_interfaces_warns(tmp_path: Path) -> None:
    proc, url, _ = start_serve(tmp_path, "-w", str(tmp_path), "--provider", "demo", "--port", "0", "--host", "0.0.0.0")
    try:
        assert httpx.get(url.split("/?token=")[0] + "/healthz", timeout=30).status_code == 200
    finally:
        code, err = stop_serve(proc)
    assert code == 0
    assert "warning: --host 0.0.0.0 exposes this agent" in err


@pytest.mark.integration  # the demo needs the tool plugins: the `tests` session runs it
def test_serve_demo(tmp_path: Path) -> None:
    try:
        from smoke_core.demo import create_demo_agent

        agent, _ = create_demo_agent(tmp_path / "probe")
    except (ImportError, RuntimeError) as exc:
        pytest.skip(f"the demo cannot run here: {exc}")
    del agent
    proc, url, _ = start_serve(tmp_path, "--demo", "--port", "0", plugins=DEMO_PLUGINS)
    try:
        base, token = url.split("/?token=")
        state = httpx.get(base + "/api/state", headers={"X-Smoke-Token": token}, timeout=30).json()
        assert state["demo"] is True and "simulated" in state["demo_label"]
        assert state["presentations"]["edit_file"]["label"]
        workspace = Path(state["workspace"])
        assert workspace.is_dir()
    finally:
        code, err = stop_serve(proc)
    assert code == 0, err
    assert not workspace.exists()  # the temporary demo folder is removed on exit


def test_wheel_ships_the_static_files(tmp_path: Path) -> None:
    try:
        import hatchling  # noqa: F401
    except ImportError:
        pytest.skip("hatchling is not installed (pip install hatchling)")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(PLUGIN_DIR)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    wheel = next(tmp_path.glob("smoke_ui-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("index.html", "icons.js", "app.js", "app.css"):
        assert f"smoke_ui/static/{name}" in names
    assert "smoke_ui/py.typed" in names


@pytest.mark.integration  # the demo needs the tool plugins: the `tests` session runs it
def test_the_settings_decide_auto_approve_unless_yes_is_given(tmp_path: Path) -> None:
    """Without --yes the agent gets no auto_approve argument, so an
    ``auto_approve`` list in the person's settings is honoured (an explicit
    False from the server used to override it)."""
    import asyncio

    from smoke_ui._cli import demo_factory, provider_factory

    from smoke_core.plugin import MemoryStore
    from smoke_core.settings import user_settings_path

    user = user_settings_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("auto_approve:\n  - edit_file\n  - run_test\n")
    ws = tmp_path / "ws"
    try:
        from smoke_core.demo import copy_sample_project

        copy_sample_project(ws)
    except ImportError:
        ws.mkdir()

    factory, _ = provider_factory(ws, provider="demo", model=None, base_url=None, auto_approve=False)
    agent = factory(session_id="s1", store=MemoryStore())
    assert [r.text for r in agent.settings.auto_approve_rules] == ["edit_file", "run_test"]
    assert agent.options.auto_approve is False  # the rules allow those two tools; everything else still asks
    yes, _ = provider_factory(ws, provider="demo", model=None, base_url=None, auto_approve=True)
    assert yes(session_id="s2", store=MemoryStore()).options.auto_approve is True

    if not {"edit_file", "run_test"} <= set(agent.tools):
        pytest.skip("the demo's tool plugins are not installed: the run below needs them")
    from smoke_core.demo import DEMO_TASK

    asked: list[str] = []

    def deny(event: Any) -> None:
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "deny")

    agent.on("permission.required", deny)
    result = asyncio.run(agent.run(DEMO_TASK))
    assert result.status == "completed" and asked == []  # the settings' rules allowed the edit and the tests
    assert "sorted(values)" in (ws / "stats" / "core.py").read_text()

    demo = demo_factory(tmp_path / "demo", auto_approve=False)(session_id="d1", store=MemoryStore())
    assert [r.text for r in demo.settings.auto_approve_rules] == ["edit_file", "run_test"]
    assert demo.options.auto_approve is False
    assert demo_factory(tmp_path / "demo", auto_approve=True)(session_id="d2", store=MemoryStore()).options.auto_approve


def test_serve_on_a_busy_port_says_to_use_port_0(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([*SMOKE, "serve", "-w", str(tmp_path), "--provider", "demo", "--port", str(port)],
                             capture_output=True, text=True, env=env(tmp_path), timeout=60)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr  # one line, no traceback
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in lines[0]
    assert "use --port 0 for any free port" in lines[0]
