"""``smoke plugin new NAME``: a complete plugin package from the template in
``plugin_template/`` (pyproject with the entry point, a module with one
example tool and one hook, README, ``py.typed``, tests on
``smoke_core.testing``), which passes its own tests as generated.

Only the person typing runs it; it writes one new folder and nothing else
(an existing non-empty folder is refused, never overwritten).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import click

EXIT_USAGE = 2
TEMPLATE = Path(__file__).parent / "plugin_template"
#: PEP 508 names (case-insensitive), and what a module name must look like
_PROJECT_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.I)


def new_impl(name: str, directory: str, description: str | None) -> None:
    """``smoke plugin new NAME``."""
    try:
        names = plugin_names(name)
        target = create_plugin(names, Path(directory), description=description)
    except ValueError as exc:
        click.echo(f"smoke: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"Created {target}/: distribution {names.dist}, module {names.module}, "
               f"entry point {names.entry}, tool {names.tool}.")
    click.echo("Next:")
    click.echo(f"  cd {target}")
    click.echo("  smoke install -e '.[test]'   # editable, into Smoke's environment")
    click.echo("  pytest                       # its tests, Smoke's ToolContract included")
    click.echo(f"  smoke plugins                # lists {names.entry}")


@dataclass(frozen=True)
class PluginNames:
    dist: str
    module: str
    entry: str
    tool: str


def plugin_names(name: str) -> PluginNames:
    """The names a plugin called ``name`` gets, or ValueError saying what is wrong."""
    import importlib.util
    import keyword

    from packaging.utils import canonicalize_name

    if not _PROJECT_NAME.match(name):
        raise ValueError(f"{name!r} is not a package name: use letters, digits and - (e.g. acme-tools)")
    dist = str(canonicalize_name(name))
    module = dist.replace("-", "_").replace(".", "_")
    if not module.isidentifier() or keyword.iskeyword(module) or module[0].isdigit():
        raise ValueError(f"{name!r} does not make a Python module name ({module!r}); start with a letter")
    existing = importlib.util.find_spec(module)
    if existing is not None:
        where = existing.origin or "built in"
        raise ValueError(f"a module named {module!r} is already importable here ({where}); "
                         f"a plugin of that name would clash with it: choose another name")
    entry = module.removeprefix("smoke_") or module
    return PluginNames(dist=dist, module=module, entry=entry, tool=f"{entry}_count_lines")


def create_plugin(names: PluginNames, parent: Path, *, description: str | None = None) -> Path:
    """Write the package into ``parent/<dist>``; returns that folder."""
    from string import Template

    from ..base.version import __version__

    target = parent / names.dist
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} already exists and is not empty; choose another name or folder")
    if "\n" in (description or "") or '"' in (description or ""):
        raise ValueError("--description is one line without double quotes")
    major, minor = (int(p) for p in __version__.split(".")[:2])
    values = {
        "dist": names.dist,
        "module": names.module,
        "entry": names.entry,
        "tool": names.tool,
        "description": description or f"A Smoke plugin: the {names.entry} tools",
        # the minor series of the running core: before 1.0 a minor release may remove deprecated names
        "core_requirement": f"smoke-core>={major}.{minor},<{major}.{minor + 1}" if major == 0
        else f"smoke-core>={major}.{minor},<{major + 1}",
    }
    files: dict[Path, str] = {}
    for source in sorted(TEMPLATE.rglob("*")):
        if source.is_dir() or "__pycache__" in source.parts:
            continue
        rel = source.relative_to(TEMPLATE).as_posix().replace("MODULE", names.module)
        rel = rel.removesuffix(".tmpl")
        if rel == "gitignore":
            rel = ".gitignore"  # not stored as .gitignore: git would read it in this repository
        text = source.read_text(encoding="utf-8")
        files[target / rel] = Template(text).substitute(values) if source.suffix == ".tmpl" else text
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target
