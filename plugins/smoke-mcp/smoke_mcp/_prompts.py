"""MCP prompts: templates a server offers for a person to pick (in a chat,
as ``/mcp__<server>__<prompt>``). :func:`list_mcp_prompts` lists them,
:func:`get_mcp_prompt` fills one in with its arguments (checked here first,
with errors that name what is wrong) and returns its messages.

Only the programmer's code calls these (a chat front end on behalf of the
person typing the command); the model has no tool for prompts. They use the
servers the agent already runs, and start one only when it would start
without asking in a run: trusted (code or the user config) or already
approved for this agent. Any other server needs a run first, whose start
asks the person as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._connection import MCPServerConnection, MCPServerError, paginate
from ._results import _field
from ._schema import sanitize_server_name

if TYPE_CHECKING:
    from smoke_core.plugin import Agent

    from ._state import MCPAgentState


class MCPPromptError(Exception):
    """A prompt could not be listed or filled in: an unknown server or prompt,
    arguments that do not fit, a server that is not approved yet or failed.
    ``str(error)`` says what happened and what to do."""

    def __init__(self, message: str, *, server: str | None = None, prompt: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.server = server
        self.prompt = prompt


@dataclass(frozen=True, slots=True)
class MCPPromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class MCPPromptInfo:
    """One prompt a server offers. ``command`` is the chat command for it,
    ``/mcp__<server>__<prompt>`` (characters outside ``[A-Za-z0-9_-]`` become ``_``)."""

    server: str
    name: str
    title: str | None
    description: str | None
    arguments: tuple[MCPPromptArgument, ...] = ()

    @property
    def command(self) -> str:
        return slash_command(self.server, self.name)


@dataclass(slots=True)
class MCPPromptList:
    """:func:`list_mcp_prompts`' answer: the prompts, and each server that
    was not asked, with the reason (not approved yet, failed, no prompts...)."""

    prompts: list[MCPPromptInfo] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class MCPPrompt:
    """A filled-in prompt: ``messages`` as ``{"role": "user" | "assistant",
    "content": [blocks]}`` (text and image blocks, embedded resources as
    text, binaries described). The text is the server's, not the person's."""

    server: str
    name: str
    description: str | None
    messages: list[dict[str, Any]]

    def to_task(self) -> list[Any]:
        """The messages as a task for ``agent.run(...)``: text parts and
        :class:`smoke_core.Image` parts; an assistant message's text is marked
        ``[assistant]`` (a task is one user message)."""
        from smoke_core.plugin import Image

        parts: list[Any] = []
        for message in self.messages:
            prefix = "[assistant] " if message["role"] == "assistant" else ""
            for block in message["content"]:
                if block["type"] == "image":
                    parts.append(Image(mime_type=block.get("mime_type"), data=block.get("data")))
                elif block.get("text"):
                    parts.append(prefix + block["text"])
        return parts


def slash_command(server: str, prompt: str) -> str:
    """``/mcp__<server>__<prompt>``, as a chat offers a server's prompt."""
    from ._schema import _BAD_CHARS

    return f"/mcp__{sanitize_server_name(server)}__{_BAD_CHARS.sub('_', prompt) or 'prompt'}"


def prompt_info(server: str, prompt: Any) -> MCPPromptInfo:
    args = tuple(
        MCPPromptArgument(name=str(_field(a, "name")), description=_field(a, "description"),
                          required=bool(_field(a, "required")))
        for a in (_field(prompt, "arguments") or [])
    )
    return MCPPromptInfo(server=server, name=str(_field(prompt, "name")), title=_field(prompt, "title"),
                         description=_field(prompt, "description"), arguments=args)


def check_arguments(info: MCPPromptInfo, arguments: Any) -> dict[str, str]:
    """The arguments as MCP sends them (text values), or ``MCPPromptError``
    naming the unknown, missing or non-text ones and listing what the prompt takes."""
    def takes() -> str:
        if not info.arguments:
            return "it takes no arguments"
        return "it takes " + ", ".join(
            f"{a.name} ({'required' if a.required else 'optional'}" + (f": {a.description}" if a.description else "")
            + ")" for a in info.arguments)

    where = f"prompt {info.name!r} of MCP server {info.server!r}"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPPromptError(f"arguments for the {where} must be a mapping of names to text, got "
                             f"{type(arguments).__name__}; {takes()}", server=info.server, prompt=info.name)
    known = {a.name for a in info.arguments}
    unknown = sorted(str(k) for k in arguments if k not in known)
    if unknown:
        raise MCPPromptError(f"the {where} has no argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                             f"{takes()}", server=info.server, prompt=info.name)
    bad = sorted(k for k, v in arguments.items() if not isinstance(v, str))
    if bad:
        raise MCPPromptError(f"MCP prompt arguments are text: {', '.join(f'{k}={arguments[k]!r}' for k in bad)} "
                             f"for the {where} must be strings", server=info.server, prompt=info.name)
    missing = [a.name for a in info.arguments if a.required and not (arguments.get(a.name) or "").strip()]
    if missing:
        raise MCPPromptError(f"the {where} needs {', '.join(missing)}; {takes()}", server=info.server,
                             prompt=info.name)
    return dict(arguments)


def prompt_messages(result: Any, *, server: str) -> list[dict[str, Any]]:
    """``GetPromptResult.messages`` → ``[{"role", "content": [blocks]}]``."""
    from ._results import content_blocks

    out = []
    for message in _field(result, "messages") or []:
        role = _field(message, "role")
        content = _field(message, "content")
        blocks = content_blocks(content if isinstance(content, list) else [content])
        out.append({"role": "assistant" if role == "assistant" else "user", "content": blocks})
    return out


# ---------------------------------------------------------------- connections outside a run


def _configs(agent: Agent) -> dict[str, Any]:
    from ._config import load_server_configs
    from ._state import workspace_trusted

    loaded = load_server_configs(agent.workspace.root, agent.options.get("mcp_servers"),
                                 workspace_trusted=workspace_trusted(agent.options))
    return loaded.servers


async def _connection(agent: Agent, state: MCPAgentState, server: str,
                      configs: dict[str, Any]) -> MCPServerConnection:
    """A live connection to ``server`` for the API, started only when it
    would start without asking in a run."""
    if state.closed:
        raise MCPPromptError("the agent was closed (agent.aclose()); its MCP servers are shut down", server=server)
    cfg = configs.get(server)
    if cfg is None:
        configured = ", ".join(sorted(configs)) or "none"
        raise MCPPromptError(f"no MCP server named {server!r} is configured (configured: {configured})",
                             server=server)
    conn = state.connections.get(server)
    if conn is not None and conn.usable() and state.configs.get(server) == cfg:
        return conn
    from ._approvals import approval_state

    approved_entry = cfg.origin == "repository" and approval_state(
        Path(agent.workspace.root), server, cfg.digest) == "approved"
    if not cfg.trusted and not approved_entry and state.approved.get(server) != cfg.target():
        raise MCPPromptError(
            f"MCP server {server!r} ({cfg.describe()}) is not approved for this agent yet: servers start when a "
            f"run starts, after asking you. Run a task first, or mark the server trusted in your own "
            f"configuration (create_agent(mcp_servers=...) or the user config)", server=server)
    lock = state.lock(server)
    async with lock:
        conn = state.connections.get(server)
        if conn is not None and conn.usable() and state.configs.get(server) == cfg:
            return conn
        if conn is not None:
            await conn.close()
        log = Path(agent.workspace.root) / ".smoke" / "runs" / "mcp" / f"mcp-{sanitize_server_name(server)}.stderr.log"
        new = MCPServerConnection(cfg, workspace_root=Path(agent.workspace.root), stderr_path=log,
                                  sandbox=agent.options.sandbox, host=state.host(Path(agent.workspace.root)))
        try:
            await new.start()
        except MCPServerError as exc:
            state.connections.pop(server, None)
            raise MCPPromptError(exc.message, server=server) from None
        state.connections[server] = new
        state.configs[server] = cfg
        return new


async def _server_prompts(conn: MCPServerConnection, server: str) -> list[MCPPromptInfo]:
    if not conn.supports("prompts"):
        raise MCPPromptError(f"MCP server {server!r} offers no prompts", server=server)
    try:
        prompts = await conn.request("prompts/list", lambda s: paginate(s.list_prompts, "prompts"),
                                     timeout=conn.config.timeout)
    except MCPServerError as exc:
        raise MCPPromptError(exc.message, server=server) from None
    return [prompt_info(server, p) for p in prompts]


async def list_mcp_prompts(agent: Agent, server: str | None = None) -> MCPPromptList:
    """The prompts of the agent's MCP servers (or of ``server``), for a chat
    to offer as ``/mcp__<server>__<prompt>``. A server that would need a
    person's approval to start, or that fails, is in ``unavailable`` with
    the reason (never started from here)."""
    from ._state import mcp_state

    state = mcp_state(agent, create=True)
    assert state is not None
    configs = _configs(agent)
    names = [server] if server is not None else sorted(configs)
    out = MCPPromptList()
    for name in names:
        try:
            conn = await _connection(agent, state, name, configs)
            out.prompts.extend(await _server_prompts(conn, name))
        except MCPPromptError as exc:
            if server is not None:
                raise
            out.unavailable[name] = exc.message
    return out


async def get_mcp_prompt(agent: Agent, server: str, prompt: str,
                         arguments: dict[str, str] | None = None) -> MCPPrompt:
    """Fill in the prompt ``prompt`` of the MCP server ``server`` with
    ``arguments`` (text values) and return its messages.

    Raises :class:`MCPPromptError` (its message says what to do) for an
    unknown server or prompt, arguments the prompt does not take, a missing
    required argument, a server not approved for this agent yet, or an
    error from the server."""
    from ._state import mcp_state

    state = mcp_state(agent, create=True)
    assert state is not None
    configs = _configs(agent)
    conn = await _connection(agent, state, server, configs)
    prompts = {p.name: p for p in await _server_prompts(conn, server)}
    info = prompts.get(prompt)
    if info is None:
        raise MCPPromptError(f"MCP server {server!r} has no prompt {prompt!r} (its prompts: "
                             f"{', '.join(sorted(prompts)) or 'none'})", server=server, prompt=prompt)
    values = check_arguments(info, arguments)
    try:
        result = await conn.request(f"prompts/get {prompt}", lambda s: s.get_prompt(prompt, values or None),
                                    timeout=conn.config.timeout)
    except MCPServerError as exc:
        raise MCPPromptError(exc.message, server=server, prompt=prompt) from None
    return MCPPrompt(server=server, name=prompt, description=_field(result, "description") or info.description,
                     messages=prompt_messages(result, server=server))


async def running_prompts(state: Any) -> list[MCPPromptInfo]:
    """The prompts of the servers ``state`` has running (nothing is started
    or asked here); a server that fails to list them is left out."""
    out: list[MCPPromptInfo] = []
    for name, conn in sorted(state.connections.items()):
        if not conn.alive or not conn.supports("prompts"):
            continue
        try:
            out.extend(await _server_prompts(conn, name))
        except MCPPromptError:
            continue
    return out


def parse_slash_arguments(info: MCPPromptInfo, text: str) -> dict[str, str]:
    """``key=value`` pairs (values may be quoted), or the whole text for a
    prompt with exactly one argument."""
    import shlex

    text = text.strip()
    if not text:
        return {}
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise MCPPromptError(f"cannot read the arguments ({exc}); write key=value pairs, quoting values with spaces",
                             server=info.server, prompt=info.name) from None
    if all("=" in w for w in words):
        return dict(w.split("=", 1) for w in words)
    if len(info.arguments) == 1:
        return {info.arguments[0].name: text}
    names = ", ".join(a.name for a in info.arguments) or "none"
    raise MCPPromptError(f"write the arguments as key=value (this prompt takes: {names})",
                         server=info.server, prompt=info.name)


def slash_handler(info: MCPPromptInfo) -> Any:
    async def handler(args: str, chat: Any) -> Any:
        try:
            arguments = parse_slash_arguments(info, args)
            prompt = await get_mcp_prompt(chat.agent, info.server, info.name, arguments)
        except MCPPromptError as exc:
            chat.say(f"{info.command}: {exc}")
            return None
        chat.say(f"(the prompt {info.name} of the MCP server {info.server} is sent as your message)")
        return prompt.to_task()

    return handler
