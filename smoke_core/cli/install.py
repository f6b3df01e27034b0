"""``smoke install NAME…`` / ``smoke uninstall NAME…``: plugins into the
environment Smoke runs in, with that environment's own pip
(``sys.executable -m pip``, as ``llm install`` does).

Who can trigger it: only the person typing the command (no hook, tool or
setting runs it). What it refuses, with the command to use instead: an
environment managed by pipx or ``uv tool`` (they keep their own record of
what is installed, which pip would silently diverge from), one marked
externally managed (PEP 668), one the user cannot write to, and one without
pip. The entry-point cache needs no reset: it is keyed by the mtimes of the
folders on ``sys.path``, which an install or removal changes, so the next
``smoke plugins`` sees the change.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

#: pip's own distribution name for Smoke's core, which ``smoke uninstall`` will not remove
CORE_DISTRIBUTION = "smoke-core"
EXIT_USAGE = 2


# ---------------------------------------------------------------- the environment


@dataclass(frozen=True)
class Environment:
    """The Python environment ``smoke`` runs in, as far as installing goes."""

    python: str
    prefix: Path
    purelib: Path
    in_virtualenv: bool
    externally_managed: bool
    has_pip: bool
    #: "pipx" or "uv tool" when such a tool owns the environment
    manager: str | None = None
    #: the package the manager installed (``smoke-harness``, ``smoke-core``, ...)
    main_package: str | None = None
    #: packages the manager added beside it (pipx inject / uv tool --with)
    extra_packages: tuple[str, ...] = field(default=())


def current_environment() -> Environment:
    """Inspect the running interpreter's environment (files only; nothing is run)."""
    import importlib.util
    import sysconfig

    prefix = Path(sys.prefix)
    in_venv = sys.prefix != sys.base_prefix
    marker = Path(sysconfig.get_path("stdlib")) / "EXTERNALLY-MANAGED"
    manager, main, extra = _manager(prefix)
    return Environment(
        python=sys.executable,
        prefix=prefix,
        purelib=Path(sysconfig.get_path("purelib")),
        in_virtualenv=in_venv,
        externally_managed=not in_venv and marker.is_file(),
        has_pip=importlib.util.find_spec("pip") is not None,
        manager=manager,
        main_package=main,
        extra_packages=extra,
    )


def _manager(prefix: Path) -> tuple[str | None, str | None, tuple[str, ...]]:
    """pipx writes ``pipx_metadata.json`` and ``uv tool`` writes
    ``uv-receipt.toml`` at the root of the environments they own."""
    pipx = prefix / "pipx_metadata.json"
    if pipx.is_file():
        import json

        try:
            data = json.loads(pipx.read_text(encoding="utf-8"))
            main = data["main_package"]["package"]
            extra = tuple(sorted(data.get("injected_packages") or {}))
        except (OSError, ValueError, KeyError, TypeError):
            main, extra = None, ()
        return "pipx", main, extra
    receipt = prefix / "uv-receipt.toml"
    if receipt.is_file():
        import tomllib

        try:
            reqs = tomllib.loads(receipt.read_text(encoding="utf-8"))["tool"]["requirements"]
            names = [str(r["name"]) for r in reqs]
        except (OSError, ValueError, KeyError, TypeError):
            names = []
        return "uv tool", (names[0] if names else None), tuple(names[1:])
    return None, None, ()


def refusal(env: Environment, action: str, names: list[str]) -> str | None:
    """Why ``smoke <action> NAMES`` must not run pip here — with the command
    to use instead — or None. ``action`` is ``install`` or ``uninstall``."""
    wanted = " ".join(names)
    main = env.main_package or "smoke-core"
    if env.manager == "pipx":
        verb = "inject" if action == "install" else "uninject"
        return (f"Smoke was installed with pipx, which manages the environment {env.prefix}; "
                f"pip would change it behind pipx's back. Use instead:\n  pipx {verb} {main} {wanted}")
    if env.manager == "uv tool":
        keep = [p for p in env.extra_packages if action == "install" or p not in names]
        if action == "install":
            keep += [n for n in names if n not in keep]
        withs = "".join(f" --with {p}" for p in keep)
        return (f"Smoke was installed with `uv tool`, which manages the environment {env.prefix} and "
                f"reinstalls it from its own list of packages. Use instead (naming every package to keep):\n"
                f"  uv tool install {main}{withs}")
    if env.externally_managed:
        return (f"the Python at {env.python} is managed by your system's package manager (PEP 668), "
                f"so Smoke will not {action} packages into it. Install Smoke where it can have plugins: "
                f"`pipx install smoke-harness` (then `pipx inject smoke-harness NAME`) or a virtualenv "
                f"(`python -m venv ~/.venvs/smoke && ~/.venvs/smoke/bin/pip install smoke-harness`).")
    if not _writable(env.purelib):
        return (f"cannot write to {env.purelib}: the environment at {env.prefix} is read-only or "
                f"belongs to another user. Run the command as its owner, or install Smoke in a "
                f"virtualenv you own (`python -m venv ~/.venvs/smoke`).")
    if not env.has_pip:
        return (f"pip is not installed in the environment at {env.prefix}. Add it with "
                f"`{env.python} -m ensurepip`, or use `uv pip {action} --python {env.python} {wanted}`.")
    return None


def _writable(folder: Path) -> bool:
    # the nearest existing folder decides (site-packages may not exist yet in a fresh environment)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK)


def _check_names(names: tuple[str, ...], command: str) -> list[str]:
    if not names:
        raise click.UsageError(f"name at least one package: smoke {command} smoke-tools-git")
    for name in names:
        if name.startswith("-"):
            raise click.UsageError(
                f"{name!r} looks like an option, not a package; smoke {command} passes only package names "
                f"(or paths and URLs) to pip. For pip's own options run `{sys.executable} -m pip {command} ...`."
            )
    return list(names)


def _smoke_entry_points() -> set[tuple[str, str | None, str | None]]:
    """``(entry point, distribution, version)`` of the group ``smoke``, read afresh."""
    import importlib
    from importlib.metadata import entry_points

    from ..base.markers import ENTRY_POINT_GROUP

    importlib.invalidate_caches()
    return {
        (ep.name, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
        for ep in entry_points(group=ENTRY_POINT_GROUP)
    }


def _fail(message: str) -> None:
    """One message and exit status 2: a refusal is not a crash."""
    click.echo(f"smoke: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _pip(args: list[str]) -> int:
    import subprocess

    # stdin, stdout and stderr stay the person's: pip's progress and any question reach them
    return subprocess.call([sys.executable, "-m", "pip", *args])


def install_impl(names: tuple[str, ...], *, upgrade: bool, editable: bool) -> None:
    wanted = _check_names(names, "install")
    problem = refusal(current_environment(), "install", wanted)
    if problem:
        _fail(problem)
    before = _smoke_entry_points()
    args = ["install", *(["--upgrade"] if upgrade else [])]
    for name in wanted:
        args += ["--editable", name] if editable else [name]
    status = _pip(args)
    if status != 0:
        click.echo(f"smoke: pip install failed (exit status {status}); see pip's message above", err=True)
        sys.exit(status)
    _report_change(before, _smoke_entry_points(), "installed")


def uninstall_impl(names: tuple[str, ...], *, yes: bool) -> None:
    from packaging.utils import canonicalize_name

    wanted = _check_names(names, "uninstall")
    if any(canonicalize_name(n) == CORE_DISTRIBUTION for n in wanted):
        _fail(f"smoke uninstall will not remove {CORE_DISTRIBUTION}, which `smoke` itself runs from; "
              f"to remove Smoke run `{sys.executable} -m pip uninstall {CORE_DISTRIBUTION}`")
    problem = refusal(current_environment(), "uninstall", wanted)
    if problem:
        _fail(problem)
    before = _smoke_entry_points()
    status = _pip(["uninstall", *(["--yes"] if yes else []), *wanted])
    if status != 0:
        click.echo(f"smoke: pip uninstall failed (exit status {status}); see pip's message above", err=True)
        sys.exit(status)
    _report_change(before, _smoke_entry_points(), "removed")


def _report_change(before: set[Any], after: set[Any], verb: str) -> None:
    changed = sorted((after - before) if verb == "installed" else (before - after), key=lambda e: (e[1] or "", e[0]))
    if not changed:
        click.echo(f"smoke: no Smoke plugin was {verb} (no entry point in the group `smoke` changed); "
                   f"`smoke plugins` lists what is installed")
        return
    for name, dist, version in changed:
        click.echo(f"smoke: plugin {name} ({dist} {version}) {verb}")
    if verb == "installed":
        _warn_unusable({(d, n) for n, d, _ in changed})


#: run in a fresh interpreter: every plugin as the next run loads it, as JSON (no log lines)
_LOAD_CHECK = (
    "import json, logging; logging.disable(logging.CRITICAL); from smoke_core.hooks.manager import plugin_report; "
    "print(json.dumps([[i.distribution, i.name, i.error] for i in plugin_report()]))"
)


def _warn_unusable(new: set[tuple[str | None, str]]) -> None:
    """Load the new plugins now, so an import error or an API mismatch is said
    here, not later. In a child process: this one started before the install,
    so an editable install's ``.pth`` file (processed at interpreter start)
    has not taken effect in it, and its plugin would seem not to import."""
    import json
    import subprocess

    try:
        # -P: the current folder is not put on sys.path (it would import a plugin the next run cannot)
        out = subprocess.run([sys.executable, "-P", "-c", _LOAD_CHECK], capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL, check=False)
        rows = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, ValueError):
        rows = None
    if rows is None:
        click.echo("smoke: warning: could not check that the new plugins load; `smoke plugins` shows whether they do",
                   err=True)
        return
    for dist, name, error in rows:
        if (dist, name) in new and error:
            click.echo(f"smoke: warning: plugin {name} ({dist}) is installed but skipped: {error}", err=True)
