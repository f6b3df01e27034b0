"""The shape of the code (issue 14): no import cycle in smoke_core, plugins
import only the documented doors, old module paths still work and warn."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "smoke_core"
#: the modules plugins may import from (DESIGN §1's doors and the public modules beside them)
DOORS = {"smoke_core", "smoke_core.plugin", "smoke_core.providers", "smoke_core.testing", "smoke_core.settings",
         "smoke_core.sandbox", "smoke_core.secrets", "smoke_core.display", "smoke_core.demo",
         "smoke_core.hookspecs", "smoke_core.cli"}
OLD_PATHS = ("agent", "run", "tools", "errors", "events", "context", "compaction", "options", "messages", "prompts",
             "workspace", "store", "sqlite_store", "http_provider", "http_errors", "permissions", "config",
             "plugins", "provider_contract", "store_contract")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every smoke_core module ``path`` imports at module level, including under
    ``if TYPE_CHECKING:`` (imports inside functions are deliberate lazy loads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                subs = {f"{mod}.{a.name}" for a in node.names} & modules
                found.update(subs)
                if mod in modules and not (subs and len(subs) == len(node.names)):
                    found.add(mod)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    found.discard(name)
    return found


def test_no_import_cycle_in_smoke_core():
    files = [p for p in CORE.rglob("*.py") if "sample_project" not in p.parts]
    modules = {_module_name(p) for p in files}
    graph = {_module_name(p): _imports(p, modules) for p in files}
    # Tarjan's strongly connected components: any component of more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
    assert cycles == [], f"import cycles in smoke_core: {cycles}"


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
                             or (a.name.islower() and (CORE / f"{a.name}.py").exists())]
                elif node.module.startswith("smoke_core."):  # a private name through a door
                    mods += [f"{node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            for mod in mods:
                if mod.startswith("smoke_core") and mod not in DOORS:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {mod}")
    assert offenders == [], "plugins import implementation modules:\n" + "\n".join(offenders)


@pytest.mark.parametrize("old", OLD_PATHS)
def test_old_module_paths_still_work_with_a_deprecation_warning(old):
    module = importlib.import_module(f"smoke_core.{old}")
    public = {
        "agent": "create_agent", "run": "RunHandle", "tools": "ToolDefinition", "errors": "ToolError",
        "events": "Event", "context": "ToolContext", "compaction": "Compactor", "options": "AgentOptions",
        "messages": "user_message", "prompts": "DEFAULT_SYSTEM_PROMPT", "workspace": "Workspace",
        "store": "MemoryStore", "sqlite_store": "SQLiteStore", "http_provider": "HTTPProvider",
        "http_errors": "in_band_error", "permissions": "PermissionGate", "config": "resolve_agent_settings",
        "plugins": "create_plugin_manager", "provider_contract": "ProviderContract",
        "store_contract": "StoreContract",
    }[old]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(module, public)
    assert value is not None
    (warning,) = caught
    assert issubclass(warning.category, DeprecationWarning)
    assert f"smoke_core.{old} is deprecated" in str(warning.message) and "0.3" in str(warning.message)


def test_core_modules_stay_small_or_say_why():
    """No core module over ~500 lines without a reason stated in its docstring."""
    long = []
    for path in sorted(CORE.rglob("*.py")):
        if "sample_project" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if lines > 550 and "Why this module is long" not in doc:
            long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert long == [], "modules over 550 lines without 'Why this module is long' in the docstring: " + ", ".join(long)
