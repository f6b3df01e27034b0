"""Logging in to an OAuth-protected MCP server: the SDK's own server with its
auth settings on 127.0.0.1 (tests/smoke_mcp_oauth_server.py), the real
``smoke mcp login`` / ``logout`` / ``list`` commands, runs that use, refresh
and lose the login, and the places a token must never appear."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import smoke_mcp

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider

HERE = Path(__file__).parent
OAUTH_SERVER = str(HERE / "smoke_mcp_oauth_server.py")
BROWSER = HERE / "conformance" / "browser.py"


class OAuthServer:
    def __init__(self, url: str, grants: Path, proc: subprocess.Popen[str]) -> None:
        self.url = url
        self.grants_log = grants
        self.proc = proc

    def grants(self) -> list[dict[str, Any]]:
        if not self.grants_log.exists():
            return []
        return [json.loads(line) for line in self.grants_log.read_text().splitlines()]

    def tokens(self) -> list[str]:
        """Every access and refresh token value the server handed out (from its log)."""
        return [g[k] for g in self.grants() for k in ("access_token", "refresh_token") if g.get(k)]


def _start(tmp_path: Path, **env: str) -> OAuthServer:
    grants = tmp_path / "grants.jsonl"
    proc = subprocess.Popen([sys.executable, OAUTH_SERVER], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "GRANTS_LOG": str(grants), **env})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return OAuthServer(f"http://127.0.0.1:{line.split()[1]}/mcp", grants, proc)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The person's environment: their own config and state folders, a browser that approves."""
    values = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "BROWSER": f"{sys.executable} {BROWSER} %s",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "SMOKE_LOAD_PLUGINS": "mcp",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **values}


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[OAuthServer]]:
    started: list[OAuthServer] = []
    yield started
    for s in started:
        s.proc.terminate()
        s.proc.wait(timeout=10)
        assert s.proc.stdout is not None
        s.proc.stdout.close()


def _configure(env: dict[str, str], url: str) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcp_servers": {"docs": {"type": "http", "url": url}}}))


def _smoke(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


async def _run(workspace: Path, *, answer_login: bool = False, store: Any = None) -> tuple[Any, list[Any]]:
    """One run calling docs__whoami. A question is answered "log in" (``answer_login``) or
    with nothing, as the terminal does when nobody is there."""
    provider = ScriptedProvider([{"tool_calls": [{"name": "docs__whoami", "input": {}}]}, "done"])
    agent = create_agent(workspace, provider=provider, autoload_plugins=False, plugins=[smoke_mcp],
                         permission="allow-all", store=store, session_id="s1" if store is not None else None)
    events: list[Any] = []
    agent.on_any(events.append)
    agent.on("ask_user.required", lambda e: agent.respond(e.data["tool_call_id"], "log in" if answer_login else ""))
    async with agent:
        result = await agent.run("who am i?")
    return result, events


def _whoami(events: list[Any]) -> dict[str, Any] | None:
    done = [e.data for e in events if e.type == "tool.completed" and e.data["tool_name"] == "docs__whoami"]
    if not done or done[0]["is_error"]:
        return None
    return json.loads(done[0]["content"][0]["text"])


def _warnings(events: list[Any]) -> list[str]:
    return [e.data["error"]["message"] for e in events if e.type == "run.warning"]


@pytest.mark.slow
async def test_login_a_call_expiry_and_refresh_logout_and_no_token_anywhere(
        tmp_path: Path, env: dict[str, str], servers: list[OAuthServer], caplog: pytest.LogCaptureFixture) -> None:
    from smoke_mcp._oauth import TokenStore, token_file

    from smoke_core.plugin import SQLiteStore

    caplog.set_level(logging.DEBUG)
    server = _start(tmp_path)
    servers.append(server)
    ws = tmp_path / "ws"
    ws.mkdir()
    _configure(env, server.url)

    before = _smoke(env, "mcp", "list", "--json", cwd=ws)
    assert json.loads(before.stdout)[0]["auth"] == "not logged in (smoke mcp login docs)"

    login = _smoke(env, "mcp", "login", "docs", cwd=ws)
    assert login.returncode == 0, login.stdout + login.stderr
    assert "logged in to 'docs'" in login.stdout and str(token_file()) in login.stdout
    assert "Opened your browser at" in login.stderr and "127.0.0.1" in login.stderr
    assert [g["grant"] for g in server.grants()] == ["register", "authorization_code"]
    assert stat.S_IMODE(token_file().stat().st_mode) == 0o600

    listed = _smoke(env, "mcp", "list", "--json", cwd=ws)
    auth = json.loads(listed.stdout)[0]["auth"]
    assert auth.startswith("logged in, ") and auth.endswith("min left (refreshes itself)"), auth

    # a run uses the stored login: the server knows the client, no new grant
    db = tmp_path / "sessions.db"
    result, events = await _run(ws, store=SQLiteStore(db))
    assert result.status == "completed" and _whoami(events) is not None
    assert [g["grant"] for g in server.grants()] == ["register", "authorization_code"]

    # time passes: the access token has expired; the next run refreshes it at the token endpoint first
    store = TokenStore()
    key = server.url
    record = store.get(key)
    assert record is not None
    first_access = record["tokens"]["access_token"]
    record["expires_at"] = time.time() - 60
    store.put(key, record)
    assert json.loads(_smoke(env, "mcp", "list", "--json", cwd=ws).stdout)[0]["auth"] == "login expired (refreshes itself)"
    result, more = await _run(ws, store=SQLiteStore(db))
    events += more
    assert result.status == "completed" and _whoami(more) is not None
    assert [g["grant"] for g in server.grants()] == ["register", "authorization_code", "refresh_token"]
    assert store.get(key)["tokens"]["access_token"] not in (first_access, None)  # type: ignore[index]

    # logged out: the tokens are gone, and a run without a person says which command fixes it
    logout = _smoke(env, "mcp", "logout", "docs", cwd=ws)
    assert logout.returncode == 0 and "logged out of 'docs'" in logout.stdout
    assert store.get(key) is None
    result, last = await _run(ws)
    events += last
    assert result.status == "completed" and _whoami(last) is None
    warning = next(w for w in _warnings(last) if "log in" in w)
    assert "MCP server 'docs' needs you to log in" in warning and "smoke mcp login docs" in warning
    assert "Traceback" not in warning

    # the token values never appear in the session database, the events (what --json prints) or the logs
    tokens = server.tokens()
    assert len(tokens) == 4 and first_access in tokens  # two access and two refresh tokens
    texts = {
        "sqlite": db.read_bytes().decode("utf-8", "replace"),
        "events": "\n".join(json.dumps(e.to_dict(), default=str) for e in events),
        "logs": caplog.text,
        "cli": "".join(p.stdout + p.stderr for p in (before, login, listed, logout)),
    }
    for where, text in texts.items():
        for token in tokens:
            assert token not in text, f"a token appears in the {where}"


@pytest.mark.slow
async def test_a_run_offers_the_login_and_a_person_takes_it(tmp_path: Path, env: dict[str, str],
                                                             servers: list[OAuthServer]) -> None:
    server = _start(tmp_path)
    servers.append(server)
    ws = tmp_path / "ws"
    ws.mkdir()
    _configure(env, server.url)
    result, events = await _run(ws, answer_login=True)
    asked = [e.data for e in events if e.type == "ask_user.required"]
    assert len(asked) == 1 and asked[0]["options"] == ["log in", "not now"]
    assert "MCP server 'docs'" in asked[0]["question"] and "needs you to log in" in asked[0]["question"]
    assert result.status == "completed" and _whoami(events) is not None
    assert [g["grant"] for g in server.grants()] == ["register", "authorization_code"]


@pytest.mark.slow
@pytest.mark.parametrize(("server_env", "needle"), [
    ({"LOGIN": "deny"}, "the login was cancelled at the authorization server: the person said no"),
    ({"LOGIN": "wrong-state"}, "the browser's answer does not belong to this login (wrong state)"),
    ({"TOKEN_ENDPOINT": "error"}, "failed at the token endpoint"),
])
async def test_a_login_that_goes_wrong_is_one_message(tmp_path: Path, env: dict[str, str], servers: list[OAuthServer],
                                                     server_env: dict[str, str], needle: str) -> None:
    server = _start(tmp_path, **server_env)
    servers.append(server)
    ws = tmp_path / "ws"
    ws.mkdir()
    _configure(env, server.url)
    proc = _smoke(env, "mcp", "login", "docs", cwd=ws)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    error = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and needle in error[0] and "MCP server 'docs'" in error[0], proc.stderr
    assert "smoke mcp login docs" in error[0]
    # in a run the same problem leaves the server out, and the run goes on
    result, events = await _run(ws, answer_login=True)
    assert result.status == "completed" and _whoami(events) is None
    assert any(needle in w for w in _warnings(events))


@pytest.mark.slow
def test_missing_metadata_and_no_registration_is_one_message(tmp_path: Path, env: dict[str, str]) -> None:
    """A server that answers 401 but publishes no OAuth metadata and no registration endpoint."""
    proc = subprocess.Popen([sys.executable, str(HERE / "smoke_mcp_test_server.py"), "http", "tok-123"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().split()[1]
        ws = tmp_path / "ws"
        ws.mkdir()
        _configure(env, f"http://127.0.0.1:{port}/mcp")
        out = _smoke(env, "mcp", "login", "docs", cwd=ws)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    error = [line for line in out.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "MCP server 'docs'" in error[0], out.stderr
    assert "oauth.client_id" in error[0] or "authorization server" in error[0]


@pytest.mark.slow
def test_tokens_go_to_the_keyring_where_there_is_one(tmp_path: Path, env: dict[str, str],
                                                      servers: list[OAuthServer]) -> None:
    pytest.importorskip("keyrings.alt")
    from smoke_mcp._oauth import token_file

    server = _start(tmp_path)
    servers.append(server)
    ws = tmp_path / "ws"
    ws.mkdir()
    _configure(env, server.url)
    keyring_env = {**env, "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring"}
    login = _smoke(keyring_env, "mcp", "login", "docs", cwd=ws)
    assert login.returncode == 0, login.stderr
    assert "the system keyring (PlaintextKeyring" in login.stdout
    assert not token_file().exists()
    stored = list((tmp_path / "data").rglob("keyring_pass.cfg"))
    assert stored and "[smoke_2Dmcp]" in stored[0].read_text()  # the service, as keyrings.alt writes it
    assert "logged out of 'docs'" in _smoke(keyring_env, "mcp", "logout", "docs", cwd=ws).stdout
