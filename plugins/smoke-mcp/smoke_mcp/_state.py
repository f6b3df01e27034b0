"""Per-agent MCP state: live connections, approvals, registered tools; and
the work done in ``before_run`` (approve → start → register tools →
resolve ``@server:uri`` mentions in the task)."""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._config import MCPServerConfig, load_server_configs, user_config_path
from ._connection import MCPServerConnection, MCPServerError
from ._schema import (
    mcp_tool_class,
    sanitize_server_name,
    schema_for_provider,
    tool_name_for,
    unique_name,
)

if TYPE_CHECKING:
    from smoke_core.plugin import Agent, RunHandle, ToolContext, ToolDefinition


SOURCE_PREFIX = "smoke-mcp:"
#: source of the tools smoke-mcp itself provides (list_mcp_resources, read_mcp_resource)
SOURCE = "smoke-mcp"
ICON = "🔌"
RESOURCE_TOOLS = ("list_mcp_resources", "read_mcp_resource")
_MAX_DESCRIPTION = 2000

_states: weakref.WeakKeyDictionary[Any, MCPAgentState] = weakref.WeakKeyDictionary()


def mcp_state(agent: Agent, *, create: bool = False) -> MCPAgentState | None:
    """The :class:`MCPAgentState` of ``agent`` (None if it never started a server)."""
    state = _states.get(agent)
    if state is None and create:
        state = _states[agent] = MCPAgentState()
    return state


def pop_state(agent: Agent) -> MCPAgentState | None:
    return _states.pop(agent, None)


def workspace_trusted(options: Any) -> bool:
    """``options.workspace_trusted`` (core's AgentOptions); trusted when absent, as in core."""
    value = getattr(options, "workspace_trusted", None)
    return True if value is None else bool(value)


def answers_without_asking(options: Any) -> bool:
    """True when the permission gate would allow a server start without a
    person: ``auto_approve`` (True, or any list of rules) or ``permission="allow-all"``.
    A permission callable is the programmer's own decision and is asked."""
    return bool(getattr(options, "auto_approve", False)) or getattr(options, "permission", None) == "allow-all"


def annotations_for(tool: Any) -> dict[str, Any]:
    """An MCP tool's annotations as Smoke's :class:`ToolAnnotations` fields.

    MCP's hints are the server's own claims, with documented defaults for a
    tool that says nothing: not read-only, destructive, not idempotent,
    open-world. A read-only tool is ``kind: "read"``; any other is
    ``"other"`` (nothing better can be inferred, and never from its name).
    """
    ann = getattr(tool, "annotations", None)
    read_only = getattr(ann, "read_only_hint", None) is True
    destructive = getattr(ann, "destructive_hint", None)
    idempotent = getattr(ann, "idempotent_hint", None)
    open_world = getattr(ann, "open_world_hint", None)
    return {
        "title": getattr(tool, "title", None) or getattr(ann, "title", None),
        "read_only_hint": read_only,
        # destructiveHint and idempotentHint mean something only for tools that change things
        "destructive_hint": False if read_only else (True if destructive is None else bool(destructive)),
        "idempotent_hint": False if idempotent is None else bool(idempotent),
        "open_world_hint": True if open_world is None else bool(open_world),
        "kind": "read" if read_only else "other",
    }


class MCPAgentState:
    """What smoke-mcp holds for one agent.

    ``connections``: server name → :class:`MCPServerConnection` (kept across
    runs and reused); ``approved``: server name → the command/URL a person
    allowed to start (asked once per agent, again if it changes); ``configs``: the configuration each server was started
    with; ``tool_names``: server name → the Smoke tool names registered for it.
    """

    def __init__(self) -> None:
        self.connections: dict[str, MCPServerConnection] = {}
        self.approved: dict[str, dict[str, Any]] = {}
        self.configs: dict[str, MCPServerConfig] = {}
        self.tool_names: dict[str, list[str]] = {}
        #: the servers the latest run exposed (approved and connected); the resource
        #: tools reach only these
        self.active: set[str] = set()
        #: the servers the latest run did not start: name → (why, error code)
        self.not_started: dict[str, tuple[str, str]] = {}
        #: the prompts of the running servers, listed after each run starts them
        #: (what a chat offers as /mcp__server__prompt; see register_slash_commands)
        self.prompts: list[Any] = []
        self._locks: dict[str, asyncio.Lock] = {}
        self.closed = False
        #: the top-level run in progress (servers' own requests are answered through it)
        self.current_run: Any = None
        #: the roots the servers see (None: the workspace); see smoke_mcp.set_roots
        self.roots: list[Path] | None = None
        self._host: Any = None

    def host(self, workspace_root: Path) -> Any:
        """The :class:`~smoke_mcp._interact.AgentHost` every connection of this agent answers through."""
        if self._host is None:
            from ._interact import AgentHost

            self._host = AgentHost(self, workspace_root)
        return self._host

    # ------------------------------------------------------------ before_run

    async def prepare_run(self, run: RunHandle) -> None:
        """Approve, start and expose the configured servers for a top-level
        run, then attach the resources its task mentions."""
        from smoke_core.plugin import AgentErrorInfo

        from ._resources import limits_from_options

        self.current_run = run
        trusted_workspace = workspace_trusted(run.options)
        loaded = load_server_configs(run.workspace.root, run.options.get("mcp_servers"),
                                     workspace_trusted=trusted_workspace)
        limits, limit_problems = limits_from_options(run.options)
        for problem in [*loaded.problems, *limit_problems]:
            run.warn(AgentErrorInfo.from_code("tool_failed", problem, severity="warning",
                                              details={"plugin": "smoke-mcp", "kind": "mcp_config"}))
        self.active = set()
        self.not_started = not_started = {}
        to_start: list[MCPServerConfig] = []
        for name, cfg in loaded.servers.items():
            conn = self.connections.get(name)
            if conn is not None and conn.usable() and self.configs.get(name) == cfg:
                changed = conn.tools_changed
                if changed:
                    await self._refresh_tools(run, name, conn)
                self._expose(run, name, conn, reused=True, tools_changed=changed)
                continue
            if conn is not None:  # dead, from another event loop, or reconfigured
                await conn.close()
                self.connections.pop(name, None)
            if cfg.origin == "repository" and not cfg.trusted:
                refused = await self._approve_entry(run, cfg, trusted_workspace)
                if refused is not None:
                    self._unregister(run.agent, name)
                    not_started[name] = (refused, "permission_denied")
                    continue
            elif not cfg.trusted and self.approved.get(name) != cfg.target():
                untrusted_repository = cfg.origin == "repository" and not trusted_workspace
                if untrusted_repository and answers_without_asking(run.options):
                    self._unregister(run.agent, name)
                    not_started[name] = ("it is defined by a workspace you have not trusted and approval was automatic",
                                         "permission_denied")
                    run.warn(AgentErrorInfo.from_code(
                        "permission_denied",
                        f"MCP server {name!r} ({cfg.describe()}) from {cfg.source} was not started: the "
                        f"workspace is not trusted, and automatic approval (auto_approve / permission="
                        f"allow-all / --yes) never starts a repository's own servers. Approve it when asked "
                        f"(run without --yes), trust the folder (smoke trust), or define the server in "
                        f"{user_config_path()}",
                        severity="warning", details={"server": name, "plugin": "smoke-mcp",
                                                     "source": cfg.source},
                    ))
                    continue
                reason = f"start MCP server {name!r}: {cfg.describe()}"
                if untrusted_repository:
                    reason += f" (defined in {cfg.source}, in a workspace you have not trusted)"
                allowed = await run.request_permission(
                    kind="mcp_server",
                    name=name,
                    input=cfg.target(),
                    reason=reason,
                    scope=f"mcp:{sanitize_server_name(name)}",
                )
                if not allowed:
                    self._unregister(run.agent, name)
                    not_started[name] = ("permission to start it was denied", "permission_denied")
                    run.warn(AgentErrorInfo.from_code(
                        "permission_denied",
                        f"MCP server {name!r} ({cfg.describe()}) was not started: permission denied. "
                        f"Its tools are not available in this run",
                        severity="warning", details={"server": name, "plugin": "smoke-mcp"},
                    ))
                    continue
                self.approved[name] = cfg.target()
            to_start.append(cfg)

        # servers configured before but not any more: stop them and hide their tools
        for name in [n for n in self.connections if n not in loaded.servers]:
            await self.connections.pop(name).close()
            self._unregister(run.agent, name)

        outcomes = await asyncio.gather(*(self._start(run, cfg) for cfg in to_start), return_exceptions=True)
        for cfg, outcome in zip(to_start, outcomes, strict=True):
            if isinstance(outcome, MCPServerConnection):
                self._expose(run, cfg.name, outcome, reused=False)
                continue
            self._unregister(run.agent, cfg.name)
            not_started[cfg.name] = ("it could not be started; see the warning about it", "tool_failed")
            if isinstance(outcome, MCPServerError):
                info = AgentErrorInfo.from_code(
                    outcome.code, f"{outcome.message}. Its tools are not available in this run",  # type: ignore[arg-type]
                    severity="warning",
                    details={"server": cfg.name, "plugin": "smoke-mcp", "stderr_tail": outcome.stderr_tail,
                             "stderr_log": str(self._stderr_path(run.artifacts_dir, cfg.name))
                             if cfg.transport == "stdio" else None},
                )
            elif isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancellation: the run is being aborted
            else:
                info = AgentErrorInfo.from_code(
                    "tool_failed", f"MCP server {cfg.name!r} could not be started: {outcome!r}",
                    severity="warning", details={"server": cfg.name, "plugin": "smoke-mcp"},
                )
            run.warn(info)

        self._register_resource_tools(run)
        from ._mentions import attach_mentions

        await attach_mentions(self, run, loaded.servers, not_started, limits)

    async def _approve_entry(self, run: RunHandle, cfg: MCPServerConfig, trusted_workspace: bool) -> str | None:
        """A workspace's own server starts only when a person approved this
        exact entry (remembered by content, see :mod:`smoke_mcp._approvals`);
        ``--yes``, ``allow-all`` and folder trust never approve one. None
        when it may start, else why not."""
        from smoke_core.plugin import AgentErrorInfo

        from ._approvals import approval_state, approve

        root = run.workspace.root
        name = cfg.name
        state = approval_state(root, name, cfg.digest)
        if state == "approved":
            return None
        why = "it is new" if state == "new" else "it changed since you approved it"
        hint = (f"Approve it when asked (at a terminal, in the web UI or your editor), or with `smoke mcp approve "
                f"{name}` after reading it in {cfg.source}")
        if not trusted_workspace and answers_without_asking(run.options):
            run.warn(AgentErrorInfo.from_code(
                "permission_denied",
                f"MCP server {name!r} ({cfg.describe()}) from {cfg.source} was not started: the workspace is not "
                f"trusted, and automatic approval (auto_approve / permission=allow-all / --yes) never starts a "
                f"repository's own servers. {hint}, trust the folder (smoke trust), or define the server in "
                f"{user_config_path()}",
                severity="warning", details={"server": name, "plugin": "smoke-mcp", "source": cfg.source},
            ))
            return "it is defined by a workspace you have not trusted and approval was automatic"
        reason = (f"start MCP server {name!r}: {cfg.describe()} — defined in {cfg.source}, and {why}; only a "
                  f"person approves a workspace's own server (the approval is remembered for this exact entry)")
        if not trusted_workspace:
            reason += ", in a workspace you have not trusted"
        allowed = await run.request_permission(
            kind="mcp_server", name=name, input={**cfg.target(), "source": cfg.source}, reason=reason,
            scope=f"mcp:{sanitize_server_name(name)}", person=True,
        )
        if not allowed:
            run.warn(AgentErrorInfo.from_code(
                "permission_denied",
                f"MCP server {name!r} ({cfg.describe()}) from {cfg.source} was not started: {why}, and no person "
                f"approved it. {hint}. Its tools are not available in this run",
                severity="warning", details={"server": name, "plugin": "smoke-mcp", "source": cfg.source},
            ))
            return f"{why}, and no person approved it (smoke mcp approve {name})"
        approve(root, name, cfg.digest, what=cfg.describe())
        return None

    async def _refresh_tools(self, run: RunHandle, name: str, conn: MCPServerConnection) -> None:
        """The server said its tools changed (``tools/list_changed``) since the
        last run: list them again now, before this run's tool list is fixed."""
        from smoke_core.plugin import AgentErrorInfo

        try:
            await conn.refresh_tools(timeout=conn.config.timeout)
        except MCPServerError as exc:
            run.warn(AgentErrorInfo.from_code(
                "tool_failed",
                f"MCP server {name!r} said its tools changed, but listing them again failed: {exc.message}. "
                f"This run keeps the tools listed before",
                severity="warning", details={"server": name, "plugin": "smoke-mcp"},
            ))

    def resource_servers(self) -> list[str]:
        """The servers of the latest run that are connected and offer resources."""
        return [n for n in sorted(self.active)
                if n in self.connections and self.connections[n].supports("resources")]

    def _register_resource_tools(self, run: RunHandle) -> None:
        """``list_mcp_resources`` / ``read_mcp_resource`` when a server offers resources."""
        from ._tools import resource_tool_definitions

        registry = run.agent.registry
        for tool_name in RESOURCE_TOOLS:
            if registry.source(tool_name) == SOURCE:
                registry.unregister(tool_name)
        if not self.resource_servers():
            return
        for definition in resource_tool_definitions(self):
            if definition.name in registry:
                from smoke_core.plugin import AgentErrorInfo

                run.warn(AgentErrorInfo.from_code(
                    "tool_failed",
                    f"smoke-mcp did not add its tool {definition.name!r}: a tool of that name is already "
                    f"registered ({registry.source(definition.name)})",
                    severity="warning", details={"plugin": "smoke-mcp", "tool": definition.name},
                ))
                continue
            run.register_tool(definition, group="mcp", source=SOURCE)

    @staticmethod
    def _stderr_path(folder: Path, name: str) -> Path:
        return folder / f"mcp-{sanitize_server_name(name)}.stderr.log"

    async def _start(self, run: RunHandle, cfg: MCPServerConfig) -> MCPServerConnection:
        conn = MCPServerConnection(cfg, workspace_root=run.workspace.root,
                                   stderr_path=self._stderr_path(run.artifacts_dir, cfg.name),
                                   sandbox=run.options.sandbox, host=self.host(run.workspace.root))
        await conn.start()
        self.connections[cfg.name] = conn
        self.configs[cfg.name] = cfg
        return conn

    def _expose(self, run: RunHandle, name: str, conn: MCPServerConnection, *, reused: bool,
                tools_changed: bool = False) -> None:
        """(Re)register the server's tools on the agent so this run exposes them."""
        from smoke_core.plugin import AgentErrorInfo

        self._unregister(run.agent, name)
        taken = set(run.agent.registry.names())
        names: list[str] = []
        for tool in conn.tools:
            base = tool_name_for(name, tool.name)
            exposed = unique_name(base, taken)
            if exposed != base:
                run.warn(AgentErrorInfo.from_code(
                    "tool_failed",
                    f"MCP tool {tool.name!r} of server {name!r} is exposed as {exposed!r} because {base!r} "
                    f"is already taken",
                    severity="warning", details={"server": name, "plugin": "smoke-mcp", "tool": tool.name},
                ))
            definition = self.tool_definition(name, tool, exposed, provider=run.agent.provider)
            run.register_tool(definition, group="mcp", source=SOURCE_PREFIX + name)
            taken.add(exposed)
            names.append(exposed)
        self.tool_names[name] = names
        self.active.add(name)
        run.emit("mcp.server.started", {
            "server": name, "transport": conn.config.transport, "target": conn.config.target(),
            "tools": names, "reused": reused, "tools_changed": tools_changed,
        })

    def _unregister(self, agent: Agent, name: str) -> None:
        registry = agent.registry
        for tool_name in self.tool_names.pop(name, []):
            if registry.source(tool_name) == SOURCE_PREFIX + name:
                registry.unregister(tool_name)

    # ------------------------------------------------------------ tools

    def tool_definition(self, server: str, tool: Any, exposed_name: str, *, provider: Any = None) -> ToolDefinition:
        from smoke_core.plugin import ToolAnnotations, ToolPresentation

        hints = annotations_for(tool)
        title = hints["title"]
        description = (getattr(tool, "description", None) or title or tool.name).strip()
        if len(description) > _MAX_DESCRIPTION:
            description = description[: _MAX_DESCRIPTION - 1] + "…"
        state = self
        mcp_name = tool.name

        async def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
            return await state.call(server, mcp_name, input, ctx)

        definition: ToolDefinition = mcp_tool_class()(
            name=exposed_name,
            description=f"[{server}] {description}",
            input_schema=schema_for_provider(getattr(tool, "input_schema", None), provider),
            annotations=ToolAnnotations(**hints),
            presentation=ToolPresentation(label=title or f"{server}: {mcp_name}", icon=ICON, tone="info",
                                          group="mcp"),
            execute=execute,
            group="mcp",
        )
        return definition

    async def connection(self, server: str, ctx: ToolContext) -> MCPServerConnection:
        """The live connection to ``server`` for a tool call (restarting a dead
        server that was approved before). Raises ``ToolError``."""
        from smoke_core.plugin import ToolError

        cfg = self.configs.get(server)
        if self.closed:
            raise ToolError(f"MCP server {server!r} was shut down: the agent was closed (agent.aclose())")
        if cfg is None:
            raise ToolError(f"MCP server {server!r} is not configured for this agent any more")
        conn = self.connections.get(server)
        if conn is None or not conn.usable():
            conn = await self._reconnect(server, cfg, ctx)
        return conn

    async def call(self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Run one MCP tool call for a Smoke tool (reconnecting a dead server first)."""
        from smoke_core.plugin import ToolError

        from ._results import to_tool_result

        conn = await self.connection(server, ctx)
        cfg = conn.config

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            ctx.emit_progress(message, progress=progress, total=total)

        try:
            result = await conn.call_tool(tool, arguments, timeout=cfg.timeout, on_progress=on_progress)
        except MCPServerError as exc:
            raise ToolError(exc.message, code=exc.code,  # type: ignore[arg-type]
                            details={"server": server, "mcp_tool": tool, "stderr_tail": exc.stderr_tail,
                                     "connection_lost": exc.connection_lost}) from None
        return to_tool_result(result, server=server, tool=tool)

    def lock(self, server: str) -> asyncio.Lock:
        """The lock held while (re)starting ``server``."""
        return self._locks.setdefault(server, asyncio.Lock())

    async def _reconnect(self, server: str, cfg: MCPServerConfig, ctx: ToolContext) -> MCPServerConnection:
        from smoke_core.plugin import ToolError

        async with self.lock(server):
            conn = self.connections.get(server)
            if conn is not None and conn.usable():
                return conn
            if conn is not None:
                await conn.close()
            ctx.emit_progress(f"restarting MCP server {server!r}")
            new = MCPServerConnection(cfg, workspace_root=ctx.workspace.root,
                                      stderr_path=self._stderr_path(ctx.artifacts_dir, server),
                                      sandbox=getattr(ctx.options, "sandbox", None),
                                      host=self.host(ctx.workspace.root))
            try:
                await new.start()
            except MCPServerError as exc:
                self.connections.pop(server, None)
                raise ToolError(f"could not restart the server: {exc.message}", code=exc.code,  # type: ignore[arg-type]
                                details={"server": server, "stderr_tail": exc.stderr_tail}) from None
            self.connections[server] = new
            return new

    async def aclose(self) -> None:
        self.closed = True
        conns = list(self.connections.values())
        self.connections.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
