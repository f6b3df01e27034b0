"""The ACP agent: the SDK's ``acp.Agent`` methods on top of Smoke sessions.

The SDK (``agent-client-protocol``) validates every request against its
pydantic models and routes it here; unknown methods and bad params are its
JSON-RPC errors. One Smoke agent per ACP session; sessions are stored in the
workspace's ``.smoke/sessions.db`` (the same file ``smoke run --session`` and
``smoke sessions`` use), so ``session/load`` replays any of them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
)

from ._session import CONTEXT_WINDOW, CORE_MODE, MODE_OF_SETTING, ACPSession, invalid_params

log = logging.getLogger("smoke.acp")

#: ``${NAME}`` in an MCP server entry, which smoke-mcp would expand from Smoke's environment.
_ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")


@dataclass
class ServeOptions:
    """What ``smoke acp`` was started with (the person's flags)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None


def not_found(message: str) -> RequestError:
    return RequestError(-32002, message)


class SmokeACPAgent:
    """Implements the agent side of ACP (``acp.interfaces.Agent``)."""

    def __init__(self, options: ServeOptions | None = None) -> None:
        from smoke_core import __version__

        self.options = options or ServeOptions()
        self.version = __version__
        self.conn: Any = None
        self.client_caps: Any = None
        self.sessions: dict[str, ACPSession] = {}
        self._stores: dict[Path, Any] = {}
        self._pending: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # ------------------------------------------------------------ initialize

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        self.client_caps = client_capabilities
        if client_info is not None:
            log.info("smoke acp: client %s %s", client_info.name, client_info.version)
        # the requested version when we speak it, else the latest we do (the client then decides)
        version = protocol_version if protocol_version == PROTOCOL_VERSION else PROTOCOL_VERSION
        mcp = _mcp_installed()
        return InitializeResponse(
            protocol_version=version,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=mcp, sse=mcp),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="smoke", title="Smoke", version=self.version),
            auth_methods=[],
        )

    # ------------------------------------------------------------ sessions

    def _store(self, cwd: Path) -> Any:
        store = self._stores.get(cwd)
        if store is None:
            from smoke_core.plugin import SQLiteStore

            store = SQLiteStore(cwd / ".smoke" / "sessions.db", on_corrupt="start_fresh")
            self._stores[cwd] = store
        return store

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        from smoke_core.plugin import new_session_id

        session = await self._open(cwd, new_session_id(), mcp_servers, additional_directories)
        self._after_response(session.send_commands())
        return NewSessionResponse(session_id=session.session_id, modes=session.mode_state(),
                                  config_options=session.config_options())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        folder = _folder(cwd)
        messages = self._store(folder).load(session_id)
        if not messages:
            raise not_found(f"no session {session_id!r} in {folder / '.smoke' / 'sessions.db'}; "
                            f"session/list (or `smoke sessions`) lists them")
        session = await self._open(cwd, session_id, mcp_servers, additional_directories)
        await session.replay(messages)
        self._after_response(session.send_commands())
        return LoadSessionResponse(modes=session.mode_state(), config_options=session.config_options())

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        # without cwd: every folder this agent has served a session in, and its own folder
        folders = [_folder(cwd)] if cwd else list(dict.fromkeys([*self._stores, Path.cwd().resolve()]))
        found: list[tuple[Path, Any]] = []
        for folder in folders:
            if not (folder / ".smoke" / "sessions.db").exists():
                continue
            found.extend((folder, i) for i in self._store(folder).list_sessions())
        found.sort(key=lambda pair: pair[1].updated_at, reverse=True)
        return ListSessionsResponse(sessions=[
            SessionInfo(session_id=i.session_id, cwd=str(folder), title=i.title or None,
                        updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(i.updated_at)))
            for folder, i in found
        ])

    async def _open(self, cwd: str, session_id: str, mcp_servers: list[Any] | None,
                    additional_directories: list[str] | None) -> ACPSession:
        from smoke_core.plugin import (
            ConfigError,
            NoProviderError,
            SettingsError,
            create_agent,
            resolve_agent_settings,
        )

        folder = _folder(cwd)
        if additional_directories:
            log.warning("smoke acp: additionalDirectories %s not used: Smoke works in one workspace (%s)",
                        additional_directories, folder)
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await old.aclose()
        opts = self.options
        try:
            settings = resolve_agent_settings(folder, provider=opts.provider, model=opts.model,
                                              base_url=opts.base_url)
        except NoProviderError as exc:
            raise RequestError(-32603, f"Smoke has no model provider: {exc}") from None
        except (ConfigError, SettingsError) as exc:
            raise invalid_params(f"Smoke's settings for {folder} are invalid: {exc}") from None
        resolved = settings.resolved
        base_mode = resolved.values["permission"] if resolved is not None else "ask-default"
        managed = resolved is not None and resolved.layer_of.get("permission") == "managed"
        mode = MODE_OF_SETTING.get(base_mode if isinstance(base_mode, str) else "ask-default", "ask")
        models = list((resolved.plugin_values.get("acp_models") if resolved is not None else None) or [])
        warnings = list(resolved.warnings) if resolved is not None else []
        session = ACPSession(
            session_id=session_id, cwd=folder, conn=self.conn, client_caps=self.client_caps, mode=mode,
            fixed_mode=str(resolved.managed_path) if managed and resolved is not None else None, models=models,
            trusted=bool(resolved.trusted) if resolved is not None else False, warnings=warnings,
        )
        extra: dict[str, Any] = {}
        servers, problems = mcp_config(mcp_servers or [])
        session.warnings.extend(problems)
        if servers:
            if _mcp_installed():
                extra["mcp_servers"] = servers
            else:
                session.warnings.append(f"the editor passed MCP servers ({', '.join(servers)}) but smoke-mcp is "
                                        f"not installed: pip install smoke-mcp")
        if not managed:
            extra["permission"] = CORE_MODE[mode]
        try:
            session.agent = create_agent(
                folder, provider=settings.provider, model=settings.model, base_url=settings.base_url,
                store=self._store(folder), session_id=session_id, context_window=CONTEXT_WINDOW,
                trust_workspace=settings.options.get("trust_workspace"), **extra,
            )
        except (ValueError, TypeError, SettingsError) as exc:
            raise invalid_params(f"could not start Smoke in {folder}: {exc}") from None
        if settings.note:
            log.info("smoke acp: %s", settings.note)
        self.sessions[session_id] = session
        return session

    def _after_response(self, coro: Any) -> None:
        """Run ``coro`` once the current request is answered (a session's updates follow its creation)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _session(self, session_id: str) -> ACPSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise not_found(f"no open session {session_id!r}; start one with session/new or session/load")
        return session

    # ------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        parts = task_parts(prompt)
        return PromptResponse(stop_reason=await session.prompt(parts))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("smoke acp: session/cancel for unknown session %r", session_id)
            return
        session.cancel()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        session.set_mode(mode_id)
        await session.send_config()
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id == "mode" and isinstance(value, str):
            session.set_mode(value)
            await session.send_mode()
        elif config_id == "model" and isinstance(value, str):
            session.set_model(value)
        else:
            raise invalid_params(f"unknown configuration option {config_id!r} = {value!r}; the options are "
                                 f"'mode' and 'model'")
        return SetSessionConfigOptionResponse(config_options=session.config_options())

    # ------------------------------------------------------------ closing

    async def shutdown(self) -> None:
        """Abort every run, close every agent (MCP servers stop) and store."""
        for task in list(self._pending):
            task.cancel()
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.aclose()
        for store in self._stores.values():
            close = getattr(store, "close", None)
            if close is not None:
                close()
        self._stores.clear()


def _folder(cwd: str) -> Path:
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise invalid_params(f"cwd must be an absolute path, got {cwd!r}")
    folder = Path(cwd).resolve()
    if not folder.is_dir():
        raise invalid_params(f"cwd {cwd!r} is not a folder")
    return folder


def _mcp_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("smoke_mcp") is not None


def mcp_config(servers: list[Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The client's MCP servers as smoke-mcp entries (``create_agent(mcp_servers=)``),
    and problems to tell the person. Values holding ``${NAME}`` are refused:
    smoke-mcp would fill them from Smoke's own environment (the editor has
    already expanded what it meant to)."""
    out: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for server in servers:
        name = str(getattr(server, "name", "") or "").strip()
        if not name:
            problems.append("the editor passed an MCP server without a name; it was not started")
            continue
        if isinstance(server, McpServerStdio):
            entry: dict[str, Any] = {"command": server.command, "args": list(server.args),
                                     "env": {e.name: e.value for e in server.env}}
        elif isinstance(server, (HttpMcpServer, SseMcpServer)):
            entry = {"type": "http" if isinstance(server, HttpMcpServer) else "sse", "url": server.url,
                     "headers": {h.name: h.value for h in server.headers}}
        else:
            problems.append(f"MCP server {name!r}: the ACP transport for MCP is not supported; it was not started")
            continue
        texts = [entry.get("command") or "", entry.get("url") or "", *entry.get("args", []),
                 *entry.get("env", {}).values(), *entry.get("headers", {}).values()]
        if any(_ENV_REF.search(str(t)) for t in texts):
            problems.append(f"MCP server {name!r} holds ${{...}} references, which Smoke would fill from its own "
                            f"environment (secrets included); it was not started. Give the values themselves "
                            f"in the editor's settings")
            continue
        if name in out:
            problems.append(f"the editor passed two MCP servers named {name!r}; the first is used")
            continue
        out[name] = entry
    return out, problems


def task_parts(blocks: list[Any]) -> list[Any]:
    """ACP prompt content as Smoke task parts: text, images, and the context
    the editor embedded (file contents, links)."""
    from smoke_core import Image

    parts: list[Any] = []
    for block in blocks:
        try:
            if isinstance(block, TextContentBlock):
                parts.append(block.text)
            elif isinstance(block, ImageContentBlock):
                if block.data:
                    raw = base64.b64decode(block.data, validate=True)
                    parts.append(Image.from_bytes(raw, block.mime_type, source="the prompt's image"))
                elif block.uri:
                    parts.append(Image.from_url(block.uri))
            elif isinstance(block, ResourceContentBlock):
                parts.append(f"[{block.name}: {block.uri}]")
            elif isinstance(block, EmbeddedResourceContentBlock):
                resource = block.resource
                if isinstance(resource, BlobResourceContents):
                    mime = resource.mime_type or ""
                    if mime.startswith("image/"):
                        parts.append(Image.from_bytes(base64.b64decode(resource.blob, validate=True), mime,
                                                      source=resource.uri))
                    else:
                        parts.append(f"[{resource.uri}: {mime or 'binary'} content, not shown]")
                else:
                    parts.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
            elif isinstance(block, AudioContentBlock):
                raise invalid_params("Smoke does not take audio in prompts (promptCapabilities.audio is false)")
        except (ValueError, binascii.Error) as exc:
            raise invalid_params(f"a prompt block could not be used: {exc}") from None
    if not any(isinstance(p, str) and p.strip() for p in parts):
        raise invalid_params("the prompt has no text: say what Smoke should do (with the images or context)")
    return parts
