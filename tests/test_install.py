"""`smoke install` / `smoke uninstall` (issue 22): plugins go into the
environment Smoke runs in, `smoke plugins` sees them at once, and managed or
read-only environments are refused with the command to use instead.

The commands run in a real, fresh virtualenv layered over the test
environment (a ``.pth`` file adds its site-packages), so pip installs into
the fresh one and the test environment is never touched; pip works offline
(``PIP_NO_INDEX``) on a wheel built here.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from smoke_core.cli.install import Environment, refusal

PLUGIN_SOURCE = """
from smoke_core.plugin import hookimpl

@hookimpl
def register_tools(register):
    from smoke_core.plugin import tool

    @tool(read_only=True)
    def local_demo_ping() -> str:
        "Answer pong."
        return "pong"

    register(local_demo_ping, group="local_demo")
"""


def layered_venv(root: Path) -> Path:
    """A fresh virtualenv that also sees the test environment's packages; returns its python."""
    venv.create(root, with_pip=False)
    purelib = next((root / "lib").glob("python3*/site-packages"))
    adds = "; ".join(f"site.addsitedir({p!r})" for p in site.getsitepackages())
    (purelib / "_outer_env.pth").write_text(f"import site; {adds}\n")
    return root / "bin" / "python"


def purelib_of(python: Path) -> Path:
    return next((python.parent.parent / "lib").glob("python3*/site-packages"))


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMOKE_", "PIP_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update({
        "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_STATE_HOME": str(tmp / "state"),
        "SMOKE_MANAGED_SETTINGS": str(tmp / "none.yaml"), "SMOKE_CACHE_DIR": str(tmp / "cache"),
        "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # pip's odd spelling: 0 turns build isolation off (the backend comes from the test environment)
        "PIP_NO_BUILD_ISOLATION": "0", "COLUMNS": "200",
    })
    env.update(extra)
    return env


def smoke(python: Path, tmp: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "smoke_core.cli", *args], capture_output=True, text=True,
                          env=env_for(tmp, **extra), cwd=tmp, timeout=300, stdin=subprocess.DEVNULL)


def _plugin_source(root: Path, body: str) -> Path:
    """The tiny plugin as a source folder (the docs/write-a-plugin.md layout), with a `test` extra."""
    src = root / "smoke-local-demo"
    (src / "smoke_local_demo").mkdir(parents=True)
    (src / "smoke_local_demo" / "__init__.py").write_text(textwrap.dedent(body))
    (src / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "smoke-local-demo"
        version = "1.0"
        dependencies = ["smoke-core"]

        [project.optional-dependencies]
        test = ["pytest"]

        [project.entry-points.smoke]
        local_demo = "smoke_local_demo"

        [tool.setuptools]
        packages = ["smoke_local_demo"]
    """))
    return src


@pytest.fixture
def plugin_wheel(tmp_path: Path) -> Path:
    """A tiny plugin distribution, built as a wheel (offline, setuptools)."""
    src = _plugin_source(tmp_path / "src", PLUGIN_SOURCE)
    out = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--wheel-dir", str(out), str(src)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def _plugin_names(proc: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert proc.returncode == 0, proc.stderr
    return {p["name"]: p for p in json.loads(proc.stdout)}


@pytest.mark.slow
def test_install_shows_the_plugin_at_once_and_uninstall_removes_it(tmp_path: Path, plugin_wheel: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    assert "local_demo" not in _plugin_names(smoke(python, tmp_path, "plugins", "--json"))
    cached = list((tmp_path / "cache").glob("entry-points-*.json"))
    assert cached, "the entry-point scan was cached: the test proves the cache does not hide the install"

    proc = smoke(python, tmp_path, "install", str(plugin_wheel))
    assert proc.returncode == 0, proc.stderr
    assert "plugin local_demo (smoke-local-demo 1.0) installed" in proc.stdout
    assert (purelib_of(python) / "smoke_local_demo").is_dir()  # into the environment smoke runs in
    assert not any((Path(p) / "smoke_local_demo").exists() for p in site.getsitepackages())

    rows = _plugin_names(smoke(python, tmp_path, "plugins", "--json"))
    assert rows["local_demo"]["distribution"] == "smoke-local-demo"
    assert rows["local_demo"]["hooks"] == ["register_tools"] and rows["local_demo"]["error"] is None
    proc = smoke(python, tmp_path, "tools", "--json", "--workspace", str(tmp_path), SMOKE_LOAD_PLUGINS="local_demo")
    assert proc.returncode == 0, proc.stderr
    assert [t["name"] for t in json.loads(proc.stdout)["tools"]] == ["local_demo_ping"]

    proc = smoke(python, tmp_path, "uninstall", "--yes", "smoke-local-demo")
    assert proc.returncode == 0, proc.stderr
    assert "plugin local_demo (smoke-local-demo 1.0) removed" in proc.stdout
    assert "local_demo" not in _plugin_names(smoke(python, tmp_path, "plugins", "--json"))


def test_a_failing_pip_is_reported_with_its_exit_status(tmp_path: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    proc = smoke(python, tmp_path, "install", "smoke-no-such-plugin-anywhere")
    assert proc.returncode == 1
    assert "No matching distribution" in proc.stderr or "Could not find" in proc.stderr  # pip's own words
    assert "smoke: pip install failed (exit status 1)" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("marker", "content", "expected"), [
    ("pipx_metadata.json",
     json.dumps({"main_package": {"package": "smoke-harness"}, "injected_packages": {"smoke-ui": {}}}),
     "pipx inject smoke-harness smoke-tools-git"),
    ("uv-receipt.toml",
     '[tool]\nrequirements = [{ name = "smoke-harness" }, { name = "smoke-ui" }]\n',
     "uv tool install smoke-harness --with smoke-ui --with smoke-tools-git"),
])
def test_environments_managed_by_pipx_or_uv_tool_are_refused(tmp_path: Path, marker: str, content: str,
                                                              expected: str) -> None:
    python = layered_venv(tmp_path / "venv")
    (tmp_path / "venv" / marker).write_text(content)
    proc = smoke(python, tmp_path, "install", "smoke-tools-git")
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""  # pip never ran


def test_uninstall_in_a_uv_tool_environment_names_what_to_keep(tmp_path: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    (tmp_path / "venv" / "uv-receipt.toml").write_text(
        '[tool]\nrequirements = [{ name = "smoke-harness" }, { name = "smoke-ui" }, { name = "smoke-otel" }]\n')
    proc = smoke(python, tmp_path, "uninstall", "smoke-ui")
    assert proc.returncode == 2
    assert proc.stderr.rstrip().endswith("uv tool install smoke-harness --with smoke-otel")


def _bwrap_works() -> bool:
    if not shutil.which("bwrap"):
        return False
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.skipif(not _bwrap_works(), reason="needs a working bubblewrap (bwrap) to mount the environment read-only")
def test_a_read_only_environment_is_refused(tmp_path: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    # the whole file system read-only (even root cannot write): what an environment owned by someone else is
    proc = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         str(python), "-m", "smoke_core.cli", "install", "smoke-tools-git"],
        capture_output=True, text=True, env=env_for(tmp_path), timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"cannot write to {purelib_of(python)}" in proc.stderr
    assert "virtualenv you own" in proc.stderr


def _env(**kw: object) -> Environment:
    base: dict = {"python": "/usr/bin/python3", "prefix": Path("/usr"), "purelib": Path(sys.prefix),
                  "in_virtualenv": False, "externally_managed": False, "has_pip": True}
    base.update(kw)
    return Environment(**base)


def test_refusals_say_what_to_run_instead() -> None:
    managed = refusal(_env(externally_managed=True), "install", ["smoke-ui"])
    assert managed and "PEP 668" in managed and "pipx install smoke-harness" in managed
    no_pip = refusal(_env(has_pip=False), "install", ["smoke-ui"])
    assert no_pip and "/usr/bin/python3 -m ensurepip" in no_pip
    assert "uv pip install --python /usr/bin/python3 smoke-ui" in no_pip
    assert refusal(_env(), "install", ["smoke-ui"]) is None  # a writable environment with pip: go ahead
    pipx = refusal(_env(manager="pipx", main_package="smoke-core"), "uninstall", ["smoke-ui"])
    assert pipx and "pipx uninject smoke-core smoke-ui" in pipx


@pytest.mark.parametrize(("args", "message"), [
    (["install"], "name at least one package"),
    (["install", "--", "--index-url=https://example.invalid"], "looks like an option"),
    (["uninstall", "smoke-core"], "will not remove smoke-core"),
    (["uninstall", "Smoke_Core"], "will not remove smoke-core"),
])
def test_bad_requests_are_one_message_and_status_2(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from smoke_core.cli import cli

    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.slow
def test_an_editable_install_is_checked_as_the_next_run_loads_it(tmp_path: Path) -> None:
    """`smoke install -e '.[test]'` (the tutorial's step): the editable
    install's `.pth` works from the next process on, so the load check runs
    in one — no false "failed to load ... ModuleNotFoundError"."""
    python = layered_venv(tmp_path / "venv")
    src = _plugin_source(tmp_path / "src", PLUGIN_SOURCE)
    # -P: the folder is not on sys.path, as for the `smoke` script (`python -m` would import the plugin from it)
    proc = subprocess.run([str(python), "-P", "-m", "smoke_core.cli", "install", "-e", ".[test]"], capture_output=True,
                          text=True, env=env_for(tmp_path), cwd=src, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "plugin local_demo (smoke-local-demo 1.0) installed" in proc.stdout
    assert "failed to load" not in proc.stderr and "skipped" not in proc.stderr, proc.stderr
    rows = _plugin_names(smoke(python, tmp_path, "plugins", "--json"))
    assert rows["local_demo"]["error"] is None


@pytest.mark.slow
def test_an_editable_plugin_that_cannot_load_is_still_reported(tmp_path: Path) -> None:
    python = layered_venv(tmp_path / "venv")
    src = _plugin_source(tmp_path / "src", "import no_such_dependency_for_smoke_tests\n" + PLUGIN_SOURCE)
    proc = smoke(python, tmp_path, "install", "-e", str(src))
    assert proc.returncode == 0, proc.stderr
    assert "plugin local_demo (smoke-local-demo 1.0) installed" in proc.stdout
    warnings = [ln for ln in proc.stderr.splitlines() if "local_demo" in ln]
    assert len(warnings) == 1, proc.stderr  # said once, as a warning of smoke install
    assert "is installed but skipped" in warnings[0] and "no_such_dependency_for_smoke_tests" in warnings[0]
