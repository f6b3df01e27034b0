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


def _inspection_agent(workspace: str, *, quiet: bool = False, hooks: dict[str, Any] | None = None) -> Any:
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
        return create_agent(workspace, provider=_NoProvider(), trust_workspace=None, hooks=hooks)
    except (ConfigError, ValueError, TypeError, OSError) as exc:
        from ._cli_run import cli_words

        _fail(cli_words(exc))
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


_LISTING_ONLY = "smoke tools lists the tools; it calls no model"


def _stop_before_the_model() -> dict[str, Any]:
    return {"block": True, "reason": _LISTING_ONLY}


def tools_impl(workspace: str, as_json: bool) -> None:
    """List the tools every installed plugin registers, by group; the tools
    plugins add when a run starts (MCP servers) — those a run would start
    without asking; the others are named as not started yet — and whether
    commands run in the OS sandbox."""
    from . import sandbox

    agent = _inspection_agent(workspace, hooks={"before_model_call": _stop_before_the_model})
    not_started: list[dict[str, Any]] = []
    warnings: list[str] = []
    found = agent.tools
    if agent.plugin_manager.hook.before_run.get_hookimpls():
        import asyncio

        found, not_started, warnings = asyncio.run(_tools_at_run_start(agent))
    tools = sorted(found.values(), key=lambda t: (t.group or "~", t.name))
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
    st = sandbox.status()
    settings = agent.settings.values.get("sandbox") if agent.settings is not None else None
    mode = getattr(settings, "mode", None) or "auto"
    box = {**st.to_dict(), "mode": mode, "reason": st.reason()}
    if as_json:
        click.echo(json.dumps({"tools": rows, "not_started": not_started, "warnings": warnings, "sandbox": box},
                              indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .display import visible

    console = Console(highlight=False)
    table = Table(title=f"Smoke tools ({len(rows)})", expand=False)
    longest = max((len(r["name"]) + 2 for r in rows), default=4)
    table.add_column("tool", no_wrap=True, min_width=longest)  # never cut: it is what rules and models name
    table.add_column("ro", no_wrap=True)
    table.add_column("label", overflow="fold")
    table.add_column("plugin", overflow="fold")
    group: object = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            table.add_row(f"[bold cyan]{escape(str(group or 'other'))}[/bold cyan]", "", "", "")
        p = r["presentation"]
        label = " ".join(x for x in (p.get("icon"), p.get("label")) if x)
        table.add_row(f"  {escape(visible(r['name']))}", "yes" if r["read_only"] else "no",
                      escape(visible(label)), escape((r["source"] or "-").split(":", 1)[0]))
    console.print(table)
    console.print("[dim]ro: read-only (runs without asking); the others ask unless a rule allows them[/dim]")
    for item in not_started:
        console.print(f"[yellow]•[/yellow] {escape(visible(item['what']))}: {escape(visible(item['status']))}")
    for warning in warnings:
        console.print(f"[yellow]⚠ {escape(visible(warning))}[/yellow]")
    if st.works:
        where = "run sandboxed" if mode != "off" else "run WITHOUT it (sandbox.mode: off)"
        console.print(f"sandbox: available ({escape(st.bwrap or 'bwrap')}): commands {where}")
    else:
        consequence = ("commands are refused (sandbox.mode: required)" if mode == "required"
                       else "commands run without it" + (" (one warning per run)" if mode == "auto" else ""))
        console.print(f"sandbox: [yellow]not available[/yellow] — {escape(st.reason())}; {consequence}. "
                      f"`smoke doctor` says more.")


async def _tools_at_run_start(agent: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Let the plugins that add tools when a run starts (smoke-mcp's servers)
    add them, in a run that stops before the model (a ``before_model_call``
    block). Whatever would ask a person first (an MCP server from a file of
    the workspace) is not started: it is returned as not started yet."""
    pending: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []

    def asked(event: Any) -> None:
        d = event.data
        kind = str(d.get("kind") or "")
        what = f"{kind.replace('_', ' ')} {d.get('tool_name')!r}" if kind != "tool" else str(d.get("tool_name"))
        pending[str(d.get("tool_name"))] = {
            "kind": kind, "name": d.get("tool_name"), "what": what, "reason": d.get("reason"),
            "status": "not started yet — a run asks for your approval before it starts it; its tools are "
                      "listed once it runs" + (f" (`smoke mcp tools {d.get('tool_name')}` starts it now)"
                                               if kind == "mcp_server" else ""),
        }
        agent.resolve_permission(d["tool_call_id"], "deny")

    def warned(event: Any) -> None:
        err = event.data.get("error") or {}
        name = (err.get("details") or {}).get("server")
        if name is None:
            warnings.append(str(err.get("message", "")))  # e.g. a .mcp.json that cannot be read
        elif str(name) not in pending:  # not the denial above: it could not start
            pending[str(name)] = {"kind": "mcp_server", "name": name, "what": f"mcp server {name!r}",
                                  "reason": None, "status": f"not started — {err.get('message', '')}"}

    agent.on("permission.required", asked)
    agent.on("run.warning", warned)
    harness = agent.workspace.root / ".smoke"
    existed = {p for p in (harness, harness / "runs") if p.exists()}
    run_ids: list[str] = []
    agent.on("run.started", lambda e: run_ids.append(e.run_id))
    try:
        await agent.run("list the tools")
        return dict(agent.tools), list(pending.values()), warnings
    finally:
        await agent.aclose()
        _remove_listing_traces(harness, run_ids, existed)


def _remove_listing_traces(harness: Any, run_ids: list[str], existed: set[Any]) -> None:
    """Listing tools leaves nothing in the workspace: the run folder a
    started server logged into goes, and so do the folders it created."""
    import shutil

    for run_id in run_ids:
        shutil.rmtree(harness / "runs" / run_id, ignore_errors=True)
    for folder in (harness / "runs", harness):
        if folder not in existed:
            try:
                folder.rmdir()
            except OSError:  # not empty (something else wrote there) or gone
                pass


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


def providers_impl(as_json: bool) -> None:
    """``smoke providers``: every installed provider (the OpenAI-compatible
    presets included) with its key variable, default model and base URL."""
    from ._cli_run import cli_words
    from ._plugins import collect_providers, create_plugin_manager

    registry = collect_providers(create_plugin_manager())
    rows: list[dict[str, Any]] = []
    for spec in registry.specs():
        base_url, needs = _default_base_url(spec)
        rows.append({
            "name": spec.name,
            "env_var": spec.env_var,
            "key_set": bool(spec.env_var and os.environ.get(spec.env_var)),
            "default_model": spec.default_model,
            "base_url": base_url,
            "base_url_note": needs,
            "description": cli_words(spec.description),
            "source": spec.source,
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)
    if not rows:
        console.print("no providers installed: pip install smoke-provider-openai smoke-provider-anthropic")
        return
    console.print(f"[bold]Smoke providers ({len(rows)})[/bold]")
    for r in rows:
        if r["env_var"]:
            key = f"key {r['env_var']}" + (" [green](set)[/green]" if r["key_set"] else " [dim](not set)[/dim]")
        else:
            key = "no key"
        about = f" · [dim]{escape(r['description'])}[/dim]" if r["description"] else ""
        console.print(f"[bold cyan]{escape(r['name'])}[/bold cyan] · {key}{about}")
        where = escape(r["base_url"] or r["base_url_note"] or "-")
        console.print(f"    {where} · default model {escape(r['default_model'] or '(none: set --model)')}")
    console.print("[dim]Choose one with --provider NAME (or --model NAME:MODEL), or `provider:` in your user "
                  "settings; --base-url points it at another server.[/dim]")


def _default_base_url(spec: Any) -> tuple[str | None, str | None]:
    """``(base URL, note)``: the endpoint the provider uses when given no
    --base-url (read from a provider built without a key, which calls
    nothing), or why there is none."""
    try:
        provider = spec.factory(model=spec.default_model or "model", api_key=None, user_id=None)
    except (ValueError, TypeError) as exc:
        from ._cli_run import cli_words

        text = cli_words(exc)
        return None, "set --base-url" if "--base-url" in text else text
    except Exception as exc:  # a provider plugin's own failure; the list goes on
        return None, f"(cannot tell: {type(exc).__name__})"
    url = getattr(provider, "base_url", None)
    return (str(url) if url else None), None if url else "(no endpoint)"
