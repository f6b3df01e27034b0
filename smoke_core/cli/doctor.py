"""``smoke doctor``: what this machine offers Smoke, and what each missing
piece turns off. Only click is imported at module load (``smoke --help``
imports this module)."""

from __future__ import annotations

from typing import Any

import click


def _version(argv: list[str]) -> str | None:
    import subprocess

    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def _which(*names: str, extra_dirs: tuple[str, ...] = ()) -> str | None:
    import os
    import shutil

    for name in names:
        for folder in extra_dirs:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        found = shutil.which(name)
        if found:
            return found
    return None


def gather() -> dict[str, Any]:
    """Every check as data: ``{"checks": [...], "sandbox": {...}}``. A check is
    ``{"name", "ok", "path", "version", "detail", "disables"}``; ``disables``
    says what does not work while it is missing (None when ``ok``)."""
    import os
    import sys

    from ..policy.sandbox import probe as sandbox
    from ..policy.sandbox.settings import INSTALL_HINT

    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, *, path: str | None = None, version: str | None = None,
            detail: str = "", disables: str) -> None:
        checks.append({"name": name, "ok": ok, "path": path, "version": version, "detail": detail,
                       "disables": None if ok else disables})

    st = sandbox.status(fresh=True)  # the diagnosis: never a remembered answer
    add(
        "bubblewrap", st.works, path=st.bwrap, version=st.version,
        detail=("works: commands run sandboxed"
                + (" (no nested user namespaces)" if st.disable_userns else "")) if st.works else st.reason(),
        disables=("the OS sandbox: with sandbox.mode auto (the default) commands run WITHOUT it (one warning per "
                  f"run); with required they are refused. {INSTALL_HINT}"),
    )
    userns = st.user_namespaces or sandbox.user_namespace_settings()
    root = userns.get("running_as_root")
    userns_detail = ", ".join(f"{k}={v}" for k, v in userns.items()
                             if k not in ("allowed", "running_as_root") and v is not None)
    add(
        "user namespaces", bool(userns.get("allowed")) or bool(root),
        detail=(("allowed" if userns.get("allowed") else "not allowed for other users, but Smoke runs as root")
                + f" ({userns_detail})"),
        disables=("bubblewrap when not run as root (it needs unprivileged user namespaces): enable them, e.g. "
                  "`sysctl kernel.unprivileged_userns_clone=1` on older Debian, or an AppArmor profile for bwrap on "
                  "Ubuntu 24.04+ (`kernel.apparmor_restrict_unprivileged_userns`)"),
    )
    rg = _which("rg", extra_dirs=(os.path.dirname(sys.executable),))
    add("ripgrep", rg is not None, path=rg, version=_version([rg, "--version"]) if rg else None,
        disables="fast search: grep and glob use the slower pure-Python engine (`pip install ripgrep`)")
    git = _which("git")
    add("git", git is not None, path=git, version=_version([git, "--version"]) if git else None,
        disables="the git tools (git_status, git_diff, git_log, git_show, git_add, git_commit)")
    node = _which("node")
    add("node", node is not None, path=node, version=_version([node, "--version"]) if node else None,
        disables="MCP servers written in JavaScript (most published ones)")
    npx = _which("npx")
    add("npx", npx is not None, path=npx, version=_version([npx, "--version"]) if npx else None,
        disables="MCP servers configured as `npx -y <package>` (the usual form in .mcp.json)")
    chromium = os.environ.get("SMOKE_CHROMIUM") or _which("chromium", "chromium-browser", "google-chrome")
    if chromium and not os.path.isfile(chromium):
        chromium = None
    add("chromium", chromium is not None, path=chromium,
        version=_version([chromium, "--version"]) if chromium else None,
        disables="the browser tests of `smoke serve` (they are skipped); the web UI itself still works")
    checks += settings_checks()
    return {"checks": checks, "sandbox": st.to_dict()}


def settings_checks(workspace: str | None = None) -> list[dict[str, Any]]:
    """One check per settings layer (managed, user, this folder's project and
    local files, ``SMOKE_*`` variables), each validated as a run validates it
    (plugin-declared keys included): a layer a run would refuse (exit 2) is
    reported here with the run's own message."""
    import os
    from pathlib import Path

    from ..hooks.collect import collect_setting_specs
    from ..hooks.manager import create_plugin_manager
    from ..policy.settings.files import (
        SettingsError,
        local_settings_path,
        managed_settings_path,
        project_settings_path,
        user_settings_file,
    )
    from ..policy.settings.layers import resolve_settings

    ws = Path(workspace or os.getcwd())
    stops = "every `smoke run`, `smoke chat` and `smoke serve`{}: they stop with exit status 2"
    try:
        specs = collect_setting_specs(create_plugin_manager())
    except Exception as exc:  # a broken plugin: validate the core's keys, and say so
        specs = {}
        note = f" (plugin settings not checked: {type(exc).__name__}: {exc})"
    else:
        note = ""
    layers: list[tuple[str, list[str], str | None]] = [
        ("managed", [], str(managed_settings_path())),
        ("user", ["user"], user_settings_file()),
        ("project", ["project"], str(project_settings_path(ws))),
        ("local", ["local"], str(local_settings_path(ws))),
        ("environment", ["environment"], None),
    ]
    out: list[dict[str, Any]] = []
    managed_failed = False
    for name, sources, path in layers:
        present = path is None or os.path.exists(path)
        if managed_failed:  # every other layer would repeat the managed file's error
            break
        try:
            resolve_settings(ws, sources=sources, trust=None, specs=specs)
        except SettingsError as exc:
            out.append({"name": f"{name} settings", "ok": False, "path": path, "version": None,
                        "detail": str(exc).strip() + note,
                        "disables": stops.format(" in this folder" if name in ("project", "local") else "")})
            managed_failed = name == "managed"
            continue
        what = "valid" if present else "no file"
        out.append({"name": f"{name} settings", "ok": True, "path": path, "version": None,
                    "detail": what + note, "disables": None})
    return out


def doctor_impl(as_json: bool) -> None:
    """``smoke doctor``: the report, as text or JSON."""
    import json

    report = gather()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for check in report["checks"]:
        mark = click.style("✓", fg="green") if check["ok"] else click.style("✗", fg="red")
        detail = (check["detail"] or "").splitlines()
        if check["name"].endswith(" settings"):  # one line: valid, no file or invalid; then the problem
            what = " ".join(x for x in ((detail or [""])[0] if check["ok"] else "invalid",
                                        f"({check['path']})" if check["path"] else None) if x)
            detail = [] if check["ok"] else detail
        else:
            what = " ".join(x for x in (check["version"], f"({check['path']})" if check["path"] else None) if x)
        click.echo(f"{mark} {check['name']}: {what or ('found' if check['ok'] else 'missing')}")
        for line in detail:
            click.echo(f"    {line}")
        if check["disables"]:
            fails = check["name"].endswith(" settings")
            click.echo(f"    {'until it is fixed' if fails else 'without it'}: {check['disables']}")
    invalid = [c["name"] for c in report["checks"] if not c["ok"] and c["name"].endswith(" settings")]
    missing = [c["name"] for c in report["checks"] if not c["ok"] and c["name"] not in invalid]
    problems = [f"missing: {', '.join(missing)}"] * bool(missing) + [f"invalid: {', '.join(invalid)}"] * bool(invalid)
    click.echo("; ".join(problems) or "everything is here")
