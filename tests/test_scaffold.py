"""`smoke plugin new` (issue 22) and the contract kit it relies on
(`smoke_core.testing.ToolContract`).

End to end: the generated package is installed editable with `smoke install
-e` into a fresh virtualenv layered over the test environment (offline), its
own tests pass, and `smoke plugins` / `smoke tools` show it. The contract kit
is run by a real pytest on plugins that break it, to show it fails them.
"""

from __future__ import annotations

import ast
import json
import os
import site
import subprocess
import sys
import textwrap
import tomllib
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoke_core import PLUGIN_API_VERSION, __version__
from smoke_core.cli import cli
from smoke_core.hooks.manager import api_problem

DOORS = {"smoke_core", "smoke_core.plugin", "smoke_core.testing"}


def layered_venv(root: Path) -> Path:
    """A fresh virtualenv that also sees the test environment's packages; returns its python."""
    venv.create(root, with_pip=False)
    purelib = next((root / "lib").glob("python3*/site-packages"))
    adds = "; ".join(f"site.addsitedir({p!r})" for p in site.getsitepackages())
    (purelib / "_outer_env.pth").write_text(f"import site; {adds}\n")
    return root / "bin" / "python"


def run(python: Path, tmp: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMOKE_", "PIP_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update({
        "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_STATE_HOME": str(tmp / "state"),
        "SMOKE_MANAGED_SETTINGS": str(tmp / "none.yaml"), "SMOKE_CACHE_DIR": str(tmp / "cache"),
        "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    })
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env, cwd=cwd or tmp,
                          timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_plugin_new_installs_passes_its_tests_and_is_found(tmp_path: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    proc = run(python, tmp_path, "-m", "smoke_core.cli", "plugin", "new", "acme-tools", "--directory", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    package = tmp_path / "acme-tools"
    assert f"cd {package}" in proc.stdout

    # a complete package
    for rel in ("pyproject.toml", "README.md", ".gitignore", "acme_tools/__init__.py", "acme_tools/py.typed",
                "tests/conftest.py", "tests/test_acme_tools.py"):
        assert (package / rel).is_file(), rel
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["smoke"] == {"acme_tools": "acme_tools"}
    major, minor = (int(x) for x in __version__.split(".")[:2])
    assert project["dependencies"] == [f"smoke-core>={major}.{minor},<{major}.{minor + 1}"]
    readme = (package / "README.md").read_text()
    assert "## Usage" in readme and "smoke install acme-tools" in readme
    for path in package.rglob("*.py"):
        text = path.read_text()
        assert "${" not in text, f"{path}: a template placeholder was left"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("smoke_core"):
                assert node.module in DOORS, f"{path.name} imports {node.module}, not a door"

    # smoke install -e (offline, into the fresh environment) and the package's own tests
    proc = run(python, tmp_path, "-m", "smoke_core.cli", "install", "--editable", str(package))
    assert proc.returncode == 0, proc.stderr
    assert "plugin acme_tools (acme-tools 0.1.0) installed" in proc.stdout
    junit = tmp_path / "junit.xml"
    proc = run(python, tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}", cwd=package)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests", 0)) >= 10 and suite.get("failures") == "0"
    assert int(suite.get("skipped", 0)) == 0

    # found by smoke plugins and smoke tools, from a folder that is not the package's
    proc = run(python, tmp_path, "-m", "smoke_core.cli", "plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["acme_tools"]["distribution"] == "acme-tools" and rows["acme_tools"]["error"] is None
    assert rows["acme_tools"]["hooks"] == ["after_tool_call", "register_tools"]
    proc = run(python, tmp_path, "-m", "smoke_core.cli", "tools", "--json", "--workspace", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in json.loads(proc.stdout)["tools"]}
    assert tools["acme_tools_count_lines"]["source"] == "acme-tools:acme_tools"
    assert tools["acme_tools_count_lines"]["read_only"] is True


def test_the_generated_module_declares_the_api_this_core_provides(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plugin", "new", "smoke-zeta", "-d", str(tmp_path)])
    assert result.exit_code == 0, result.output
    source = (tmp_path / "smoke-zeta" / "smoke_zeta" / "__init__.py").read_text()
    namespace: dict = {}
    exec(compile(source, "smoke_zeta/__init__.py", "exec"), namespace)  # the module as Python runs it
    assert namespace["__smoke_plugin_api__"].startswith(">=" + PLUGIN_API_VERSION)
    assert api_problem(type("Plugin", (), {"__smoke_plugin_api__": namespace["__smoke_plugin_api__"]})) is None
    # smoke- prefix: the entry point and tool names drop it
    project = tomllib.loads((tmp_path / "smoke-zeta" / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["smoke"] == {"zeta": "smoke_zeta"}
    assert "def zeta_count_lines(" in source


@pytest.mark.parametrize(("name", "message"), [
    ("bad name", "is not a package name"),
    ("json", "a module named 'json' is already importable"),
    ("smoke-core", "a module named 'smoke_core' is already importable"),
    ("1abc", "does not make a Python module name"),
    ("class", "does not make a Python module name"),
])
def test_bad_names_are_refused(tmp_path: Path, name: str, message: str) -> None:
    result = CliRunner().invoke(cli, ["plugin", "new", name, "-d", str(tmp_path)])
    assert result.exit_code == 2
    assert message in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "acme-tools").mkdir()
    (tmp_path / "acme-tools" / "mine.txt").write_text("keep me")
    result = CliRunner().invoke(cli, ["plugin", "new", "acme-tools", "-d", str(tmp_path)])
    assert result.exit_code == 2 and "already exists and is not empty" in result.output
    assert [p.name for p in (tmp_path / "acme-tools").iterdir()] == ["mine.txt"]


BROKEN_PLUGINS = '''
from pathlib import Path
from types import SimpleNamespace

from smoke_core.plugin import hookimpl, tool
from smoke_core.testing import ToolContract


@tool(read_only=True)
def tidy(ctx=None) -> str:
    """Claims to read only; writes a file."""
    (ctx.workspace.root / "touched.txt").write_text("x")
    return "ok"


@tool(read_only=True)
def peek() -> str:
    """Reads nothing, honestly."""
    return "ok"


@tool(read_only=True)
async def choose(ctx=None) -> str:
    """Asks the person to choose."""
    answer = await ctx.ask_user("Which one?", options=["left", "right"])
    assert answer == "left", answer
    return f"chose {answer}"


@tool(read_only=True)
async def name_it(ctx=None) -> str:
    """Asks an open question."""
    answer = await ctx.ask_user("What should it be called?")
    assert answer == "yes", answer  # ToolContract.answer, when no option is offered
    return f"called {answer}"


@tool(read_only=True)
def wrap_up(ctx=None) -> str:
    """Ends the run."""
    ctx.finish("all done")
    return "finishing"


@tool(read_only=True)
async def wait_forever() -> str:
    """Waits for something nobody gives."""
    import asyncio

    await asyncio.Event().wait()
    return "never"


@tool(read_only=True)
def block_a_while() -> str:
    """Blocks its thread for longer than the test allows."""
    import time

    time.sleep(8)
    return "late"


class Asking:
    @hookimpl
    def register_tools(self, register):
        register(choose)
        register(name_it)
        register(wrap_up)


class Hanging:
    @hookimpl
    def register_tools(self, register):
        register(wait_forever)


class Blocking:
    @hookimpl
    def register_tools(self, register):
        register(block_a_while)


class Lying:
    @hookimpl
    def register_tools(self, register):
        register(tidy)
        register(peek)


class FromTheFuture:
    __smoke_plugin_api__ = ">=2.0"

    @hookimpl
    def register_tools(self, register):
        register(peek)


class TestLying(ToolContract):
    plugin = Lying()
    sample_inputs = {"tidy": {}, "peek": {}}


class TestFromTheFuture(ToolContract):
    plugin = FromTheFuture()
    sample_inputs = {}


class TestAsking(ToolContract):
    plugin = Asking()
    sample_inputs = {"choose": {}, "name_it": {}, "wrap_up": {}}


class TestHanging(ToolContract):
    plugin = Hanging()
    sample_inputs = {"wait_forever": {}}
    run_timeout = 1


class TestBlocking(ToolContract):
    plugin = Blocking()
    sample_inputs = {"block_a_while": {}}
    run_timeout = 1
'''


@pytest.mark.slow
def test_tool_contract_fails_plugins_that_break_it(tmp_path: Path) -> None:
    (tmp_path / "test_broken.py").write_text(textwrap.dedent(BROKEN_PLUGINS))
    (tmp_path / "conftest.py").write_text("")
    junit = tmp_path / "junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}",
         "-o", "asyncio_default_fixture_loop_scope=function", str(tmp_path / "test_broken.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")},
    )
    outcome, seconds = {}, {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        key = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome[key] = "failed" if failed else "passed"
        seconds[key] = float(case.get("time", 0))
    assert outcome["TestLying::test_read_only_tools_leave_the_workspace_unchanged"] == "failed"
    assert outcome["TestLying::test_every_tool_runs_on_its_sample"] == "passed"
    assert outcome["TestLying::test_input_schemas_are_json_schema_objects"] == "passed"
    assert outcome["TestFromTheFuture::test_plugin_is_accepted_by_this_core"] == "failed"
    assert outcome["TestFromTheFuture::test_every_tool_has_a_sample_input_that_fits_its_schema"] == "failed"
    # a tool that asks gets the first option, one that ends the run ends it; one that waits forever fails
    assert outcome["TestAsking::test_every_tool_runs_on_its_sample"] == "passed"
    assert outcome["TestAsking::test_read_only_tools_leave_the_workspace_unchanged"] == "passed"
    assert outcome["TestHanging::test_every_tool_runs_on_its_sample"] == "failed"
    assert "took over 1 s: a tool waits for something the test never gives" in proc.stdout
    # a synchronous tool is not waited for: the test fails before the tool's 8 s are over
    assert outcome["TestBlocking::test_every_tool_runs_on_its_sample"] == "failed"
    assert seconds["TestBlocking::test_every_tool_runs_on_its_sample"] < 8, seconds
    assert "changed the workspace" in proc.stdout and "touched.txt" in proc.stdout
    assert "needs Smoke's plugin API >=2.0" in proc.stdout
    assert "add sample_inputs for ['peek']" in proc.stdout


def test_the_tutorial_shows_the_template_and_the_example_as_they_are(tmp_path: Path) -> None:
    """docs/write-a-plugin.md starts from `smoke plugin new` and quotes its module
    and the example plugin verbatim, so the tutorial cannot drift from the code."""
    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "write-a-plugin.md").read_text(encoding="utf-8")
    first_section = doc.split("\n## 2.", 1)[0]
    assert "## 1. Start from the template" in first_section and "smoke plugin new acme-tools" in first_section
    assert "smoke install -e '.[test]'" in first_section
    result = CliRunner().invoke(cli, ["plugin", "new", "acme-tools", "-d", str(tmp_path)])
    assert result.exit_code == 0, result.output
    module = (tmp_path / "acme-tools" / "acme_tools" / "__init__.py").read_text(encoding="utf-8")
    assert f"```python\n{module.split(chr(34) * 3 + chr(10) * 2, 1)[1].rstrip()}\n```" in doc
    example = root / "docs" / "examples" / "smoke-policy-example"
    source = (example / "smoke_policy_example" / "__init__.py").read_text(encoding="utf-8")
    assert f"```python\n{source.split(chr(34) * 3 + chr(10) * 2, 1)[1].rstrip()}\n```" in doc
    assert f"```toml\n{(example / 'pyproject.toml').read_text(encoding='utf-8').rstrip()}\n```" in doc
    for kit in ("ToolContract", "ProviderContract", "StoreContract"):
        assert kit in doc.split("### Test it against Smoke's contracts", 1)[1]
