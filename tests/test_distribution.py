"""Every package is publishable and, as built, installs from an index (issue 22).

The fast tests read the packages' metadata. The index tests (marked ``index``;
the ``build`` nox session runs them on the files it built, ``SMOKE_DIST_DIR``)
serve the built wheels as a PEP 503 simple index on 127.0.0.1 — a plain HTTP
server over the files — and ``pip install`` from it alone into fresh
virtualenvs. The third-party dependencies are on that index too: the build
session first makes them into wheels (``SMOKE_DIST_DEPS``, ``pip wheel``), so
the tests reach nothing but 127.0.0.1.

Why pip's installation report: it says where every installed distribution
came from, with its hash: each Smoke package must come from the local index
and be byte-for-byte the file built here (not a copy pip made, not another
``smoke-core``).
"""

from __future__ import annotations

import hashlib
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

import smoke_core

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIRS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())
META_DIRS = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
PACKAGE_DIRS = [ROOT, *PLUGIN_DIRS, *META_DIRS]
EXAMPLE = ROOT / "docs" / "examples" / "smoke-policy-example"
META = "smoke-harness"
#: what the meta-package installs: core, the five tool groups, both provider adapters, MCP and skills
DEFAULT_SET = {
    "smoke-core", "smoke-tools-filesystem", "smoke-tools-search", "smoke-tools-terminal", "smoke-tools-git",
    "smoke-tools-agent", "smoke-provider-openai", "smoke-provider-anthropic", "smoke-mcp", "smoke-skills",
}
GIT_TOOLS = {"git_status", "git_diff", "git_log", "git_show", "git_add", "git_commit"}


def _project(folder: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def _version(folder: Path) -> str:
    project = _project(folder)
    if "version" in project:
        return str(project["version"])
    assert folder == ROOT and project.get("dynamic") == ["version"]
    return smoke_core.__version__


FIRST_PARTY = {canonicalize_name(_project(d)["name"]) for d in PACKAGE_DIRS}


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize("folder", PACKAGE_DIRS, ids=lambda d: d.name if d != ROOT else "smoke-core")
def test_every_package_has_complete_metadata(folder: Path) -> None:
    project = _project(folder)
    assert project["description"] and len(project["description"]) <= 200
    assert (folder / project["readme"]).is_file()
    assert project["requires-python"] == ">=3.11"
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")], "the SPDX `license` replaces License classifiers"
    assert project["authors"] and project["keywords"]
    # the same project links everywhere, so they change in one sweep
    assert project["urls"] == _project(ROOT)["urls"]
    assert set(project["urls"]) == {"Homepage", "Documentation", "Repository", "Changelog", "Issues"}
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["build-system"]["requires"] == ["hatchling>=1.27"], "1.27: the first with PEP 639 licenses"
    targets = pyproject["tool"]["hatch"]["build"]["targets"]
    # metadata 2.4 (PEP 639) is what PyPI and every twine >= 6.1 accept; hatchling >= 1.30 defaults to 2.5
    assert targets["wheel"]["core-metadata-version"] == targets["sdist"]["core-metadata-version"] == "2.4"


def test_first_party_packages_share_smoke_cores_version() -> None:
    """Lockstep: a Smoke release is one version (core's, smoke_core/base/version.py);
    each plugin writes it in its own pyproject.toml, and this test keeps them equal."""
    versions = {_project(d)["name"]: _version(d) for d in PACKAGE_DIRS}
    assert set(versions.values()) == {smoke_core.__version__}, versions


@pytest.mark.parametrize("folder", [*PACKAGE_DIRS[1:], EXAMPLE], ids=lambda d: d.name)
def test_first_party_dependencies_are_compatible_ranges(folder: Path) -> None:
    """A dependency on a Smoke package admits this release's patch versions and
    stops before the next minor (``>=0.2,<0.3``): before 1.0 a minor release may
    remove what the previous one deprecated (docs/compatibility.md)."""
    project = _project(folder)
    wanted = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("test", [])]
    current = Version(smoke_core.__version__)
    next_minor = Version(f"{current.major}.{current.minor + 1}")
    ours = [Requirement(r) for r in wanted if canonicalize_name(Requirement(r).name) in FIRST_PARTY]
    assert any(r.name == "smoke-core" for r in ours)
    for req in ours:
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"{req}: pinned"
        assert req.specifier.contains(current) and req.specifier.contains(f"{current.major}.{current.minor}.99")
        assert not req.specifier.contains(next_minor), f"{req}: not bounded below the next minor"
        assert not req.specifier.contains(f"{current.major}.{current.minor - 1}.99") if current.minor else True


def test_meta_package_installs_the_default_set() -> None:
    (meta,) = [d for d in META_DIRS if _project(d)["name"] == META]
    names = {canonicalize_name(Requirement(r).name) for r in _project(meta)["dependencies"]}
    assert names == DEFAULT_SET
    assert "entry-points" not in _project(meta), "the meta-package is not a plugin"


def test_changelog_is_keep_a_changelog_with_this_release() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "https://keepachangelog.com/en/1.1.0/" in text
    headings = re.findall(r"^## \[([^\]]+)\](?: - (.+))?$", text, re.M)
    assert headings[0][0] == "Unreleased"
    assert headings[1][0] == smoke_core.__version__
    allowed = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert set(re.findall(r"^### (.+)$", text, re.M)) <= allowed
    release = text.split(f"## [{smoke_core.__version__}]", 1)[1].split("\n## [", 1)[0]
    for topic in ("trust", "sandbox", "subagent", "OpenTelemetry", "ACP", "MCP", "cach", "smoke install",
                  "smoke plugin new", "ToolContract", "smoke-harness"):
        assert topic in release, f"CHANGELOG {smoke_core.__version__} says nothing about {topic}"


def test_readme_names_the_meta_package_and_says_it_is_not_published() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"pip install {META}" in readme
    assert "not yet published" in readme


# ---------------------------------------------------------------- the index


def _build_wheels(out: Path) -> None:
    pytest.importorskip("hatchling", reason="building the wheels needs hatchling (the build nox session has it)")
    folders = [str(d) for d in PACKAGE_DIRS]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "--wheel-dir", str(out), *folders],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built packages: ``SMOKE_DIST_DIR`` (what ``nox -s build`` made), or wheels built now."""
    given = os.environ.get("SMOKE_DIST_DIR")
    if given:
        folder = Path(given)
        assert any(folder.glob("*.whl")), f"SMOKE_DIST_DIR={given} holds no wheel"
        return folder
    folder = tmp_path_factory.mktemp("dist")
    _build_wheels(folder)
    return folder


def _dist_name(f: Path) -> str:
    return str(parse_wheel_filename(f.name)[0] if f.suffix == ".whl" else parse_sdist_filename(f.name)[0])


def _wheelhouse() -> Path:
    """The third-party dependencies as wheels (``SMOKE_DIST_DEPS``, made by ``nox -s build``)."""
    given = os.environ.get("SMOKE_DIST_DEPS")
    if not given or not any(Path(given).glob("*.whl")):
        pytest.skip("the index tests install from 127.0.0.1 only, so they need the third-party dependencies as "
                    "wheels: run `nox -s build` (it makes build/wheelhouse), or set SMOKE_DIST_DEPS to a folder "
                    "made with `pip wheel --wheel-dir DIR --find-links dist dist/*.whl`")
    return Path(given)


def write_simple_index(root: Path, files: list[Path]) -> None:
    """A static PEP 503 index: ``simple/index.html`` and ``simple/<project>/index.html``
    linking to ``files/<file>#sha256=...`` (with ``data-requires-python``)."""
    import shutil

    (root / "files").mkdir(parents=True)
    projects: dict[str, list[str]] = {}
    for f in sorted(files):
        shutil.copy2(f, root / "files" / f.name)
        name = parse_wheel_filename(f.name)[0] if f.suffix == ".whl" else parse_sdist_filename(f.name)[0]
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        projects.setdefault(str(name), []).append(
            f'<a href="../../files/{f.name}#sha256={digest}" data-requires-python="{html.escape(">=3.11")}">{f.name}</a><br>'
        )
    (root / "simple").mkdir()
    links = "".join(f'<a href="{p}/">{p}</a><br>' for p in sorted(projects))
    (root / "simple" / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
    for project, anchors in projects.items():
        (root / "simple" / project).mkdir()
        (root / "simple" / project / "index.html").write_text(
            f"<!DOCTYPE html><html><body>{''.join(anchors)}</body></html>"
        )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # pip's own output says enough
        pass


@pytest.fixture(scope="module")
def local_index(dist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Smoke's wheels and the tutorial's third-party plugin, served on 127.0.0.1."""
    example = tmp_path_factory.mktemp("example-wheel")
    # built from a copy: setuptools writes build/ inside the source folder, and two workers
    # building the same folder at once collide ("File exists: build/bdist.../...dist-info")
    source = tmp_path_factory.mktemp("example-source") / EXAMPLE.name
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "--wheel-dir", str(example), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    files = [*dist_dir.glob("*.whl"), *dist_dir.glob("*.tar.gz"), *example.glob("*.whl")]
    first_party = {_dist_name(f) for f in files}
    deps = [f for f in _wheelhouse().glob("*.whl") if _dist_name(f) not in first_party]
    root = tmp_path_factory.mktemp("index")
    write_simple_index(root, [*files, *deps])
    handler = lambda *a, **kw: _QuietHandler(*a, directory=str(root), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    hashes = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    try:
        yield {"url": url, "hashes": hashes, "first_party": first_party}
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _clean_env(tmp: Path) -> dict[str, str]:
    """No pip configuration of this machine (its own extra indexes, find-links) and
    no Smoke settings of the person running the tests."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "SMOKE_", "VIRTUAL_ENV", "PYTHON"))}
    pip_cache = os.environ.get("PIP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip")
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_STATE_HOME": str(tmp / "state"),
                "XDG_CACHE_HOME": str(tmp / "cache"), "SMOKE_MANAGED_SETTINGS": str(tmp / "none.yaml")})
    if os.environ.get("PIP_CERT"):
        env["PIP_CERT"] = os.environ["PIP_CERT"]
    env["PIP_CACHE_DIR"] = pip_cache  # shared: the index tests download nothing twice
    return env


def pip_install_from_index(index: dict[str, Any], tmp: Path, *requirements: str) -> tuple[Path, dict[str, Any]]:
    """A fresh virtualenv with ``requirements`` installed from the local index
    alone; returns its bin folder and pip's installation report."""
    import venv

    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)  # the running pip installs into it (--python): faster than ensurepip
    python = env_dir / "bin" / "python"
    report = tmp / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         "--index-url", f"{index['url']}/simple/", "--report", str(report), *requirements],
        capture_output=True, text=True, timeout=900, env=_clean_env(tmp),
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return env_dir / "bin", json.loads(report.read_text())


def _smoke_distributions(bin_dir: Path, tmp: Path) -> set[str]:
    """Distributions in the virtualenv that are Smoke's: named smoke-* or declaring a ``smoke`` entry point."""
    code = (
        "import json, importlib.metadata as m\n"
        "out = set()\n"
        "for d in m.distributions():\n"
        "    name = d.metadata['Name'].lower()\n"
        "    if name.startswith('smoke-') or any(e.group == 'smoke' for e in d.entry_points): out.add(name)\n"
        "print(json.dumps(sorted(out)))\n"
    )
    proc = subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True,
                          env=_clean_env(tmp), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


def _assert_from_local_index(report: dict[str, Any], index: dict[str, Any], expected: set[str]) -> None:
    installed = {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
    ours = {name for name in installed if name.startswith("smoke-") or name in index["first_party"]}
    assert ours == expected
    elsewhere = {n: i["download_info"]["url"] for n, i in installed.items()
                 if not i["download_info"]["url"].startswith(f"{index['url']}/")}
    assert not elsewhere, f"installed from somewhere other than the local index: {elsewhere}"
    for name in ours:
        assert installed[name]["metadata"]["metadata_version"] in ("2.4", "2.1")  # 2.1: the setuptools example
        info = installed[name]["download_info"]
        filename = info["url"].rsplit("/", 1)[-1]
        assert info["url"].startswith(f"{index['url']}/files/"), f"{name} came from {info['url']}"
        assert info["archive_info"]["hashes"]["sha256"] == index["hashes"][filename], f"{name}: not the file built here"


def _smoke(bin_dir: Path, tmp: Path, *args: str) -> Any:
    proc = subprocess.run([str(bin_dir / "smoke"), *args], capture_output=True, text=True,
                          env=_clean_env(tmp), cwd=tmp, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.index
def test_pip_install_smoke_tools_git_from_the_index(local_index: dict[str, Any], tmp_path: Path) -> None:
    bin_dir, report = pip_install_from_index(local_index, tmp_path, "smoke-tools-git")
    requested = {canonicalize_name(i["metadata"]["name"]) for i in report["install"] if i["requested"]}
    assert requested == {"smoke-tools-git"}
    _assert_from_local_index(report, local_index, {"smoke-tools-git", "smoke-core"})  # core came as a dependency
    assert _smoke_distributions(bin_dir, tmp_path) == {"smoke-core", "smoke-tools-git"}  # nothing else of Smoke
    tools = _smoke(bin_dir, tmp_path, "tools", "--json", "--workspace", str(tmp_path))["tools"]
    assert {t["name"] for t in tools} == GIT_TOOLS
    assert {t["source"] for t in tools} == {"smoke-tools-git:tools_git"}


@pytest.mark.slow
@pytest.mark.index
def test_pip_install_the_meta_package_from_the_index(local_index: dict[str, Any], tmp_path: Path) -> None:
    bin_dir, report = pip_install_from_index(local_index, tmp_path, META)
    _assert_from_local_index(report, local_index, DEFAULT_SET | {META})
    assert _smoke_distributions(bin_dir, tmp_path) == DEFAULT_SET | {META}
    plugins = {p["distribution"] for p in _smoke(bin_dir, tmp_path, "plugins", "--json") if not p["error"]}
    assert plugins == DEFAULT_SET
    tools = {t["name"] for t in _smoke(bin_dir, tmp_path, "tools", "--json", "--workspace", str(tmp_path))["tools"]}
    assert GIT_TOOLS | {"read_file", "grep", "run_command", "todo_write", "list_skills"} <= tools
    providers = {p["name"] for p in _smoke(bin_dir, tmp_path, "providers", "--json")}
    assert {"openai", "anthropic"} <= providers


@pytest.mark.slow
@pytest.mark.index
def test_pip_install_the_tutorials_third_party_plugin_from_the_index(local_index: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    bin_dir, report = pip_install_from_index(local_index, tmp_path, "smoke-policy-example")
    _assert_from_local_index(report, local_index, {"smoke-policy-example", "smoke-core"})
    assert _smoke_distributions(bin_dir, tmp_path) == {"smoke-core", "smoke-policy-example"}
    rows = {p["name"]: p for p in _smoke(bin_dir, tmp_path, "plugins", "--json")}
    assert rows["policy_example"]["distribution"] == "smoke-policy-example" and rows["policy_example"]["error"] is None
    tools = _smoke(bin_dir, tmp_path, "tools", "--json", "--workspace", str(tmp_path))["tools"]
    assert [t["name"] for t in tools] == ["word_count"]
