"""What an MCP server may ask of Smoke, and who answers.

- **elicitation** (``elicitation/create``): a form reaches the person through
  the same pause as ``ask_user`` (``ask_user.required`` with ``form``), in the
  terminal, the web UI, an editor over ACP or the Python API's event; a URL
  is opened only after the person agrees. Nobody there → declined, never
  answered by the model.
- **sampling** (``sampling/createMessage``): served by the agent's own model
  (``RunHandle.sample``: ``before_model_call`` sees it, usage and cost are
  the run's) after a person approved it, seeing the messages; refused when
  ``mcp.sampling`` is ``deny``, when nobody can approve, or above the run's
  limits.
- **roots** (``roots/list``): the agent's workspace (or what
  :func:`smoke_mcp.set_roots` set).
- **a login** (OAuth): offered to the person during a run.

:class:`Host` answers when there is no run (``smoke mcp tools NAME`` and the
like): it declines and refuses everything and names ``smoke mcp login``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._oauth import LoginRequired, open_browser

if TYPE_CHECKING:
    from ._connection import MCPServerConnection
    from ._state import MCPAgentState

log = logging.getLogger("smoke.mcp")

#: MCP's code for "the user rejected the request" (sampling)
USER_REJECTED = -1
LOGIN_OPTIONS = ("log in", "not now")
URL_OPTIONS = ("open it", "decline")
SAMPLES_KEY = "smoke-mcp.samples"


def _roots_of(paths: list[Path]) -> list[Any]:
    from mcp.types import Root

    return [Root(uri=p.resolve().as_uri(), name=p.name or str(p)) for p in paths]  # type: ignore[arg-type]


def form_schema(params: Any) -> dict[str, Any]:
    schema = params.requested_schema
    if isinstance(schema, dict):
        return schema
    dumped: dict[str, Any] = schema.model_dump(by_alias=True, exclude_none=True)  # older SDKs
    return dumped


class Host:
    """Answers a server when no person and no model can: forms declined,
    sampling refused, a login needs ``smoke mcp login``; roots are the workspace."""

    def __init__(self, workspace_root: Path) -> None:
        self.workspace_root = workspace_root

    def sampling_allowed(self) -> bool:
        return False

    def roots(self, conn: MCPServerConnection) -> list[Any]:
        return _roots_of([self.workspace_root])

    async def elicit(self, conn: MCPServerConnection, params: Any) -> Any:
        from mcp.types import ElicitResult

        log.warning("smoke-mcp: MCP server %r asked for input outside a run; declined", conn.config.name)
        return ElicitResult(action="decline")

    async def sample(self, conn: MCPServerConnection, params: Any) -> Any:
        from mcp.types import ErrorData

        return ErrorData(code=USER_REJECTED, message="Smoke serves sampling requests only during a run")

    async def login(self, conn: MCPServerConnection, url: str) -> None:
        raise LoginRequired("nobody can be asked to log in here.")


class LoginHost(Host):
    """``smoke mcp login NAME``: the person asked for the login, so the
    browser is opened at once (the address is printed too)."""

    def __init__(self, workspace_root: Path, say: Any) -> None:
        super().__init__(workspace_root)
        self.say = say
        self.asked = False

    async def login(self, conn: MCPServerConnection, url: str) -> None:
        self.asked = True
        opened = await open_browser(url)
        self.say(f"{'Opened your browser at' if opened else 'Open this address in a browser to log in'}:\n  {url}\n"
                 f"waiting for the browser to come back to {_redirect_of(url)} ...")


def _redirect_of(url: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    return (parse_qs(urlsplit(url).query).get("redirect_uri") or ["127.0.0.1"])[0]


class AgentHost(Host):
    """An agent's servers, answered through the agent's current top-level run."""

    def __init__(self, state: MCPAgentState, workspace_root: Path) -> None:
        super().__init__(workspace_root)
        self.state = state

    @property
    def run(self) -> Any:
        return self.state.current_run

    def settings(self) -> Any:
        from ._settings import MCPSettings

        run = self.run
        value = run.options.get("mcp") if run is not None else None
        return value if isinstance(value, MCPSettings) else MCPSettings()

    def sampling_allowed(self) -> bool:
        return bool(self.settings().sampling != "deny")

    def roots(self, conn: MCPServerConnection) -> list[Any]:
        return _roots_of(self.state.roots or [self.workspace_root])

    def _warn(self, message: str, server: str, code: str = "tool_failed") -> None:
        from smoke_core.plugin import AgentErrorInfo

        run = self.run
        if run is None:
            log.warning("smoke-mcp: %s", message)
            return
        run.warn(AgentErrorInfo.from_code(code, message, severity="warning",  # type: ignore[arg-type]
                                          details={"server": server, "plugin": "smoke-mcp"}))

    # ------------------------------------------------------------ elicitation

    async def elicit(self, conn: MCPServerConnection, params: Any) -> Any:
        from mcp.types import ElicitRequestURLParams, ElicitResult

        from smoke_core.plugin import FormError, form_fields

        name = conn.config.name
        run = self.run
        if run is None:
            return await super().elicit(conn, params)
        if isinstance(params, ElicitRequestURLParams):
            question = (f"MCP server {name!r} asks you to open {params.url} — {params.message} "
                        f"(the page is the server's, not Smoke's)")
            with conn.waiting_on_person():
                answer = await run.ask_user(question, options=list(URL_OPTIONS))
            if str(answer).strip().lower() != URL_OPTIONS[0]:
                return ElicitResult(action="decline")
            if not await open_browser(params.url):
                self._warn(f"MCP server {name!r}: no browser could be opened; open {params.url} yourself", name)
            return ElicitResult(action="accept")
        schema = form_schema(params)
        try:
            form_fields(schema)
        except FormError as exc:
            self._warn(f"MCP server {name!r} asked for input with a form Smoke cannot show ({exc}); it was "
                       f"declined and the server was told so. Ask the server's authors to keep to MCP's "
                       f"flat forms (text, numbers, yes/no, choices)", name)
            return ElicitResult(action="decline")
        with conn.waiting_on_person():
            values = await run.ask_user(f"MCP server {name!r} asks: {params.message}", form=schema)
        if values is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=values)

    # ------------------------------------------------------------ sampling

    async def sample(self, conn: MCPServerConnection, params: Any) -> Any:
        from mcp.types import CreateMessageResult, ErrorData, TextContent

        from smoke_core.plugin import AgentError

        from ._schema import sanitize_server_name

        name = conn.config.name
        run = self.run

        def refuse(message: str, *, warn: bool = True) -> Any:
            if warn:
                self._warn(message, name, code="permission_denied")
            return ErrorData(code=USER_REJECTED, message=message)

        if run is None:
            return await super().sample(conn, params)
        settings = self.settings()
        if settings.sampling == "deny":
            return refuse(f"MCP server {name!r} asked to use the model (sampling); refused, because the settings "
                          f"say mcp.sampling: deny")
        if getattr(params, "tools", None):
            return refuse(f"MCP server {name!r} asked to use the model with tools; Smoke serves sampling without "
                          f"tools only, so it was refused")
        provider = run.agent.provider
        limit = settings.sampling_max_tokens
        model_limit = _max_output(provider)
        if model_limit is not None:
            limit = min(limit, model_limit)
        if params.max_tokens > limit:
            return refuse(f"MCP server {name!r} asked the model for up to {params.max_tokens} tokens, above this "
                          f"run's limit of {limit}; refused. Raise mcp.sampling_max_tokens in your settings if "
                          f"the server needs more")
        served = int(run.state.get(SAMPLES_KEY, 0))
        if served >= settings.sampling_max_requests:
            return refuse(f"MCP server {name!r} asked to use the model again; this run already served "
                          f"{served} sampling requests (mcp.sampling_max_requests), so it was refused")
        try:
            messages, shown = _messages(params.messages)
        except ValueError as exc:
            return refuse(f"MCP server {name!r} sent a sampling request Smoke cannot pass on ({exc}); refused")
        model = getattr(provider, "model", None) or getattr(provider, "name", "the model")
        approval = {"messages": shown, "system_prompt": params.system_prompt, "max_tokens": params.max_tokens}
        with conn.waiting_on_person():
            allowed = await run.request_permission(
                kind="mcp_sampling", name=name, input=approval,
                reason=(f"MCP server {name!r} asks to use your model ({model}) for up to {params.max_tokens} "
                        f"tokens; the answer goes back to the server, not into this conversation"),
                scope=f"mcp_sampling:{sanitize_server_name(name)}", person=True,
            )
        if not allowed:
            return refuse("The person declined the sampling request", warn=False)
        run.state[SAMPLES_KEY] = served + 1
        settings_for_call: dict[str, Any] = {"max_tokens": params.max_tokens}
        if params.temperature is not None:
            settings_for_call["temperature"] = params.temperature
        try:
            with conn.waiting_on_person():  # the server waits on our model, not the other way round
                reply, finish = await run.sample(messages, system=params.system_prompt, settings=settings_for_call)
        except AgentError as exc:
            return refuse(f"MCP server {name!r}: the model call for its sampling request failed: {exc.info.message}")
        text = "".join(b.get("text", "") for b in reply.get("content") or [] if b.get("type") == "text")
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=text), model=str(model),
                                   stop_reason="maxTokens" if finish == "length" else "endTurn")

    # ------------------------------------------------------------ login

    async def login(self, conn: MCPServerConnection, url: str) -> None:
        run = self.run
        name = conn.config.name
        if run is None:
            raise LoginRequired("no run is active to ask you.")
        answer = await run.ask_user(
            f"MCP server {name!r} ({conn.config.url}) needs you to log in. Log in now? Smoke opens this "
            f"address in your browser and waits for it to come back: {url}",
            options=list(LOGIN_OPTIONS),
        )
        if str(answer).strip().lower() != LOGIN_OPTIONS[0]:
            raise LoginRequired("the login was not started now.")
        if not await open_browser(url):
            self._warn(f"no browser could be opened for the login to MCP server {name!r}: open this address "
                       f"yourself: {url}", name)


def _max_output(provider: Any) -> int | None:
    value = getattr(provider, "max_output_tokens", None)
    try:
        value = value() if callable(value) else value
    except Exception:
        return None
    return value if isinstance(value, int) and value > 0 else None


def _messages(sampling_messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A sampling request's messages as Smoke messages, and as a person reads
    them in the approval. Raises ValueError for content Smoke cannot pass on."""
    messages: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for message in sampling_messages:
        content = message.content if isinstance(message.content, list) else [message.content]
        blocks: list[dict[str, Any]] = []
        texts: list[str] = []
        for block in content:
            kind = getattr(block, "type", None)
            if kind == "text":
                blocks.append({"type": "text", "text": block.text})
                texts.append(block.text)
            elif kind == "image":
                blocks.append({"type": "image", "data": block.data, "mime_type": block.mime_type})
                texts.append(f"[image {block.mime_type}]")
            else:
                raise ValueError(f"a {kind} block in a {message.role} message")
        messages.append({"role": message.role, "content": blocks})
        shown.append({"role": message.role, "text": "\n".join(texts)})
    if not messages:
        raise ValueError("no messages")
    return messages, shown
