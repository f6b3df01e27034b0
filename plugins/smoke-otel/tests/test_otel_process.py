"""Start-up cost and the command line, in real processes: importing the
plugin imports no OpenTelemetry; without the plugin a run imports none;
``smoke run --trace-console`` prints the span tree."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from click.testing import CliRunner


def run_program(python: str, scripts: Any, env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = subprocess.run([python, str(scripts / "scripted_run.py"), *args], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_and_loading_the_plugin_imports_no_opentelemetry(python, child_env):
    code = (
        "import sys, json\n"
        "import smoke_otel\n"
        "from smoke_core.hooks.manager import create_plugin_manager\n"
        "pm = create_plugin_manager()\n"
        "assert any(p is smoke_otel for p in pm.get_plugins()), 'the entry point is installed'\n"
        "smoke_otel.OtelPlugin(capture_content=False)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('opentelemetry'))))\n"
    )
    proc = subprocess.run([python, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


@pytest.mark.slow
def test_smoke_help_with_the_plugin_imports_no_opentelemetry(python, scripts, child_env):
    report = run_program(python, scripts, child_env(), "--help-only")
    assert "run" in report["help"]
    assert report["otel_modules"] == []


@pytest.mark.slow
def test_without_the_plugin_a_run_imports_nothing_of_opentelemetry(python, scripts, child_env):
    report = run_program(python, scripts, child_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9"), "--no-otel")
    assert report["status"] == "completed"
    assert "smoke_otel" not in report["plugins"]
    assert report["otel_modules"] == []
    # and with it, the same run does load OpenTelemetry (on the first run, not before)
    with_otel = run_program(python, scripts, child_env())
    assert "smoke_otel" in with_otel["plugins"]
    assert "opentelemetry.trace" in with_otel["otel_modules"]


def test_run_and_demo_get_a_trace_console_option(monkeypatch):
    import click
    import smoke_otel

    from smoke_core.cli import SmokeGroup

    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")  # core's own commands, as they are before any plugin
    core = SmokeGroup("smoke")
    ctx = click.Context(core)
    run_command, demo_command = core.get_command(ctx, "run"), core.get_command(ctx, "demo")
    assert run_command is not None and demo_command is not None
    group = click.Group("smoke")
    group.add_command(run_command)
    group.add_command(demo_command)
    smoke_otel.register_commands(group)
    smoke_otel.register_commands(group)  # twice: still one option
    for name in ("run", "demo"):
        options = [p for p in group.commands[name].params if p.name == "trace_console"]
        assert len(options) == 1
        result = CliRunner().invoke(group, [name, "--help"])
        assert "--trace-console" in result.output
    # core's own command objects are not changed
    assert not [p for p in run_command.params if p.name == "trace_console"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flag", "env"])
def test_smoke_run_trace_console_prints_the_span_tree(python, child_env, tmp_path, how):
    args = [python, "-m", "smoke_core.cli", "run", "--provider", "demo", "--yes", "--json",
            "-w", str(tmp_path), "Find the bug in median()"]
    env = child_env()
    if how == "flag":
        args.insert(4, "--trace-console")
    else:
        env["SMOKE_TRACE_CONSOLE"] = "1"
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode in (0, 1), proc.stderr  # with the tool plugins the demo completes; without, it fails
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert events and events[0]["type"] == "run.started"  # stdout stays the event stream
    err = proc.stderr
    tree_lines = err[err.index("trace "):].splitlines()
    assert tree_lines[1].startswith("invoke_agent smoke ")
    assert any(line.startswith(("├─ chat smoke-demo-simulated", "└─ chat smoke-demo-simulated"))
               for line in tree_lines)
    assert any("execute_tool " in line for line in tree_lines)
    steps = next(e for e in events if e["type"] in ("run.completed", "run.failed"))["data"]["steps"]
    assert sum(1 for line in tree_lines if "chat smoke-demo-simulated" in line) == steps
