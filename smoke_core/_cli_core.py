"""``smoke plugins`` and ``smoke tools``."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import click


class _NoProvider:
    """Stands in for a provider when a command only needs the tool set."""

    name = "none"
    model = "none"

    async def stream(self, request: Any) -> AsyncIterator[Any]:  # pragma: no cover - never called
        raise RuntimeError("no provider")
        yield


def plugins_impl(as_json: bool) -> None:
    """List plugins: distribution, version, hooks implemented, load errors."""
    from .plugins import plugin_report

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
    from .agent import create_agent

    agent = create_agent(workspace, provider=_NoProvider())
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
