"""The shape of the core (issue 27): sub-packages for its parts, dependencies
one way, the CLI's libraries only in the CLI, no module over 500 lines, only
doors and parts at the top; plugins import only the doors.

Each check is a function over a folder that returns what is wrong, run on
``smoke_core`` (nothing may be wrong) and on a copy with one deliberately bad
module (the check must say so), so that a check that can no longer fail is
noticed.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "smoke_core"

#: the parts, lowest first: a part may import only parts of a lower rank (the same
#: rank is two parts that may not import each other)
RANK = {"base": 0, "tools": 1, "wire": 1, "store": 1, "policy": 2, "hooks": 3, "run": 4, "testing": 5,
        "batch": 5, "demo": 6, "cli": 7}
#: top-level modules that are doors (re-exports for applications and plugins) and the part each belongs to;
#: None: a door above every part, which no part may import
DOOR_MODULES = {"__init__": None, "plugin": None, "providers": None, "settings": None, "sandbox": None,
                "secrets": None, "display": None, "hookspecs": "hooks"}
#: what plugins may import: DESIGN §1's doors and the public modules beside them
DOORS = {"smoke_core", "smoke_core.plugin", "smoke_core.providers", "smoke_core.testing", "smoke_core.settings",
         "smoke_core.sandbox", "smoke_core.secrets", "smoke_core.display", "smoke_core.demo",
         "smoke_core.hookspecs", "smoke_core.cli"}
CLI_LIBRARIES = ("click", "rich", "prompt_toolkit")
MAX_LINES = 500


# ---------------------------------------------------------------- reading the code


def _sources(root: Path) -> dict[str, Path]:
    """``{module name: file}`` for every module of the package at ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        if "sample_project" in rel.parts or "plugin_template" in rel.parts:
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """Every module ``path`` imports, anywhere in the file: at module level,
    inside functions and under ``if TYPE_CHECKING:`` — ``(module, line)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                found.append((sub if sub in modules else mod, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
    return [(mod, line) for mod, line in found if mod != name]


def _part(module: str) -> str:
    """``smoke_core.run.agent`` → ``run``; a top-level door → ``door:<name>`` (or its part)."""
    bits = module.split(".")
    if len(bits) == 1:
        return "door:__init__"
    if bits[1] in RANK:
        return bits[1]
    part = DOOR_MODULES.get(bits[1])
    return part if part is not None else f"door:{bits[1]}"


# ---------------------------------------------------------------- the checks


def upward_imports(root: Path) -> list[str]:
    """Imports that go up (or sideways) between the parts, or from a part into a door."""
    sources = _sources(root)
    modules = set(sources)
    problems = []
    for name, path in sources.items():
        mine = _part(name)
        for target, line in _imports(name, path, modules):
            if target not in modules:
                continue
            theirs = _part(target)
            if theirs == mine or mine.startswith("door:"):
                continue
            where = f"{path.relative_to(root.parent)}:{line}"
            if theirs.startswith("door:"):
                problems.append(f"{where}: {name} ({mine}) imports the door {target}; import the part instead")
            elif RANK[theirs] >= RANK[mine]:
                problems.append(f"{where}: {name} ({mine}) imports {target} ({theirs}), which is not below it")
    return problems


def import_cycles(root: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (every import counted)."""
    sources = _sources(root)
    modules = set(sources)
    graph = {n: sorted({t for t, _ in _imports(n, p, modules) if t in modules}) for n, p in sources.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def cli_library_imports(root: Path) -> list[str]:
    """Imports of click, rich or prompt_toolkit outside ``cli/`` (anywhere in a file)."""
    sources = _sources(root)
    problems = []
    for name, path in sources.items():
        if _part(name) == "cli":
            continue
        for target, line in _imports(name, path, set(sources)):
            if target.split(".")[0] in CLI_LIBRARIES:
                problems.append(f"{path.relative_to(root.parent)}:{line}: {name} imports {target}")
    return problems


def long_modules(root: Path) -> list[str]:
    """Modules over MAX_LINES lines, outside ``testing/``."""
    return [f"{path.relative_to(root.parent)} ({n} lines)" for name, path in _sources(root).items()
            if _part(name) != "testing" and (n := path.read_text(encoding="utf-8").count("\n")) > MAX_LINES]


def stray_top_level(root: Path) -> list[str]:
    """Entries at the top of the package that are neither a door nor a part."""
    allowed = {f"{name}.py" for name in DOOR_MODULES} | set(RANK) | {"py.typed", "__pycache__"}
    return sorted(p.name for p in root.iterdir() if p.name not in allowed)


def parts_without_a_map(root: Path) -> list[str]:
    """Sub-packages whose ``__init__`` docstring is missing or not three to six lines (nested ones
    included), and parts missing from the package docstring's map (or named there but absent)."""
    problems = []
    for init in sorted(root.rglob("__init__.py")):
        if init.parent == root or "sample_project" in init.parts or "plugin_template" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        lines = len(doc.strip().splitlines())
        if not 3 <= lines <= 6 and init.parent.name not in ("testing", "demo", "cli"):
            problems.append(f"{init.relative_to(root.parent)}: a docstring of 3-6 lines (has {lines})")
        elif not doc:
            problems.append(f"{init.relative_to(root.parent)}: no docstring")
    mapped = set(re.findall(r"``(\w+)/``", ast.get_docstring(ast.parse((root / "__init__.py").read_text())) or ""))
    folders = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    problems += [f"the package docstring does not map {p}/" for p in sorted(folders - mapped)]
    problems += [f"the package docstring maps {p}/, which does not exist" for p in sorted(mapped - folders)]
    return problems


# ---------------------------------------------------------------- on the real core


def test_dependencies_run_one_way():
    assert upward_imports(CORE) == []


def test_no_import_cycle_counting_every_import():
    assert import_cycles(CORE) == []


def test_click_rich_and_prompt_toolkit_only_in_the_cli():
    assert cli_library_imports(CORE) == []


def test_no_module_over_500_lines_outside_testing():
    assert long_modules(CORE) == []


def test_the_top_holds_only_doors_and_parts():
    assert stray_top_level(CORE) == []


def test_every_part_says_what_it_holds_and_the_map_agrees_with_the_folders():
    assert parts_without_a_map(CORE) == []
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(\w+)/` \|", doc, re.M))
    assert documented == set(RANK), f"docs/architecture.md's table: {sorted(documented ^ set(RANK))}"
    assert "Deprecated path" not in "".join(p.read_text() for p in _sources(CORE).values())


# ---------------------------------------------------------------- each check can fail


@pytest.fixture
def core_copy(tmp_path: Path) -> Path:
    """A copy of smoke_core to put one bad module into."""
    copy = tmp_path / "smoke_core"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__", "sample_project", "plugin_template"))
    return copy


@pytest.mark.parametrize(("where", "code", "expected"), [
    # a lower part importing a higher one, at module level, inside a function, under TYPE_CHECKING
    ("tools/bad.py", "from ..run.agent import Agent\n", "imports smoke_core.run.agent (run)"),
    ("wire/bad.py", "def f():\n    from ..policy.gate import PermissionGate\n", "imports smoke_core.policy.gate"),
    ("policy/bad.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..run.handle import RunHandle\n",
     "imports smoke_core.run.handle (run)"),
    # two parts of the same rank
    ("store/bad.py", "from ..wire.types import Usage\n", "imports smoke_core.wire.types (wire)"),
    # a part importing a door
    ("run/bad.py", "from ..plugin import ToolResult\n", "imports the door smoke_core.plugin"),
])
def test_an_upward_import_is_found(core_copy, where, code, expected):
    (core_copy / where).write_text(code)
    (problem,) = upward_imports(core_copy)
    assert expected in problem and f"smoke_core/{where}" in problem


def test_an_import_cycle_inside_a_part_is_found(core_copy):
    (core_copy / "run" / "bad_a.py").write_text("def f():\n    from . import bad_b\n")
    (core_copy / "run" / "bad_b.py").write_text("from . import bad_a\n")
    assert import_cycles(core_copy) == [["smoke_core.run.bad_a", "smoke_core.run.bad_b"]]


@pytest.mark.parametrize("code", ["import rich\n", "def f():\n    from click import echo\n",
                                  "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import prompt_toolkit\n"])
def test_a_cli_library_outside_the_cli_is_found(core_copy, code):
    (core_copy / "run" / "bad.py").write_text(code)
    assert len(cli_library_imports(core_copy)) == 1
    (core_copy / "run" / "bad.py").unlink()
    (core_copy / "cli" / "fine.py").write_text(code)  # inside cli/ it is where it belongs
    assert cli_library_imports(core_copy) == []


def test_a_long_module_is_found(core_copy):
    (core_copy / "store" / "bad.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (core_copy / "testing" / "long_kit.py").write_text("x = 1\n" * (MAX_LINES + 1))  # the test kits may be long
    assert long_modules(core_copy) == [f"smoke_core/store/bad.py ({MAX_LINES + 1} lines)"]


def test_a_stray_top_level_module_is_found(core_copy):
    (core_copy / "agent.py").write_text('"""Deprecated path: import from smoke_core."""\n')
    assert stray_top_level(core_copy) == ["agent.py"]


def test_a_part_without_a_docstring_or_missing_from_the_map_is_found(core_copy):
    (core_copy / "extra").mkdir()
    (core_copy / "extra" / "__init__.py").write_text("")
    assert parts_without_a_map(core_copy) == ["smoke_core/extra/__init__.py: a docstring of 3-6 lines (has 0)",
                                               "the package docstring does not map extra/"]


# ---------------------------------------------------------------- at run time, and the plugins


def test_the_library_runs_without_the_cli_libraries(tmp_path):
    """With click, rich and prompt_toolkit made unimportable, every core module
    outside cli/ (and the demo, which smoke serve uses) imports, and an agent
    runs a task with a tool call."""
    modules = sorted(n for n in _sources(CORE) if _part(n) != "cli")
    probe = textwrap.dedent(f"""
        import importlib, importlib.abc, sys

        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {CLI_LIBRARIES!r}:
                    raise ImportError(f"{{name}} is absent in this test")
                return None

        sys.meta_path.insert(0, Absent())
        for name in {modules!r}:
            importlib.import_module(name)
        from smoke_core import create_agent, tool
        from smoke_core.testing import ScriptedProvider

        @tool
        def add(a: int, b: int) -> str:
            "Add two numbers."
            return str(a + b)

        agent = create_agent({str(tmp_path)!r}, provider=ScriptedProvider(
            [{{"tool_calls": [{{"name": "add", "input": {{"a": 2, "b": 3}}}}]}}, "5"]),
            tools=[add], autoload_plugins=False, permission="allow-all")
        result = agent.run_sync("add 2 and 3")
        assert result.status == "completed" and result.text == "5", result
        assert not any(m.split(".")[0] in {CLI_LIBRARIES!r} for m in sys.modules)
        print("ok", len({modules!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok ")


def test_plugins_import_only_the_doors():
    offenders = []
    for path in sorted((ROOT / "plugins").glob("*/**/*.py")):
        if "node_modules" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
                if node.module == "smoke_core":
                    mods += [f"smoke_core.{a.name}" for a in node.names
                             if (a.name.startswith("_") and not a.name.startswith("__"))  # `from smoke_core import _x`
                             or (a.name.islower() and ((CORE / f"{a.name}.py").exists() or (CORE / a.name).is_dir()))]
                elif node.module.startswith("smoke_core."):  # a private name through a door
                    mods += [f"{node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            for mod in mods:
                if mod.startswith("smoke_core") and mod not in DOORS:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {mod}")
    assert offenders == [], "plugins import implementation modules:\n" + "\n".join(offenders)
