"""``smoke plugins``, ``smoke tools``, ``smoke trust`` and ``smoke permissions``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import click

EXIT_USAGE = 2
_LISTING_ONLY = "smoke tools lists the tools; it calls no model"


def _fail(message: str) -> None:
    """One message and exit status 2: a person's mistake never ends in a traceback."""
    click.echo(f"smoke: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _inspection_agent(workspace: str, *, quiet: bool = False) -> Any:
    """An agent with no provider, for commands that list what an agent would
    have. ``quiet``: the command prints the settings warnings itself."""
    import logging

    from ..base.errors import ConfigError
    from ..run.factory import create_agent

    logger = logging.getLogger("smoke")
    level = logger.level
    if quiet:
        logger.setLevel(logging.ERROR)
    try:
        return create_agent(workspace, provider=NoProvider(), trust_workspace=None)
    except (ConfigError, ValueError, TypeError, OSError) as exc:
        from .describe import cli_words

        _fail(cli_words(exc))
    finally:
        logger.setLevel(level)


class NoProvider:
    """Stands in for a provider when a command only needs the tool set; a run
    that reaches it (``smoke tools`` lets plugins add their run-start tools,
    then stops) is cancelled, never sent anywhere."""

    name = "none"
    model = "none"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from ..base.errors import AgentError

        raise AgentError.from_code("provider_cancelled", _LISTING_ONLY)
        yield


def plugins_impl(as_json: bool) -> None:
    """List plugins: distribution, version, hooks implemented, load errors."""
    from ..hooks.manager import plugin_report

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
    """List the tools every installed plugin registers, by group; the tools
    plugins add when a run starts (MCP servers) — those a run would start
    without asking; the others are named as not started yet — and whether
    commands run in the OS sandbox."""
    import threading

    from ..policy.sandbox import probe as sandbox

    # the sandbox probe runs bwrap twice: let it wait on its subprocesses while the agent is built
    probe = threading.Thread(target=sandbox.status, name="smoke-sandbox-probe", daemon=True)
    probe.start()
    agent = _inspection_agent(workspace)
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
    probe.join()
    st = sandbox.status()  # the probe's answer, cached
    settings = agent.settings.values.get("sandbox") if agent.settings is not None else None
    mode = getattr(settings, "mode", None) or "auto"
    box = {**st.to_dict(), "mode": mode, "reason": st.reason()}
    if as_json:
        click.echo(json.dumps({"tools": rows, "not_started": not_started, "warnings": warnings, "sandbox": box},
                              indent=2))
        return
    import shutil
    import textwrap

    from ..base.display import visible

    # Plain text, not rich: `smoke tools` is a start-up path (rich costs ~40 ms to import and lay out)
    width = shutil.get_terminal_size((80, 24)).columns
    tty = sys.stdout.isatty()

    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if tty else text

    table = [(f"  {visible(r['name'])}", "yes" if r["read_only"] else "no", visible(r["presentation"].get("label") or ""),
              (r["source"] or "-").split(":", 1)[0], r["group"] or "other") for r in rows]
    name_w = max([len("tool"), *(_cells(t[0]) for t in table)])  # never cut: rules and models use the name
    label_w = max([len("label"), *(_cells(t[2]) for t in table)])
    plugin_w = max([len("plugin"), *(_cells(t[3]) for t in table)])
    room = width - name_w - 3 - 2 * 2 - 1  # the ro column, two-space gaps, no last column
    if label_w + 2 + plugin_w > room:  # wrap the label and plugin columns, never the name
        label_w = max(8, min(label_w, room // 2))
        plugin_w = max(8, room - label_w - 2)
    click.echo(style(f"Smoke tools ({len(rows)})", bold=True))
    click.echo(style(f"{'tool'.ljust(name_w)}  ro   {'label'.ljust(label_w)}  plugin", bold=True))
    group = None
    for name, ro, label, plugin, grp in table:
        if grp != group:
            group = grp
            click.echo(style(grp, fg="cyan", bold=True))
        labels = textwrap.wrap(label, label_w) or [""]
        plugins = textwrap.wrap(plugin, plugin_w, break_on_hyphens=False) or [""]
        for i in range(max(len(labels), len(plugins))):
            first = name.ljust(name_w) + "  " + ro.ljust(3) if i == 0 else " " * (name_w + 5)
            lab = labels[i] if i < len(labels) else ""
            plug = plugins[i] if i < len(plugins) else ""
            click.echo(f"{first}  {lab + ' ' * (label_w - _cells(lab))}  {plug}".rstrip())
    click.echo(style("ro: read-only (runs without asking); the others ask unless a rule allows them", dim=True))
    for item in not_started:
        click.echo(textwrap.fill(f"• {visible(item['what'])}: {visible(item['status'])}", width - 1,
                                 subsequent_indent="  "))
    for warning in warnings:
        click.echo(style(textwrap.fill(f"⚠ {visible(warning)}", width - 1, subsequent_indent="  "), fg="yellow"))
    if st.works:
        where = "run sandboxed" if mode != "off" else "run WITHOUT it (sandbox.mode: off)"
        line = f"sandbox: available ({st.bwrap or 'bwrap'}): commands {where}"
    else:
        consequence = ("commands are refused (sandbox.mode: required)" if mode == "required"
                       else "commands run without it" + (" (one warning per run)" if mode == "auto" else ""))
        line = f"sandbox: not available — {st.reason()}; {consequence}. `smoke doctor` says more."
    click.echo(textwrap.fill(line, width - 1, subsequent_indent="  "))


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes (wide East Asian characters and emoji count two)."""
    import unicodedata

    return sum(0 if unicodedata.combining(ch) or ch == "\ufe0f" else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


async def _tools_at_run_start(agent: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Let the plugins that add tools when a run starts (smoke-mcp's servers)
    add them, in a run whose provider cancels the first model call. Whatever would ask a person first
    (an MCP server not yet approved) is not started: it is returned as not
    started yet."""
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
                if folder == harness and [p.name for p in folder.iterdir()] == [".gitignore"]:
                    (folder / ".gitignore").unlink()  # written when the folder was made for this look
                folder.rmdir()
            except OSError:  # not empty (something else wrote there) or gone
                pass


def trust_impl(path: str, *, revoke: bool, list_: bool) -> None:
    """``smoke trust [PATH]``, ``--revoke``, ``--list``."""
    from ..base.errors import ConfigError
    from ..policy.settings.files import (
        managed_settings_path,
        norm_folder,
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
        folder = norm_folder(path)
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

    from ..base.display import visible

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
    from ..hooks.manager import collect_providers, create_plugin_manager
    from .describe import cli_words

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
        from .describe import cli_words

        text = cli_words(exc)
        return None, "set --base-url" if "--base-url" in text else text
    except Exception as exc:  # a provider plugin's own failure; the list goes on
        return None, f"(cannot tell: {type(exc).__name__})"
    url = getattr(provider, "base_url", None)
    return (str(url) if url else None), None if url else "(no endpoint)"
