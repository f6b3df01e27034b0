"""``smoke mcp list`` and ``smoke mcp tools NAME``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ._config import MCPServerConfig

# asyncio and the config reader are imported inside the commands: this module
# is loaded by `smoke --help`, which must stay fast.


def _workspace_option(fn: Any) -> Any:
    return click.option("--workspace", "-w", default=".", type=click.Path(file_okay=False),
                        help="Workspace folder whose .mcp.json / .smoke/config.yaml are read.")(fn)


def _load(workspace: str) -> tuple[Path, dict[str, MCPServerConfig]]:
    from ._config import load_server_configs

    root = Path(workspace).resolve()
    loaded = load_server_configs(root)
    for problem in loaded.problems:
        click.echo(f"warning: {problem}", err=True)
    return root, loaded.servers


async def _probe(cfg: MCPServerConfig, root: Path, log_dir: Path) -> tuple[list[Any] | None, str | None]:
    from ._connection import MCPServerConnection, MCPServerError
    from ._schema import sanitize_server_name

    conn = MCPServerConnection(cfg, workspace_root=root,
                               stderr_path=log_dir / f"mcp-{sanitize_server_name(cfg.name)}.stderr.log")
    try:
        tools = await conn.start()
    except MCPServerError as exc:
        return None, exc.message
    await conn.close()
    return tools, None


@click.group("mcp")
def mcp_group() -> None:
    """MCP servers: what is configured and what tools they offer."""


@mcp_group.command("list")
@_workspace_option
@click.option("--check", is_flag=True,
              help="Connect to each server from your own configuration and report its status and tool count "
                   "(servers defined by the workspace's files are not started: check one with `smoke mcp tools NAME`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(workspace: str, check: bool, as_json: bool) -> None:
    """List configured MCP servers (name, type, command or URL, where it is configured)."""
    root, servers = _load(workspace)
    rows: list[dict[str, Any]] = [
        {
            "name": cfg.name,
            "type": cfg.transport,
            "target": cfg.describe() if cfg.transport == "stdio" else cfg.url,
            "source": cfg.source,
            "origin": cfg.origin,
            "status": "configured",
        }
        for cfg in servers.values()
    ]
    # A repository's .mcp.json is text from a stranger: --check does not run its commands
    # for it; naming one server (`smoke mcp tools NAME`) is the person's decision to start it.
    probed = [c for c in servers.values() if c.origin != "repository"]
    if check:
        for row in rows:
            if row["origin"] == "repository":
                row["status"] = f"not started (defined by the workspace; check it with `smoke mcp tools {row['name']}`)"
    if check and probed:
        async def check_all() -> list[tuple[list[Any] | None, str | None]]:
            with tempfile.TemporaryDirectory(prefix="smoke-mcp-") as tmp:
                import asyncio

                return await asyncio.gather(*(_probe(c, root, Path(tmp)) for c in probed))

        import asyncio

        by_name = {r["name"]: r for r in rows}
        for cfg, (tools, error) in zip(probed, asyncio.run(check_all()), strict=True):
            by_name[cfg.name]["status"] = f"ok ({len(tools or [])} tools)" if error is None else f"failed: {error}"
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"No MCP servers configured in {root} (.mcp.json, .smoke/config.yaml) "
                   f"or in the user config.")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"MCP servers ({len(rows)})")
    for col in ("server", "type", "command / URL", "configured in", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["type"], r["target"] or "", r["source"], r["status"])
    Console().print(table)


@mcp_group.command("tools")
@click.argument("name")
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def tools_command(name: str, workspace: str, as_json: bool) -> None:
    """Connect to the MCP server NAME and list its tools (as Smoke exposes them)."""
    from ._schema import provider_schema, tool_name_for
    from ._state import annotations_for

    root, servers = _load(workspace)
    cfg = servers.get(name)
    if cfg is None:
        known = ", ".join(servers) or "none"
        raise click.ClickException(f"no MCP server named {name!r} is configured (configured: {known})")

    # say exactly what is started (the person named it; they may not have read the file)
    click.echo(f"starting MCP server {name!r} from {cfg.source}: {cfg.describe()}", err=True)

    async def probe() -> tuple[list[Any] | None, str | None]:
        with tempfile.TemporaryDirectory(prefix="smoke-mcp-") as tmp:
            return await _probe(cfg, root, Path(tmp))

    import asyncio

    tools, error = asyncio.run(probe())
    if error is not None:
        raise click.ClickException(error)
    rows = [
        {
            "name": tool_name_for(name, t.name),
            "mcp_name": t.name,
            "read_only": annotations_for(t)["read_only_hint"],
            "annotations": annotations_for(t),
            "description": (t.description or "").strip(),
            "input_schema": provider_schema(t.input_schema),
        }
        for t in tools or []
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Tools of MCP server {name!r} ({len(rows)})")
    for col in ("tool", "read-only", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        first = r["description"].splitlines()[0] if r["description"] else ""
        table.add_row(r["name"], "yes" if r["read_only"] else "no", first)
    Console().print(table)
