"""A real ACP client (the ``agent-client-protocol`` SDK's client-side
connection) driving ``smoke acp`` as a subprocess with a scripted model.

Every line ``smoke acp`` writes is kept and checked against the SDK's
pydantic models strictly: a field the lenient models would drop, salvage or
skip makes the check fail (the dump of the validated model must equal the
line). Every test here is kept away from the person's real Smoke settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateFormSessionElicitationRequest,
    DeclineElicitationResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

from smoke_core.testing import isolate_settings


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))


# ---------------------------------------------------------------- strict validation

#: What the agent may send, by method (requests and notifications to the client).
AGENT_TO_CLIENT = {
    "session/update": SessionNotification,
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
    "elicitation/create": CreateFormSessionElicitationRequest,
}
#: The result model of each client request.
RESULTS = {
    "initialize": InitializeResponse,
    "session/new": NewSessionResponse,
    "session/load": LoadSessionResponse,
    "session/list": ListSessionsResponse,
    "session/prompt": PromptResponse,
    "session/set_mode": SetSessionModeResponse,
    "session/set_config_option": SetSessionConfigOptionResponse,
}


def strict(model: Any, raw: Any, where: str) -> None:
    """``raw`` validates against ``model`` and nothing was dropped or salvaged."""
    parsed = model.model_validate(raw)
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    assert back == _without_none(raw), f"{where} does not match {model.__name__} exactly:\n{raw}\n!=\n{back}"


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def check_error(error: Any, where: str) -> None:
    assert isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str), \
        f"{where}: not a JSON-RPC error object: {error}"


# ---------------------------------------------------------------- the scripted model


def write_scripted_plugin(root: Path) -> Path:
    """A plugin distribution on PYTHONPATH adding the provider ``acp-scripted``:
    its turns come from the JSON file named by $SMOKE_ACP_TURNS (read when a
    session's agent is made). The turn ``"DESCRIBE"`` answers with what the
    model received last (text, images, tool results). It also prints to
    stdout, and so does a child it starts: none of that may reach the
    protocol stream (every line is checked)."""
    info = root / "smoke_acp_scripted-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-acp-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\nacp_scripted = smoke_acp_scripted\n")
    (root / "smoke_acp_scripted.py").write_text(textwrap.dedent(
        """
        import json, os
        from smoke_core import hookimpl

        def _describe(request):
            last = request.messages[-1]
            parts = []
            for block in last["content"]:
                if block.get("type") == "text":
                    parts.append("text: " + block["text"])
                elif block.get("type") == "image":
                    parts.append("image: %s, %d base64 chars" % (block.get("mime_type"), len(block.get("data") or "")))
                elif block.get("type") == "tool_result":
                    texts = [c.get("text", "") for c in block.get("content", [])]
                    parts.append("tool result: " + " ".join(texts))
            return "I received %d messages; last: %s" % (len(request.messages), " | ".join(parts))

        @hookimpl
        def register_providers(register):
            def factory(**kw):
                from smoke_core.testing import ScriptedProvider
                print("stray output from a plugin: smoke acp must keep it off the protocol")
                os.system("echo and from a child process that inherits stdout")
                with open(os.environ["SMOKE_ACP_TURNS"]) as fh:
                    turns = json.load(fh)
                turns = [_describe if t == "DESCRIBE" else t for t in turns]
                return ScriptedProvider(turns, model=kw.get("model") or "scripted-model")
            register("acp-scripted", factory, env_var="ACP_SCRIPTED_KEY", default_model="scripted-model")
        """
    ))
    return root


PLUGINS = "acp,acp_scripted,tools_filesystem,tools_search,tools_terminal,tools_agent,mcp"


# ---------------------------------------------------------------- the client


class Client:
    """The editor's side (``acp.interfaces.Client``): records updates and
    permission requests, answers them with ``answer(request) -> option_id``,
    and serves ``fs/*`` from open ``buffers`` over the disk."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[RequestPermissionRequest] = []
        self.answer: Callable[[RequestPermissionRequest], str | None] = lambda r: "allow_once"
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.elicitations: list[tuple[str, Any]] = []
        self._changed = asyncio.Condition()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
        async def waiting() -> Any:
            async with self._changed:
                while not (value := predicate()):
                    await self._changed.wait()
                return value

        return await asyncio.wait_for(waiting(), timeout)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append(RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options))
        await self._notify()
        choice = self.answer(self.permissions[-1])
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        await self._notify()

    #: ``elicit(message, mode) -> response`` answers ``elicitation/create`` (default: decline)
    elicit: Callable[[str, Any], Any] = staticmethod(lambda message, mode: DeclineElicitationResponse(action="decline"))

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append((message, mode))
        return self.elicit(message, mode)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        text = self.buffers[path] if path in self.buffers else Path(path).read_text()
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        Path(path).write_text(content)
        return WriteTextFileResponse()

    # helpers over the recorded updates
    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind) if getattr(u.content, "type", "") == "text")


class AgentProcess:
    """``smoke acp`` in a subprocess, its stdout teed: every line is kept for
    the strict check and fed to the SDK's client connection."""

    def __init__(self, proc: asyncio.subprocess.Process, client: Client) -> None:
        self.proc = proc
        self.client = client
        self.lines: list[bytes] = []
        self.sent: dict[Any, str] = {}
        self._feed = asyncio.StreamReader(limit=64 * 1024 * 1024)
        self._tee = asyncio.ensure_future(self._pump())
        # use_unstable_protocol: elicitation/create (forms) is still unstable in ACP
        self.conn = ClientSideConnection(client, proc.stdin, self._feed, observers=[self._observe],
                                         use_unstable_protocol=True)

    def _observe(self, event: Any) -> None:
        message = event.message
        if event.direction.value == "outgoing" and "method" in message and "id" in message:
            self.sent[message["id"]] = message["method"]

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                self._feed.feed_eof()
                return
            self.lines.append(line)
            self._feed.feed_data(line)

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]

    def validate(self) -> int:
        """Check every message the agent sent; returns how many."""
        count = 0
        for i, message in enumerate(self.messages()):
            where = f"message {i} from smoke acp"
            assert message.get("jsonrpc") == "2.0", f"{where}: {message}"
            if "method" in message:
                model = AGENT_TO_CLIENT.get(message["method"])
                assert model is not None, f"{where}: unexpected method {message['method']!r}"
                strict(model, message["params"], where)
            elif "error" in message:
                check_error(message["error"], where)
            else:
                method = self.sent.get(message.get("id"))
                assert method is not None, f"{where}: a response to no request: {message}"
                strict(RESULTS[method], message["result"], f"{where} ({method} result)")
            count += 1
        return count

    async def raw(self, data: bytes) -> None:
        """Write bytes to the agent's stdin directly (malformed input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def initialize(self, *, fs: bool = False) -> InitializeResponse:
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        return await self.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)

    async def stop(self) -> int:
        assert self.proc.stdin is not None
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), 30)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
            with contextlib.suppress(Exception):
                await self.conn.close()
            await self._tee
        return code


@pytest.fixture
def client_class() -> type[Client]:
    """The editor's class, for a test that changes how it answers (before ``spawn`` binds its handlers)."""
    return Client


@pytest.fixture
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_scripted_plugin(tmp_path_factory.mktemp("plugins"))


@pytest.fixture
def spawn(tmp_path: Path, plugin_dir: Path) -> Any:
    """``await spawn(workspace, turns, *args)`` → a running :class:`AgentProcess`."""
    started: list[AgentProcess] = []

    async def start(workspace: Path, turns: list[Any], *args: str, env: dict[str, str] | None = None) -> AgentProcess:
        turns_file = tmp_path / f"turns-{len(started)}.json"
        turns_file.write_text(json.dumps(turns))
        full_env = {**os.environ, "PYTHONPATH": str(plugin_dir), "SMOKE_LOAD_PLUGINS": PLUGINS,
                    "SMOKE_ACP_TURNS": str(turns_file), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        stderr = open(tmp_path / f"stderr-{len(started)}.log", "wb")  # noqa: SIM115 (kept for the test's life)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "smoke_core.cli", "acp", "--provider", "acp-scripted", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr, cwd=workspace,
            env=full_env, limit=64 * 1024 * 1024,
        )
        stderr.close()
        agent = AgentProcess(proc, Client())
        started.append(agent)
        return agent

    yield start
    for agent in started:
        if agent.proc.returncode is None:
            agent.proc.kill()


@pytest.fixture
async def acp_spawn(spawn: Any) -> AsyncIterator[Any]:
    yield spawn


# ---------------------------------------------------------------- processes


def marker() -> str:
    """A unique ``sleep`` duration: finds a command's processes on the host."""
    return f"{300 + random.random():.6f}"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def with_marker(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text.encode() in (entry / "cmdline").read_bytes() and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def all_gone(text: str, limit_s: float = 15.0) -> bool:
    """Poll (bounded) until no live process carries ``text`` in its command line."""
    deadline = time.monotonic() + limit_s
    while with_marker(text):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
