"""One live MCP session, owned by one long-lived asyncio task.

The SDK's context managers (``stdio_client``, ``streamable_http_client``,
``sse_client``, ``ClientSession``) hold anyio task groups and cancel scopes,
which must be entered and exited by the same task. So each server gets its
own task (:meth:`MCPServerConnection._main`) that enters them, answers
requests (tool calls, resource reads, prompts, listings) arriving through a
queue, and exits them when asked to close — from whatever task asks.

Server notifications are noted, never acted on mid-run: ``tools/list_changed``
sets :attr:`MCPServerConnection.tools_changed`, and the next run re-lists the
tools before its tool list is fixed.

The session is the SDK's ``mcp.client.Client``: it negotiates the protocol
(``server/discover`` of 2026-07-28, else the 2025 ``initialize`` handshake),
drives a server's ``InputRequiredResult`` rounds, and serves the server's
own requests — elicitation, sampling, roots — through the connection's
:attr:`~MCPServerConnection.host` (:mod:`smoke_mcp._interact`). An HTTP server
that asks for OAuth gets the SDK's client auth (:mod:`smoke_mcp._oauth`).
Time spent waiting on a person (a login, a form, a sampling approval) does
not count against the start or call timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from ._config import MCPServerConfig

# MCP JSON-RPC error codes (mcp_types.jsonrpc)
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

_STDERR_TAIL_CHARS = 2000
_CLOSE_GRACE = 15.0  # the SDK's own stdio shutdown is bounded at ~6 s


class MCPServerError(Exception):
    """A server could not be started or a call to it failed. ``code`` is a
    Smoke error code (``tool_failed`` or ``transport_disconnected``)."""

    def __init__(self, message: str, *, code: str = "tool_failed", stderr_tail: str | None = None,
                 connection_lost: bool = False, mcp_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.stderr_tail = stderr_tail
        self.connection_lost = connection_lost
        #: the JSON-RPC error code the server answered with, if it answered with one
        self.mcp_code = mcp_code


def server_env(cfg: MCPServerConfig) -> dict[str, str]:
    """The environment of a stdio server: Smoke's own without provider keys
    (:func:`smoke_core.secrets.child_env`), plus the config's ``env``. A
    provider key reaches the server only when its config names it in ``env``
    (``"OPENAI_API_KEY": "${OPENAI_API_KEY}"``)."""
    from smoke_core.secrets import child_env

    return child_env(keep=cfg.env.keys(), extra=cfg.env)


def read_tail(path: Path | None, limit: int = _STDERR_TAIL_CHARS) -> str:
    """The last ``limit`` characters of a log file ("" if there is none)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace").strip()
    return ("…" + text) if size > limit else text


def _leaf(exc: BaseException) -> BaseException:
    """The most telling exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        subs = list(exc.exceptions)
        exc = next((e for e in subs if not isinstance(e, asyncio.CancelledError)), subs[0])
    return exc


class MCPServerConnection:
    """A connection to one MCP server: :meth:`start`, :meth:`call_tool`, :meth:`close`.

    ``tools`` holds the server's tools (``mcp.types.Tool``) once started.
    ``alive`` is False before start, after a crash and after close; a dead
    connection is replaced by a new one on the next call (see
    :class:`~smoke_mcp.MCPAgentState`).
    """

    def __init__(self, config: MCPServerConfig, *, workspace_root: Path, stderr_path: Path,
                 sandbox: Any = None, host: Any = None) -> None:
        from ._interact import Host

        self.config = config
        self.workspace_root = workspace_root
        #: how the server's own requests (elicitation, sampling, roots, a login) are served
        self.host = host if host is not None else Host(workspace_root)
        #: the negotiated protocol version (``2025-11-25``, ``2026-07-28``...)
        self.protocol_version: str | None = None
        #: the roots last given to the server (to know when ``roots/list_changed`` is due)
        self.roots_sent: list[str] | None = None
        self._person_waits = 0
        self._person_since = 0.0
        self._person_total = 0.0
        self._start_left: float | None = None
        self.stderr_path = stderr_path
        #: the agent's sandbox settings (``options.sandbox``); None = never sandboxed
        self.sandbox_settings = sandbox
        #: True once the server was started inside the OS sandbox
        self.sandboxed = False
        self.tools: list[Any] = []
        self.server_info: Any = None
        #: the server's declared capabilities (``resources``, ``prompts``, ``tools``...)
        self.capabilities: Any = None
        #: set when the server sent ``notifications/tools/list_changed`` since the
        #: tools were last listed; the next run re-lists them (never mid-run)
        self.tools_changed = False
        self.alive = False
        self.lost_reason: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[list[Any]] | None = None
        self._requests: asyncio.Queue[Any] | None = None
        self._scope: Any = None
        self._ended_by: BaseException | None = None
        self._http_status: int | None = None

    # ------------------------------------------------------------ public

    def usable(self) -> bool:
        """True when calls can go to this connection now (alive, same event loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self.alive and self.loop is loop and self._task is not None and not self._task.done()

    def stderr_tail(self) -> str:
        return read_tail(self.stderr_path) if self.config.transport == "stdio" else ""

    async def start(self) -> list[Any]:
        """Start the server, initialize the session and list its tools, within
        ``config.connect_timeout``. Raises :class:`MCPServerError`."""
        loop = asyncio.get_running_loop()
        self.loop = loop
        self._ready = loop.create_future()
        self._requests = asyncio.Queue()
        self._task = loop.create_task(self._main(), name=f"smoke-mcp:{self.config.name}")
        try:
            # _main enforces the connect timeout itself; this bound is a backstop (not
            # counting the time a person is asked something: a login, a form)
            waiters: set[asyncio.Future[Any]] = {self._ready, self._task}
            started, paused = time.monotonic(), self.person_paused()
            while not self._ready.done() and not self._task.done():
                left = self.config.connect_timeout + _CLOSE_GRACE - (
                    time.monotonic() - started - (self.person_paused() - paused))
                if left <= 0:
                    break
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED,
                                   timeout=min(left, 1.0) if self._person_waits else left)
        except BaseException:
            await self.close()
            raise
        if self._ready.done():
            return self._ready.result()
        await self.close()
        raise self._failure(None, starting=True)

    def supports(self, capability: str) -> bool:
        """True when the server declared ``capability`` (``"resources"``, ``"prompts"``) at initialize."""
        return getattr(self.capabilities, capability, None) is not None

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout: float,
                        on_progress: Callable[..., Any] | None = None) -> Any:
        """Call a tool; returns the SDK's ``CallToolResult``. Raises :class:`MCPServerError`."""

        async def op(client: Any) -> Any:
            # no SDK read timeout: the connection's own bound stops while a person is asked
            return await client.call_tool(name, arguments, progress_callback=on_progress)

        return await self.request(name, op, timeout=timeout, tool=True)

    # ------------------------------------------------------------ waiting on a person

    def person_paused(self) -> float:
        """Seconds spent waiting on a person so far (the clock that timeouts subtract)."""
        ongoing = time.monotonic() - self._person_since if self._person_waits else 0.0
        return self._person_total + ongoing

    @contextlib.contextmanager
    def waiting_on_person(self) -> Iterator[None]:
        """Held while a person is asked something for this server: the start
        deadline and the calls' timeouts stop."""
        if self._person_waits == 0:
            self._person_since = time.monotonic()
            scope = self._scope
            if scope is not None and self._ready is not None and not self._ready.done():
                import anyio

                self._start_left = scope.deadline - anyio.current_time()
                scope.deadline = math.inf
        self._person_waits += 1
        try:
            yield
        finally:
            self._person_waits -= 1
            if self._person_waits == 0:
                self._person_total += time.monotonic() - self._person_since
                scope = self._scope
                if scope is not None and self._start_left is not None and self._ready is not None \
                        and not self._ready.done():
                    import anyio

                    scope.deadline = anyio.current_time() + self._start_left
                self._start_left = None

    async def refresh_tools(self, *, timeout: float) -> list[Any]:
        """List the tools again (after ``tools/list_changed``); updates :attr:`tools`."""
        self.tools_changed = False  # a notification arriving while listing marks it again
        try:
            tools = await self.request("tools/list", self._list_tools, timeout=timeout)
        except BaseException:
            self.tools_changed = True
            raise
        self.tools = list(tools)
        return self.tools

    async def request(self, what: str, op: Callable[[Any], Awaitable[Any]], *, timeout: float,
                      tool: bool = False) -> Any:
        """Run ``op(session)`` in the task that owns the session, bounded by
        ``timeout``. ``what`` names the request in errors (a tool name when
        ``tool``, else e.g. ``"resources/read demo://x"``). Raises :class:`MCPServerError`."""
        if not self.usable() or self._requests is None or self._task is None:
            raise MCPServerError(
                f"MCP server {self.config.name!r} is not running" + (f" ({self.lost_reason})" if self.lost_reason else ""),
                connection_lost=True, stderr_tail=self.stderr_tail() or None,
            )
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._requests.put_nowait((fut, what, op, timeout, tool))
        started, paused = time.monotonic(), self.person_paused()
        try:
            while not fut.done() and not self._task.done():
                left = timeout + 5 - (time.monotonic() - started - (self.person_paused() - paused))
                if left <= 0:
                    break
                await asyncio.wait({fut, self._task}, return_when=asyncio.FIRST_COMPLETED, timeout=left)
        finally:
            if not fut.done():
                fut.cancel()  # tells the owning task to cancel the request
        if not fut.cancelled():
            return fut.result()
        if self._task.done():
            raise MCPServerError(self._lost_message(what), connection_lost=True,
                                 stderr_tail=self.stderr_tail() or None)
        raise MCPServerError(f"{what} on MCP server {self.config.name!r} did not answer within {timeout:g} s "
                             f"(the 'timeout' setting of the server)")

    async def close(self) -> None:
        """Shut the session down (in its own task) and wait for it. Safe to call twice."""
        task = self._task
        if task is None or task.done():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not self.loop:
            return  # its event loop is gone; asyncio cancelled the task when it closed
        if self._ready is not None and not self._ready.done():
            if self._scope is not None:
                self._scope.cancel()
        elif self._requests is not None:
            self._requests.put_nowait(None)
        done, _ = await asyncio.wait({task}, timeout=_CLOSE_GRACE)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # ------------------------------------------------------------ the owning task

    async def _main(self) -> None:
        import anyio

        assert self._ready is not None
        cfg = self.config
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                scope.deadline = anyio.current_time() + cfg.connect_timeout
                async with contextlib.AsyncExitStack() as stack:
                    client = await self._open(stack)
                    self.server_info = client.server_info
                    self.capabilities = client.server_capabilities
                    self.protocol_version = client.protocol_version
                    self.tools_changed = False  # what is listed now is current
                    tools = await self._list_tools(client)
                    scope.deadline = math.inf
                    self.tools = tools
                    self.alive = True
                    self._ready.set_result(tools)
                    await self._serve(client)
            if scope.cancelled_caught and not self._ready.done():
                self._ready.set_exception(self._failure(None, starting=True, timed_out=True))
        except BaseException as exc:
            self._ended_by = exc
            if not self._ready.done():
                self._ready.set_exception(self._failure(exc, starting=True))
            elif self.alive:
                self.lost_reason = self._describe(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.alive = False
            self._fail_queued()

    def _launch(self, cwd: Path) -> tuple[list[str], dict[str, str]]:
        """How the stdio server starts: as configured, or inside the OS sandbox
        when its config says ``"sandbox": true`` (then the sandbox must work:
        an explicit opt-in never degrades silently) or the settings default
        ``sandbox.mcp`` is on (then ``sandbox.mode`` decides, as for commands)."""
        cfg = self.config
        argv = [cfg.command or "", *[str(a) for a in cfg.args]]
        settings = self.sandbox_settings
        by_settings = bool(settings is not None and settings.mcp)
        # a repository's entry may ask for the sandbox, never loosen the one the
        # trusted settings impose: its "sandbox": false and {"network": true} are
        # ignored while sandbox.mcp is on
        loosening = cfg.origin == "repository" and by_settings
        entry_sandbox = None if loosening and cfg.sandbox is False else cfg.sandbox
        wanted = entry_sandbox if entry_sandbox is not None else by_settings
        if not wanted:
            return argv, server_env(cfg)
        from smoke_core.sandbox import SandboxPolicy, SandboxSettings, SandboxUnavailable, prepare

        base = settings if settings is not None else SandboxSettings()
        update: dict[str, Any] = {"env": [*base.env, *cfg.env.keys()]}
        if entry_sandbox is True:
            update["mode"] = "required"
        if cfg.sandbox_network and not loosening:
            update["network"] = True
        policy = SandboxPolicy.from_settings(base.model_copy(update=update), self.workspace_root)
        # the program and the files its command line names stay readable even
        # in the sandbox's private /tmp (a server script in /tmp/x/server.py)
        policy = policy.with_visible(shutil.which(argv[0]) or argv[0], *argv[1:], str(cwd))
        try:
            launch = prepare(argv, policy, cwd=cwd, extra_env=cfg.env)
        except SandboxUnavailable as exc:
            raise MCPServerError(f"MCP server {cfg.name!r} is configured to run sandboxed, but {exc}") from None
        self.sandboxed = launch.sandboxed
        return launch.argv, launch.env

    async def _open(self, stack: contextlib.AsyncExitStack) -> Any:
        """The transport and the SDK's ``Client`` on it, entered on ``stack``
        (the protocol is negotiated when the client is entered)."""
        from mcp.client import Client
        from mcp.types import Implementation

        from smoke_core import __version__

        cfg = self.config
        if cfg.transport == "stdio":
            from mcp import StdioServerParameters, stdio_client

            self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
            errlog = stack.enter_context(open(self.stderr_path, "a", encoding="utf-8"))  # noqa: SIM115
            cwd = Path(cfg.cwd) if cfg.cwd else self.workspace_root
            if not cwd.is_absolute():
                cwd = self.workspace_root / cwd
            argv, env = self._launch(cwd)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))
            transport: Any = stdio_client(params, errlog=errlog)
        elif cfg.transport == "sse":
            from mcp.client.sse import sse_client

            transport = sse_client(cfg.url or "", headers=dict(cfg.headers) or None, timeout=cfg.connect_timeout,
                                   auth=self._auth())
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(
                headers=dict(cfg.headers) or None,
                timeout=httpx2.Timeout(cfg.connect_timeout, read=max(cfg.timeout, 300.0)),
                auth=self._auth(),
            )

            async def note_status(response: Any) -> None:
                if response.status_code >= 400:
                    self._http_status = response.status_code

            client.event_hooks["response"].append(note_status)
            await stack.enter_async_context(client)
            transport = streamable_http_client(cfg.url or "", http_client=client)
        host = self.host
        callbacks: dict[str, Any] = {
            "elicitation_callback": self._elicit,
            "list_roots_callback": self._roots,
        }
        if host.sampling_allowed():
            callbacks["sampling_callback"] = self._sample
        return await stack.enter_async_context(Client(
            transport, mode=cfg.protocol, client_info=Implementation(name="smoke", version=__version__),
            message_handler=self._on_message, cache=None, **callbacks,
        ))

    def _auth(self) -> Any:
        from ._oauth import build_auth

        async def login(url: str) -> None:
            await self.host.login(self, url)

        return build_auth(self.config, login=login, waiting=self.waiting_on_person)

    # the server's own requests: answered by the host, never by the model alone

    async def _elicit(self, context: Any, params: Any) -> Any:
        return await self.host.elicit(self, params)

    async def _sample(self, context: Any, params: Any) -> Any:
        return await self.host.sample(self, params)

    async def _roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult

        roots = self.host.roots(self)
        self.roots_sent = [str(r.uri) for r in roots]
        return ListRootsResult(roots=roots)

    async def roots_changed(self) -> bool:
        """Tell the server its roots changed (``notifications/roots/list_changed``),
        when it listed them before and they differ now. The 2026-07-28
        protocol has no client notifications (a server asks again per
        request): nothing is sent there. True when a notification was sent."""
        if self.roots_sent is None or not self.usable():
            return False
        now = [str(r.uri) for r in self.host.roots(self)]
        if now == self.roots_sent or (self.protocol_version or "") >= "2026":
            return False

        async def notify(client: Any) -> None:
            import warnings

            with warnings.catch_warnings():  # deprecated by SEP-2577 for 2026-07-28; current for 2025
                warnings.simplefilter("ignore")
                await client.session.send_roots_list_changed()

        await self.request("notifications/roots/list_changed", notify, timeout=self.config.timeout)
        return True

    async def _on_message(self, message: Any) -> None:
        """Server notifications (and transport exceptions, which the session
        reports through the same handler). Only noted here: what changes is
        applied between runs."""
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.tools_changed = True

    async def _list_tools(self, client: Any) -> list[Any]:
        return await paginate(client.list_tools, "tools")

    async def _serve(self, session: Any) -> None:
        import anyio

        assert self._requests is not None
        async with anyio.create_task_group() as tg:
            tools_cap = getattr(self.capabilities, "tools", None)
            if (self.protocol_version or "") >= "2026" and getattr(tools_cap, "list_changed", None):
                tg.start_soon(self._listen_for_changes, session)
            while True:
                item = await self._requests.get()
                if item is None:
                    break
                tg.start_soon(self._handle, session, item)
            tg.cancel_scope.cancel()

    async def _listen_for_changes(self, client: Any) -> None:
        """2026-07-28 servers announce changes only on a ``subscriptions/listen``
        stream (no unsolicited notifications): noted like ``tools/list_changed``."""
        from mcp.client.subscriptions import ToolsListChanged

        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self.tools_changed = True
        except Exception as exc:  # the stream is an extra: tools are still listed at each start
            import logging

            logging.getLogger("smoke.mcp").debug("smoke-mcp: %s: no change stream (%s)", self.config.name, exc)

    async def _handle(self, session: Any, item: tuple[Any, ...]) -> None:
        import anyio
        from mcp.shared.exceptions import MCPError

        fut, what, op, timeout, tool = item
        if fut.done():
            return
        with anyio.CancelScope() as scope:
            fut.add_done_callback(lambda f: scope.cancel() if f.cancelled() else None)
            try:
                result = await self._bounded(op, session, timeout)
            except MCPError as exc:
                if exc.code == _CONNECTION_CLOSED:
                    self.alive = False
                    self.lost_reason = "the server closed the connection"
                    if not fut.done():
                        fut.set_exception(MCPServerError(self._lost_message(what), connection_lost=True,
                                                         stderr_tail=self.stderr_tail() or None))
                    assert self._requests is not None
                    self._requests.put_nowait(None)  # wind the dead session down
                    return
                if not fut.done():
                    fut.set_exception(self._call_error(what, exc, timeout) if tool
                                      else self._request_error(what, exc, timeout))
                return
            except TimeoutError:
                if not fut.done():
                    fut.set_exception(MCPServerError(
                        f"{what} on MCP server {self.config.name!r} did not answer within {timeout:g} s "
                        f"(the 'timeout' setting of the server)"))
                return
            except Exception as exc:
                if not fut.done():
                    login = self._login_problem(_leaf(exc))
                    fut.set_exception(MCPServerError(
                        login or f"{what} on MCP server {self.config.name!r} failed: {self._describe(exc)}",
                        code="permission_denied" if login else "tool_failed"))
                return
            if not fut.done():
                fut.set_result(result)

    async def _bounded(self, op: Callable[[Any], Awaitable[Any]], client: Any, timeout: float) -> Any:
        """``await op(client)`` within ``timeout`` seconds, not counting the
        time a person is asked something for this server. Raises TimeoutError."""
        import anyio

        started, paused = anyio.current_time(), self.person_paused()
        outcome: list[tuple[bool, Any]] = []
        async with anyio.create_task_group() as tg:
            async def work() -> None:
                try:
                    outcome.append((True, await op(client)))
                except Exception as exc:
                    outcome.append((False, exc))
                tg.cancel_scope.cancel()

            tg.start_soon(work)
            while True:
                left = timeout - (anyio.current_time() - started - (self.person_paused() - paused))
                if left <= 0:
                    tg.cancel_scope.cancel()
                    break
                await anyio.sleep(min(left, 1.0) if self._person_waits else left)
        if not outcome:
            raise TimeoutError
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def _fail_queued(self) -> None:
        q = self._requests
        while q is not None and not q.empty():
            item = q.get_nowait()
            if item is not None and not item[0].done():
                item[0].set_exception(MCPServerError(self._lost_message(item[1]), connection_lost=True,
                                                     stderr_tail=self.stderr_tail() or None))

    # ------------------------------------------------------------ messages

    def _lost_message(self, tool: str) -> str:
        msg = (f"MCP server {self.config.name!r} stopped while {tool} was running (the connection closed); "
               f"it will be restarted on the next call to one of its tools")
        tail = self.stderr_tail()
        if tail:
            msg += f". Last server stderr:\n{tail}"
        return msg

    def _request_error(self, what: str, exc: Any, timeout: float) -> MCPServerError:
        """An error answer to a request that is not a tool call (resources, prompts, listings)."""
        code = getattr(exc, "code", None)
        text = getattr(exc, "message", None) or str(exc)
        server = self.config.name
        if code == _REQUEST_TIMEOUT:
            return MCPServerError(f"{what} on MCP server {server!r} did not answer within {timeout:g} s "
                                  f"(the 'timeout' setting of the server)", mcp_code=code)
        if code == METHOD_NOT_FOUND:
            return MCPServerError(f"MCP server {server!r} does not support {what.split()[0]}: {text}", mcp_code=code)
        return MCPServerError(f"MCP server {server!r} answered {what} with an error: {text} (MCP error {code})",
                              mcp_code=code)

    def _call_error(self, name: str, exc: Any, timeout: float) -> MCPServerError:
        code = getattr(exc, "code", None)
        text = getattr(exc, "message", None) or str(exc)
        server = self.config.name
        if code == _REQUEST_TIMEOUT:
            return MCPServerError(f"{name} on MCP server {server!r} did not answer within {timeout:g} s "
                                  f"(the 'timeout' setting of the server); the server may be stuck")
        if code == _INVALID_PARAMS:
            return MCPServerError(f"MCP server {server!r} rejected the arguments for {name}: {text}. "
                                  f"Check them against the tool's schema and call again")
        if code == METHOD_NOT_FOUND:
            return MCPServerError(f"MCP server {server!r} does not know the tool {name}: {text}")
        return MCPServerError(f"{name} on MCP server {server!r} failed: {text} (MCP error {code})")

    def _login_problem(self, exc: BaseException) -> str | None:
        from ._oauth import login_problem

        return login_problem(exc, self.config)

    def _describe(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        text = str(leaf) or type(leaf).__name__
        return f"{type(leaf).__name__}: {text}"

    def _failure(self, exc: BaseException | None, *, starting: bool, timed_out: bool = False) -> MCPServerError:
        """Why the server could not be started, for people."""
        cfg = self.config
        tail = self.stderr_tail()
        code = "tool_failed"
        if exc is None and not timed_out and self._ended_by is not None:
            exc = self._ended_by
        leaf = _leaf(exc) if exc is not None else None
        what = f"MCP server {cfg.name!r} ({cfg.describe()})"
        if timed_out or leaf is None or isinstance(leaf, (TimeoutError, asyncio.CancelledError)):
            msg = (f"{what} did not finish starting within {cfg.connect_timeout:g} s (no answer to initialize "
                   f"or tools/list); raise 'connect_timeout' if it is just slow")
        elif isinstance(leaf, FileNotFoundError) and cfg.transport == "stdio":
            msg = (f"{what} could not be started: the command {cfg.command!r} was not found. "
                   f"Install it or fix 'command' in {cfg.source}")
        elif isinstance(leaf, PermissionError) and cfg.transport == "stdio":
            msg = f"{what} could not be started: {cfg.command!r} is not executable ({leaf})"
        elif getattr(leaf, "code", None) == _CONNECTION_CLOSED:
            msg = f"{what} exited or closed the connection before it finished starting"
        elif leaf is not None and self._login_problem(leaf):
            code = "permission_denied" if type(leaf).__name__ == "LoginRequired" else "transport_disconnected"
            msg = self._login_problem(leaf) or ""
        else:
            name = type(leaf).__name__
            status = getattr(getattr(leaf, "response", None), "status_code", None) or self._http_status
            if name in ("ConnectError", "ConnectTimeout", "ReadError", "RemoteProtocolError", "ReadTimeout"):
                code = "transport_disconnected"
                msg = f"{what} could not be reached: {leaf or name}. Check that the server is running and the URL"
            elif status is not None:
                code = "transport_disconnected"
                msg = f"{what} answered HTTP {status}"
                if status in (401, 403):
                    oauth = cfg.oauth
                    if oauth is not None and oauth.enabled:
                        msg += (f" even after logging in; check the server's login settings ('oauth' in {cfg.source}) "
                                f"or run `smoke mcp login {cfg.name}` again")
                    elif cfg.headers:
                        msg += f"; check the credentials in 'headers' ({cfg.source})"
                    else:
                        msg += "; it needs credentials: 'headers', or remove 'oauth: false' to log in"
            else:
                msg = f"{what} could not be started: {name}: {leaf}"
        if tail:
            msg += f". Last server stderr:\n{tail}"
        return MCPServerError(msg, code=code, stderr_tail=tail or None)


async def paginate(fetch: Callable[..., Awaitable[Any]], field: str, *, max_pages: int = 100) -> list[Any]:
    """All items of a paginated MCP listing (``tools``, ``resources``,
    ``resource_templates``, ``prompts``; ``fetch`` is the ``Client`` method,
    called with ``cursor=``); a server that pages forever is cut off after
    ``max_pages`` pages."""
    items: list[Any] = []
    cursor = None
    for _ in range(max_pages):
        result = await fetch(cursor=cursor)
        items.extend(getattr(result, field))
        cursor = result.next_cursor
        if not cursor:
            break
    return items
