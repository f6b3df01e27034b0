"""``smoke mcp list``, ``smoke mcp tools NAME``, ``smoke mcp resources NAME``,
``smoke mcp read NAME URI``, ``smoke mcp prompts NAME``, ``smoke mcp prompt
NAME PROMPT [ARG=VALUE]...``, ``smoke mcp approve NAME``, ``smoke mcp login
NAME`` and ``smoke mcp logout NAME``."""

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


def _load(workspace: str) -> tuple[Path, dict[str, MCPServerConfig], list[str]]:
    """The workspace root, its servers and the configuration's problems
    (each also printed to stderr as a warning)."""
    from ._config import load_server_configs

    root = Path(workspace).resolve()
    loaded = load_server_configs(root)
    for problem in loaded.problems:
        click.echo(f"warning: {problem}", err=True)
    return root, loaded.servers, loaded.problems


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


async def _with_server(cfg: MCPServerConfig, root: Path, work: Any) -> Any:
    """Start ``cfg``, run ``await work(connection)``, shut the server down.
    Raises ``click.ClickException`` with the reason when it cannot start."""
    from ._connection import MCPServerConnection, MCPServerError
    from ._schema import sanitize_server_name

    with tempfile.TemporaryDirectory(prefix="smoke-mcp-") as tmp:
        conn = MCPServerConnection(cfg, workspace_root=root,
                                   stderr_path=Path(tmp) / f"mcp-{sanitize_server_name(cfg.name)}.stderr.log")
        try:
            await conn.start()
        except MCPServerError as exc:
            raise click.ClickException(exc.message) from None
        try:
            return await work(conn)
        finally:
            await conn.close()


def _named_server(name: str, workspace: str) -> tuple[Path, MCPServerConfig]:
    """The configured server NAME (naming it is the approval to start it)."""
    root, servers, _ = _load(workspace)
    cfg = servers.get(name)
    if cfg is None:
        known = ", ".join(servers) or "none"
        raise click.UsageError(f"no MCP server named {name!r} is configured (configured: {known}); "
                               "`smoke mcp list` shows the servers and the files they come from")
    # say exactly what is started (the person named it; they may not have read the file)
    click.echo(f"starting MCP server {name!r} from {cfg.source}: {cfg.describe()}", err=True)
    return root, cfg


def _print_blocks(blocks: list[dict[str, Any]]) -> None:
    """Server text for a terminal: control characters shown, never obeyed
    (a server's text may hold escape sequences)."""
    from smoke_core.display import visible

    for block in blocks:
        if block["type"] == "text":
            click.echo(visible(block["text"], space_run=0, keep_tabs=True))
        else:
            import base64

            size = len(base64.b64decode(block.get("data") or ""))
            click.echo(f"[image {block.get('mime_type')}, {size} bytes: not shown in a terminal]")


@click.group("mcp")
def mcp_group() -> None:
    """MCP servers: what is configured and what tools, resources and prompts they offer."""


@mcp_group.command("list")
@_workspace_option
@click.option("--check", is_flag=True,
              help="Connect to each server from your own configuration and report its status and tool count "
                   "(servers defined by the workspace's files are not started: check one with `smoke mcp tools NAME`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(workspace: str, check: bool, as_json: bool) -> None:
    """List configured MCP servers (name, type, command or URL, where it is configured).

    Exit status: 1 when the configuration has problems (printed as warnings on
    stderr) or when --check finds a server that failed to start; 0 otherwise.
    The listing is printed in full either way."""
    from ._approvals import approval_state, describe_state
    from ._oauth import TokenStore, auth_state

    root, servers, problems = _load(workspace)
    store = TokenStore()
    rows: list[dict[str, Any]] = [
        {
            "name": cfg.name,
            "type": cfg.transport,
            "target": cfg.describe() if cfg.transport == "stdio" else cfg.url,
            "source": cfg.source,
            "origin": cfg.origin,
            "status": "configured",
            # a workspace's own entry starts only once a person approved this exact content
            "approval": (describe_state(approval_state(root, cfg.name, cfg.digest), cfg.name)
                         if cfg.origin == "repository" and not cfg.trusted
                         else "trusted" if cfg.trusted else "asks once per agent"),
            "auth": auth_state(cfg, store),
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
    _print_listing(rows, root, as_json)
    # after the listing, never instead of it: a script or CI job sees the problem in the exit status
    if problems or any(r["status"].startswith("failed:") for r in rows):
        raise SystemExit(1)


def _print_listing(rows: list[dict[str, Any]], root: Path, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"No MCP servers configured in {root} (.mcp.json, .smoke/config.yaml) "
                   f"or in the user config.")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from smoke_core.display import visible

    table = Table(title=f"MCP servers ({len(rows)})")
    for col in ("server", "type", "command / URL", "configured in", "approval", "login", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        cells = (r["name"], r["type"], r["target"] or "", r["source"], r["approval"], r["auth"], r["status"])
        table.add_row(*(Text(visible(str(c), space_run=0)) for c in cells))
    Console().print(table)


@mcp_group.command("tools")
@click.argument("name")
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def tools_command(name: str, workspace: str, as_json: bool) -> None:
    """Connect to the MCP server NAME and list its tools (as Smoke exposes them)."""
    from ._schema import provider_schema, tool_name_for
    from ._state import annotations_for

    root, cfg = _named_server(name, workspace)

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
    from rich.text import Text

    from smoke_core.display import visible

    table = Table(title=f"Tools of MCP server {name!r} ({len(rows)})")
    for col in ("tool", "read-only", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        first = r["description"].splitlines()[0] if r["description"] else ""
        # Text(): a server's names and descriptions are not rich markup
        table.add_row(*(Text(visible(c, space_run=0)) for c in (r["name"], "yes" if r["read_only"] else "no", first)))
    Console().print(table)


@mcp_group.command("resources")
@click.argument("name")
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a list.")
def resources_command(name: str, workspace: str, as_json: bool) -> None:
    """Connect to the MCP server NAME and list its resources and resource templates."""
    from ._connection import METHOD_NOT_FOUND, MCPServerError, paginate
    from ._resources import listing_text, resource_row, template_row

    root, cfg = _named_server(name, workspace)

    async def work(conn: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if not conn.supports("resources"):
            raise click.ClickException(f"MCP server {name!r} offers no resources")
        try:
            resources = await conn.request("resources/list", lambda s: paginate(s.list_resources, "resources"),
                                           timeout=cfg.timeout)
            try:
                templates = await conn.request(
                    "resources/templates/list",
                    lambda s: paginate(s.list_resource_templates, "resource_templates"), timeout=cfg.timeout)
            except MCPServerError as exc:
                if exc.mcp_code != METHOD_NOT_FOUND:
                    raise
                templates = []
        except MCPServerError as exc:
            raise click.ClickException(exc.message) from None
        return [resource_row(r) for r in resources], [template_row(t) for t in templates]

    import asyncio

    resources, templates = asyncio.run(_with_server(cfg, root, work))
    if as_json:
        click.echo(json.dumps({"resources": resources, "templates": templates}, indent=2))
        return
    from smoke_core.display import visible

    click.echo(visible(listing_text(name, resources, templates), space_run=0))
    click.echo(f"\nRead one: smoke mcp read {name} URI. In a task, mention it as @{name}:URI")


@mcp_group.command("read")
@click.argument("name")
@click.argument("uri")
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the content blocks as JSON.")
def read_command(name: str, uri: str, workspace: str, as_json: bool) -> None:
    """Read the resource URI of the MCP server NAME (text is printed; images and binaries are described)."""
    from ._connection import MCPServerError
    from ._resources import resource_blocks

    root, cfg = _named_server(name, workspace)

    async def work(conn: Any) -> list[dict[str, Any]]:
        try:
            result = await conn.request(f"resources/read {uri}", lambda s: s.read_resource(uri), timeout=cfg.timeout)
        except MCPServerError as exc:
            raise click.ClickException(exc.message) from None
        blocks, _ = resource_blocks(result.contents, server=name)
        return blocks

    import asyncio

    blocks = asyncio.run(_with_server(cfg, root, work))
    if as_json:
        click.echo(json.dumps(blocks, indent=2))
        return
    _print_blocks(blocks)


@mcp_group.command("prompts")
@click.argument("name")
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def prompts_command(name: str, workspace: str, as_json: bool) -> None:
    """Connect to the MCP server NAME and list its prompts (and their chat commands)."""
    from ._prompts import MCPPromptError, _server_prompts

    root, cfg = _named_server(name, workspace)

    async def work(conn: Any) -> list[Any]:
        try:
            return await _server_prompts(conn, name)
        except MCPPromptError as exc:
            raise click.ClickException(exc.message) from None

    import asyncio

    prompts = asyncio.run(_with_server(cfg, root, work))
    rows = [
        {"name": p.name, "command": p.command, "title": p.title, "description": p.description,
         "arguments": [{"name": a.name, "required": a.required, "description": a.description} for a in p.arguments]}
        for p in prompts
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from smoke_core.display import visible

    table = Table(title=f"Prompts of MCP server {name!r} ({len(rows)})")
    for col in ("prompt", "command", "arguments", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        args = ", ".join(a["name"] + ("" if a["required"] else "?") for a in r["arguments"]) or "—"
        cells = (r["name"], r["command"], args, (r["description"] or "").strip().split("\n")[0])
        table.add_row(*(Text(visible(c, space_run=0)) for c in cells))
    Console().print(table)


@mcp_group.command("prompt")
@click.argument("name")
@click.argument("prompt")
@click.argument("arguments", nargs=-1)
@_workspace_option
@click.option("--json", "as_json", is_flag=True, help="Print the messages as JSON.")
def prompt_command(name: str, prompt: str, arguments: tuple[str, ...], workspace: str, as_json: bool) -> None:
    """Fill in the prompt PROMPT of the MCP server NAME with ARG=VALUE arguments and print its messages."""
    from ._connection import MCPServerError
    from ._prompts import MCPPromptError, _server_prompts, check_arguments, prompt_messages

    values: dict[str, str] = {}
    for item in arguments:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: give arguments as NAME=VALUE", param_hint="ARGUMENTS")
        values[key] = value
    root, cfg = _named_server(name, workspace)

    async def work(conn: Any) -> list[dict[str, Any]]:
        try:
            prompts = {p.name: p for p in await _server_prompts(conn, name)}
            info = prompts.get(prompt)
            if info is None:
                raise MCPPromptError(f"MCP server {name!r} has no prompt {prompt!r} (its prompts: "
                                     f"{', '.join(sorted(prompts)) or 'none'})")
            checked = check_arguments(info, values)
            result = await conn.request(f"prompts/get {prompt}", lambda s: s.get_prompt(prompt, checked or None),
                                        timeout=cfg.timeout)
        except (MCPPromptError, MCPServerError) as exc:
            raise click.ClickException(exc.message) from None
        return prompt_messages(result, server=name)

    import asyncio

    messages = asyncio.run(_with_server(cfg, root, work))
    if as_json:
        click.echo(json.dumps(messages, indent=2))
        return
    for message in messages:
        click.echo(f"--- {message['role']}")
        _print_blocks(message["content"])


@mcp_group.command("approve")
@click.argument("name")
@_workspace_option
def approve_command(name: str, workspace: str) -> None:
    """Approve the workspace's own MCP server NAME (from .mcp.json or .smoke/config*.yaml)
    as it is written now: it then starts without asking, until its entry changes."""
    from ._approvals import approval_state, approve

    root, servers, _ = _load(workspace)
    cfg = servers.get(name)
    if cfg is None:
        known = ", ".join(servers) or "none"
        raise click.UsageError(f"no MCP server named {name!r} is configured (configured: {known})")
    if cfg.origin != "repository":
        click.echo(f"MCP server {name!r} comes from {cfg.source}, not from the workspace: it needs no approval "
                   f"here (it asks once per agent unless it is marked trusted)")
        return
    from smoke_core.display import visible

    click.echo(f"MCP server {name!r} from {cfg.source}:")
    target = cfg.target()
    for key, value in target.items():
        click.echo(f"  {key}: {visible(json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value)}")
    if approval_state(root, name, cfg.digest) == "approved":
        click.echo("already approved as it is written now")
        return
    approve(root, name, cfg.digest, what=cfg.describe())
    click.echo(f"approved: {name!r} starts without asking in {root} until its entry changes")


def _login_store_and_key(name: str, workspace: str) -> tuple[Path, MCPServerConfig, Any]:
    from ._oauth import TokenStore

    root, servers, _ = _load(workspace)
    cfg = servers.get(name)
    if cfg is None:
        known = ", ".join(servers) or "none"
        raise click.UsageError(f"no MCP server named {name!r} is configured (configured: {known})")
    if cfg.transport == "stdio":
        raise click.UsageError(f"MCP server {name!r} is a local command (stdio): it takes its credentials from "
                               f"'env' in {cfg.source}, there is nothing to log in to")
    if cfg.oauth is None or not cfg.oauth.enabled:
        raise click.UsageError(f"MCP server {name!r} does not log in with OAuth ('oauth: false', or its own "
                               f"Authorization header in {cfg.source})")
    return root, cfg, TokenStore()


@mcp_group.command("login")
@click.argument("name")
@_workspace_option
def login_command(name: str, workspace: str) -> None:
    """Log in to the HTTP MCP server NAME with OAuth: your browser opens (the address
    is printed too) and Smoke waits for it on 127.0.0.1. The tokens are kept in the
    system keyring, or a file only you can read in your state folder."""
    from ._connection import MCPServerConnection, MCPServerError
    from ._interact import LoginHost
    from ._oauth import record_key
    from ._schema import sanitize_server_name

    root, cfg, store = _login_store_and_key(name, workspace)
    record = store.get(record_key(cfg)) or {}
    if record.pop("tokens", None) is not None:  # a fresh login; the client registration is kept
        record.pop("expires_at", None)
        store.put(record_key(cfg), record)
    click.echo(f"logging in to MCP server {name!r} ({cfg.url}) from {cfg.source}", err=True)
    host = LoginHost(root, lambda text: click.echo(text, err=True))

    async def go() -> str | None:
        with tempfile.TemporaryDirectory(prefix="smoke-mcp-") as tmp:
            conn = MCPServerConnection(cfg, workspace_root=root, host=host,
                                       stderr_path=Path(tmp) / f"mcp-{sanitize_server_name(name)}.stderr.log")
            try:
                await conn.start()
            except MCPServerError as exc:
                return exc.message
            await conn.close()
            return None

    import asyncio

    error = asyncio.run(go())
    if error is not None:
        raise click.ClickException(error)
    if (store.get(record_key(cfg)) or {}).get("tokens"):
        click.echo(f"logged in to {name!r}; the tokens are kept in {store.location()}")
    else:
        click.echo(f"MCP server {name!r} answered without asking for a login: nothing to store")


@mcp_group.command("logout")
@click.argument("name")
@_workspace_option
def logout_command(name: str, workspace: str) -> None:
    """Forget the login to the MCP server NAME (its tokens and client registration)."""
    from ._oauth import record_key

    _, cfg, store = _login_store_and_key(name, workspace)
    if store.delete(record_key(cfg)):
        click.echo(f"logged out of {name!r}: its tokens were removed from {store.location()}")
    else:
        click.echo(f"not logged in to {name!r}: nothing stored in {store.location()}")
