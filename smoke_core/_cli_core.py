"""``smoke plugins``, ``smoke tools``, ``smoke trust`` and ``smoke permissions``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import click

EXIT_USAGE = 2


def _fail(message: str) -> None:
    """One message and exit status 2: a person's mistake never ends in a traceback."""
    click.echo(f"smoke: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _inspection_agent(workspace: str, *, quiet: bool = False) -> Any:
    """An agent with no provider, for commands that list what an agent would
    have. ``quiet``: the command prints the settings warnings itself."""
    import logging

    from ._config import ConfigError
    from ._factory import create_agent

    logger = logging.getLogger("smoke")
    level = logger.level
    if quiet:
        logger.setLevel(logging.ERROR)
    try:
        return create_agent(workspace, provider=_NoProvider(), trust_workspace=None)
    except (ConfigError, ValueError, TypeError, OSError) as exc:
        _fail(str(exc))
    finally:
        logger.setLevel(level)


class _NoProvider:
    """Stands in for a provider when a command only needs the tool set."""

    name = "none"
    model = "none"

    async def stream(self, request: Any) -> AsyncIterator[Any]:  # pragma: no cover - never called
        raise RuntimeError("no provider")
        yield


def plugins_impl(as_json: bool) -> None:
    """List plugins: distribution, version, hooks implemented, load errors."""
    from ._plugins import plugin_report

    infos = plugin_report()
    rows: list[dict[str, Any]] = [
        {
            "name": i.name,
            "distribution": i.distribution,
            "version": i.version,
            "module": i.module,
            "builtin": i.builtin,
            "hooks": i.hooks,
            "error": i.error,
        }
        for i in infos
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Smoke plugins")
    for col in ("plugin", "distribution", "version", "hooks", "status"):
        table.add_column(col)
    for r in rows:
        status = f"[red]broken: {r['error']}[/red]" if r["error"] else "[green]loaded[/green]"
        table.add_row(r["name"], r["distribution"] or "-", r["version"] or "-", ", ".join(r["hooks"]) or "-", status)
    Console().print(table)
    if os.environ.get("SMOKE_LOAD_PLUGINS") is not None:
        click.echo(f"(autoloading restricted by SMOKE_LOAD_PLUGINS={os.environ['SMOKE_LOAD_PLUGINS']!r})")


def tools_impl(workspace: str, as_json: bool) -> None:
    """List the tools every installed plugin registers, by group."""
    agent = _inspection_agent(workspace)
    tools = sorted(agent.tools.values(), key=lambda t: (t.group or "~", t.name))
    rows: list[dict[str, Any]] = [
        {
            "name": t.name,
            "group": t.group,
            "read_only": t.read_only,
            "source": agent.tool_source(t.name),
            "presentation": t.presentation_dict(),
            "description": t.description,
        }
        for t in tools
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Smoke tools ({len(rows)})")
    for col in ("group", "tool", "read-only", "label", "icon", "tone", "plugin"):
        table.add_column(col)
    for r in rows:
        p = r["presentation"]
        table.add_row(
            r["group"] or "-", r["name"], "yes" if r["read_only"] else "no", p.get("label") or "",
            p.get("icon") or "", p.get("tone") or "", r["source"] or "-",
        )
    Console().print(table)


def trust_impl(path: str, *, revoke: bool, list_: bool) -> None:
    """``smoke trust [PATH]``, ``--revoke``, ``--list``."""
    from ._config import ConfigError
    from ._settings_files import _norm_folder
    from .settings import (
        managed_settings_path,
        revoke_folder,
        trust_folder,
        trusted_by,
        trusted_folders,
        user_settings_path,
    )

    try:
        if list_:
            mine = trusted_folders(include_managed=False)
            everything = trusted_folders()
            if not everything:
                click.echo("no trusted folders (trust one with `smoke trust PATH`)")
            for folder in everything:
                where = user_settings_path() if folder in mine else managed_settings_path()
                click.echo(f"{folder}\t({where})")
            return
        folder = _norm_folder(path)
        if revoke:
            if revoke_folder(folder):
                click.echo(f"no longer trusted: {folder} (removed from {user_settings_path()})")
            covering = trusted_by(folder)
            if covering is not None:
                click.echo(f"{folder} is still trusted through {covering}; run `smoke trust --revoke {covering}` "
                           f"to stop that", err=True)
                sys.exit(1)
            return
        if not folder.is_dir():
            _fail(f"{path!r} is not a folder; pass the folder to trust")
        covering = trusted_by(folder)
        if covering is not None and covering != folder:
            click.echo(f"{folder} is already trusted through {covering}")
            return
        saved = trust_folder(folder)
    except ConfigError as exc:
        _fail(str(exc))
    click.echo(f"trusted: {folder} (saved in {saved})")
    for name in ("config.yaml", "config.local.yaml"):
        f = folder / ".smoke" / name
        if f.is_file():
            click.echo(f"  its settings in {f} are now honoured")
    click.echo("  `smoke permissions` shows the effective rules; `smoke trust --revoke` undoes this")


def permissions_impl(workspace: str, as_json: bool) -> None:
    """``smoke permissions``: mode, auto_approve and every rule with its origin."""
    agent = _inspection_agent(workspace, quiet=True)
    resolved = agent.settings
    order = {"deny": 0, "ask": 1, "allow": 2}
    rules = sorted(resolved.rules, key=lambda r: (order[r.action], not r.managed))
    data: dict[str, Any] = {
        "workspace": str(resolved.workspace),
        "trusted": resolved.trusted,
        "managed_settings": resolved.managed_path,
        "permission": {"value": resolved.values["permission"], "origin": resolved.origins["permission"]},
        "auto_approve": {"value": resolved.values["auto_approve"], "origin": resolved.origins["auto_approve"]},
        "rules": [{"action": r.action, "rule": r.text, "origin": r.origin, "managed": r.managed} for r in rules],
        "ignored": resolved.ignored,
        "warnings": list(resolved.warnings),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .display import visible

    c = Console(highlight=False, soft_wrap=True)
    trust = "[green]trusted[/green]" if resolved.trusted else "[yellow]not trusted[/yellow] (`smoke trust` to trust it)"
    c.print(f"[bold]{escape(str(resolved.workspace))}[/bold] — {trust}")
    c.print(f"managed settings: {escape(resolved.managed_path or 'none')}")
    c.print(f"permission: [bold]{data['permission']['value']}[/bold]  [dim]({escape(data['permission']['origin'])})[/dim]")
    auto = data["auto_approve"]
    c.print(f"auto_approve: [bold]{str(auto['value']).lower()}[/bold]  [dim]({escape(auto['origin'])})[/dim]")
    if rules:
        table = Table(title="rules (managed deny > deny > ask > allow > mode)")
        for col in ("action", "rule", "from"):
            table.add_column(col)
        for r in rules:
            origin = f"managed: {r.origin}" if r.managed else r.origin
            table.add_row(r.action, escape(visible(r.text)), escape(origin))
        c.print(table)
    else:
        c.print("rules: none")
    for warning in resolved.warnings:
        c.print(f"[yellow]⚠ {escape(visible(warning))}[/yellow]")
