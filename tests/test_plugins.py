"""Plugins from real distributions: entry points, SMOKE_LOAD_PLUGINS, broken plugins,
and the example plugin of docs/write-a-plugin.md installed with pip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "smoke-policy-example"


def run_py(code: str, *, env_extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SMOKE_LOAD_PLUGINS"}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def smoke_cli(*args: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_py(
        f"import sys; from smoke_core.cli import main; sys.argv=['smoke', *{list(args)!r}]; main()",
        env_extra=env_extra, cwd=cwd,
    )


def pip_install_into(site: Path, source: Path) -> None:
    """pip-install the package at ``source`` as a real distribution (offline)
    into the folder ``site``, never into the test environment itself."""
    # from a copy: setuptools builds inside the source folder, and two builds of one folder collide
    copy = site.parent / f"{site.name}-source" / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "--target", str(site), str(copy)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr


#: the tests that use `example_installed` keep to one xdist worker, which installs the example once
DOCS_EXAMPLE = pytest.mark.xdist_group("docs-example")


@pytest.fixture(scope="module")
def example_installed(tmp_path_factory):
    """pip-install the docs example as a real distribution (offline) into a folder
    of its own, and return the environment that puts it on the path: the test
    environment itself is never changed (other tests run beside these ones)."""
    site = tmp_path_factory.mktemp("example-site")
    pip_install_into(site, EXAMPLE)
    return {"PYTHONPATH": str(site)}


DONE_WHEN = """
import asyncio, json, sys
from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider
import smoke_policy_example

@tool
def write_file(path: str, content: str, ctx=None) -> str:
    "Write a file."
    target = ctx.workspace.resolve(path, write=True)
    target.write_text(content)
    return f"wrote {path}"

provider = ScriptedProvider([
    {"tool_calls": [{"name": "write_file", "input": {"path": "config/.env", "content": "KEY=1"}}]},
    {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "key sk-abcdefghijklmnopqrstuvwx end"}}]},
    {"tool_calls": [{"name": "word_count", "input": {"text": "one two three"}}]},
    "done",
])
agent = create_agent(sys.argv[1], provider=provider, tools=[write_file], auto_approve=True)
result = agent.run_sync("go")
print(json.dumps({
    "status": result.status,
    "first_result": provider.requests[1].messages[-1]["content"][0],
    "notes": open(sys.argv[1] + "/notes.txt").read(),
    "env_exists": __import__("os").path.exists(sys.argv[1] + "/config/.env"),
    "count": provider.requests[3].messages[-1]["content"][0]["content"][0]["text"],
    "audit": smoke_policy_example.AUDIT_LOG,
    "request_tools": provider.requests[0].tools,
    "presentations": agent.get_tool_presentations(),
}))
"""


@pytest.mark.slow
@DOCS_EXAMPLE
def test_example_plugin_from_docs_works_end_to_end(example_installed, tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(DONE_WHEN)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**example_installed, "SMOKE_LOAD_PLUGINS": "policy_example"}
    proc = subprocess.run([sys.executable, str(script), str(ws)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "completed"
    # the block reaches the model as a tool error
    assert out["first_result"]["is_error"] is True
    assert ".env files hold secrets" in out["first_result"]["content"][0]["text"]
    assert out["env_exists"] is False
    # the secret was redacted before the write
    assert out["notes"] == "key [REDACTED] end"
    assert out["count"] == "3"
    # the audit saw the block
    assert [(a["tool"], a["blocked"], a["error"]) for a in out["audit"]] == [
        ("write_file", True, "tool_blocked"), ("write_file", False, None), ("word_count", False, None),
    ]
    # presentation: absent from the provider request, present for UIs
    wc = next(t for t in out["request_tools"] if t["name"] == "word_count")
    assert set(wc) == {"name", "description", "input_schema"}
    assert out["presentations"]["word_count"] == {"label": "Word count", "icon": "🔢", "tone": "info", "group": "text"}


@pytest.mark.slow
@DOCS_EXAMPLE
def test_smoke_plugins_and_tools_show_the_example(example_installed, tmp_path):
    env = {**example_installed, "SMOKE_LOAD_PLUGINS": "policy_example"}
    proc = smoke_cli("plugins", "--json", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    ex = rows["policy_example"]
    assert ex["distribution"] == "smoke-policy-example" and ex["version"] == "0.1.0"
    assert ex["hooks"] == ["after_tool_call", "before_tool_call", "register_tools"]
    assert ex["error"] is None
    proc = smoke_cli("tools", "--json", "--workspace", str(tmp_path), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in json.loads(proc.stdout)["tools"]}
    assert tools["word_count"]["group"] == "text"
    assert tools["word_count"]["read_only"] is True
    assert tools["word_count"]["presentation"]["icon"] == "🔢"
    assert tools["word_count"]["source"] == "smoke-policy-example:policy_example"  # <distribution>:<entry point>
    # the table form mentions it too
    proc = smoke_cli("plugins", env_extra={**env, "COLUMNS": "200"})
    assert "smoke-policy-example" in proc.stdout


@DOCS_EXAMPLE
def test_smoke_load_plugins_empty_loads_none(example_installed):
    proc = smoke_cli("plugins", "--json", env_extra={**example_installed, "SMOKE_LOAD_PLUGINS": ""})
    names = [r["name"] for r in json.loads(proc.stdout)]
    assert names == ["builtins"]


def _fake_dist(root: Path, dist: str, ep_name: str, module: str, body: str) -> None:
    info = root / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[smoke]\n{ep_name} = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(body))


@pytest.mark.slow
def test_broken_plugin_is_reported_and_skipped(tmp_path):
    _fake_dist(tmp_path, "smoke-broken", "broken", "smoke_broken_mod", "raise ImportError('needs libfoo')\n")
    _fake_dist(
        tmp_path, "smoke-good", "good", "smoke_good_mod",
        """
        from smoke_core import hookimpl

        @hookimpl
        def register_tools(register):
            from smoke_core import tool

            @tool(read_only=True)
            def good_tool() -> str:
                "A good tool."
                return "good"

            register(good_tool)
        """,
    )
    env = {"PYTHONPATH": str(tmp_path), "SMOKE_LOAD_PLUGINS": "broken,good"}
    proc = smoke_cli("plugins", "--json", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert "ImportError: needs libfoo" in rows["broken"]["error"]
    assert rows["good"]["error"] is None and rows["good"]["hooks"] == ["register_tools"]
    proc = run_py(
        """
        from smoke_core import create_agent
        from smoke_core.testing import ScriptedProvider
        agent = create_agent('.', provider=ScriptedProvider(['ok']))
        print(sorted(agent.tools), agent.run_sync('go').status)
        """,
        env_extra=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['good_tool'] completed"
    # restricting by name leaves the other out
    proc = smoke_cli("plugins", "--json", env_extra={**env, "SMOKE_LOAD_PLUGINS": "good"})
    assert [r["name"] for r in json.loads(proc.stdout)] == ["builtins", "good"]
    # restricting by distribution name works too
    proc = smoke_cli("plugins", "--json", env_extra={**env, "SMOKE_LOAD_PLUGINS": "smoke-good"})
    assert [r["name"] for r in json.loads(proc.stdout)] == ["builtins", "good"]


def test_plugin_commands_are_added_and_broken_ones_skipped(tmp_path):
    _fake_dist(
        tmp_path, "smoke-cmd", "cmd", "smoke_cmd_mod",
        """
        from smoke_core import hookimpl

        @hookimpl
        def register_commands(cli):
            import click

            @cli.command("hello")
            def hello():
                "Say hello."
                click.echo("hello from a plugin")
        """,
    )
    _fake_dist(
        tmp_path, "smoke-badcmd", "badcmd", "smoke_badcmd_mod",
        """
        from smoke_core import hookimpl

        @hookimpl
        def register_commands(cli):
            raise RuntimeError("oops")
        """,
    )
    env = {"PYTHONPATH": str(tmp_path), "SMOKE_LOAD_PLUGINS": "cmd,badcmd"}
    proc = smoke_cli("hello", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    assert "hello from a plugin" in proc.stdout
    assert "badcmd" in proc.stderr and "oops" in proc.stderr


def test_plugin_module_import_is_cheap():
    """Loading plugin markers must not import heavy libraries."""
    proc = run_py(
        """
        import sys
        from smoke_core import hookimpl
        import smoke_core.cli
        heavy = [m for m in ("pydantic", "jsonschema", "httpx", "rich", "yaml") if m in sys.modules]
        print(heavy)
        """
    )
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


@pytest.mark.slow
def test_entry_point_cache_sees_a_newly_installed_plugin(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": str(site), "SMOKE_CACHE_DIR": str(tmp_path / "cache")}
    proc = smoke_cli("plugins", "--json", env_extra=env)
    assert "late_plugin" not in proc.stdout
    assert list((tmp_path / "cache").glob("entry-points-*.json")), "the scan was not cached"
    _fake_dist(site, "smoke-late", "late_plugin", "smoke_late_mod",
               "from smoke_core import hookimpl\n\n@hookimpl\ndef register_commands(cli):\n    pass\n")
    proc = smoke_cli("plugins", "--json", env_extra=env)
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["late_plugin"]["hooks"] == ["register_commands"]
    # and with the cache turned off the result is the same
    proc = smoke_cli("plugins", "--json", env_extra={**env, "SMOKE_NO_PLUGIN_CACHE": "1"})
    assert "late_plugin" in proc.stdout


@pytest.mark.slow
def test_one_distribution_with_two_entry_points_loads_both(tmp_path):
    """A real package built and installed by pip, declaring two plugins."""
    src = tmp_path / "src"
    (src / "smoke_twins").mkdir(parents=True)
    (src / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=70.1"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "smoke-twins"
        version = "0.2.0"

        [project.entry-points.smoke]
        one = "smoke_twins.one"
        two = "smoke_twins.two"
        clash = "smoke_twins.clash"
    """))
    (src / "smoke_twins" / "__init__.py").write_text("")
    for name in ("one", "two"):
        (src / "smoke_twins" / f"{name}.py").write_text(textwrap.dedent(f"""
            from smoke_core import hookimpl, tool

            @hookimpl
            def register_tools(register):
                @tool(read_only=True, name="tool_{name}")
                def t() -> str:
                    "Tool {name}."
                    return "{name}"
                register(t)
        """))
    # a third plugin of the same distribution that Smoke must refuse (a pluggy wrapper)
    (src / "smoke_twins" / "clash.py").write_text(textwrap.dedent("""
        from smoke_core import hookimpl

        @hookimpl(wrapper=True)
        def before_tool_call(tool_name):
            return (yield)
    """))
    site = tmp_path / "site"
    pip_install_into(site, src)
    env = {"PYTHONPATH": str(site), "SMOKE_LOAD_PLUGINS": "smoke-twins", "SMOKE_NO_PLUGIN_CACHE": "1"}
    proc = smoke_cli("plugins", "--json", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["one"]["error"] is None and rows["two"]["error"] is None
    assert rows["one"]["hooks"] == rows["two"]["hooks"] == ["register_tools"]
    assert "wrapper=True" in rows["clash"]["error"]  # reported, never a crash
    proc = smoke_cli("tools", "--json", "--workspace", str(tmp_path), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t["source"] for t in json.loads(proc.stdout)["tools"]}
    assert tools == {"tool_one": "smoke-twins:one", "tool_two": "smoke-twins:two"}


def test_a_plugin_needing_another_plugin_api_is_reported_and_skipped(tmp_path):
    # each plugin adds a tool and a command named after it: a loaded plugin shows in both
    body = textwrap.dedent("""
        from smoke_core import hookimpl, tool
        __smoke_plugin_api__ = API

        @hookimpl
        def register_commands(cli):
            @cli.command("hello-" + NAME)
            def hello():
                "Say hello."
                print(NAME)

        @hookimpl
        def register_tools(register):
            @tool(read_only=True, name="tool_" + NAME)
            def t() -> str:
                "A tool."
                return NAME
            register(t)
    """)

    def plugin(name: str, api: str) -> str:
        return body.replace("API", repr(api)).replace("NAME", repr(name))

    _fake_dist(tmp_path, "smoke-future", "future", "smoke_future_mod", plugin("future", ">=2.0"))
    _fake_dist(tmp_path, "smoke-today", "today", "smoke_today_mod", plugin("today", ">=1.0,<2"))
    _fake_dist(tmp_path, "smoke-garbled", "garbled", "smoke_garbled_mod", plugin("garbled", "version one"))
    env = {"PYTHONPATH": str(tmp_path), "SMOKE_LOAD_PLUGINS": "future,today,garbled", "SMOKE_NO_PLUGIN_CACHE": "1"}
    proc = smoke_cli("plugins", "--json", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["today"]["error"] is None and sorted(rows["today"]["hooks"]) == ["register_commands", "register_tools"]
    assert "needs Smoke's plugin API >=2.0" in rows["future"]["error"] and "provides 1.0" in rows["future"]["error"]
    assert "is not a version specifier" in rows["garbled"]["error"]
    # the skipped plugins took part in nothing: only the compatible one's tool and command exist
    proc = smoke_cli("tools", "--json", "--workspace", str(tmp_path), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t["source"] for t in json.loads(proc.stdout)["tools"]}
    assert tools == {"tool_today": "smoke-today:today"}
    proc = smoke_cli("--help", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    assert "hello-today" in proc.stdout
    assert "hello-future" not in proc.stdout and "hello-garbled" not in proc.stdout
