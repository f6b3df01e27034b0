"""API tests: the real Starlette app under a real uvicorn on 127.0.0.1, driven
with httpx; the agent is a real agent with a scripted model and real tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from smoke_ui.server import EventHub, create_app
from smoke_ui.serving import bind_socket, make_server, url_for

from smoke_core import ToolContext, create_agent, tool
from smoke_core.store import MemoryStore
from smoke_core.testing import ScriptedProvider

TIMEOUT = 30


@tool(presentation={"label": "Write note", "icon": "📝", "tone": "warning", "group": "notes"}, group="notes")
def write_note(text: str, ctx: ToolContext) -> str:
    """Write a note (mutating: needs approval)."""
    ctx.emit_output(f"writing {text}\n")
    ctx.emit("custom.unknown_event", {"anything": [1, 2, 3]})
    return f"wrote {text}"


@tool(read_only=True, presentation={"label": "Ask the user", "icon": "❓", "tone": "info", "group": "agent"},
      group="agent")
async def ask(question: str, ctx: ToolContext) -> str:
    """Ask the user a question."""
    answer = await ctx.ask_user(question, options=["yes", "no"])
    return f"user said {answer}"


def full_script() -> list[Any]:
    return [
        {"thought": "I should write a note.", "text": "Writing the note.",
         "tool_calls": [{"id": "call_w", "name": "write_note", "input": {"text": "hi"}}],
         "usage": {"input_tokens": 10, "output_tokens": 5}},
        {"tool_calls": [{"id": "call_q", "name": "ask", "input": {"question": "Proceed?"}}],
         "usage": {"input_tokens": 20, "output_tokens": 3}},
        {"text": "All done.", "usage": {"input_tokens": 30, "output_tokens": 2}},
    ]


def write_only_script() -> list[Any]:
    return [
        {"tool_calls": [{"id": "call_w", "name": "write_note", "input": {"text": "hi"}}]},
        "Finished.",
    ]


def scripted_factory(workspace: Path, script: Callable[[], list[Any]]) -> Callable[..., Any]:
    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(
            workspace, provider=ScriptedProvider(script(), chunk_size=4), autoload_plugins=False,
            plugins=[], tools=[write_note, ask], store=store, session_id=session_id,
        )

    return factory


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """Serve ``app`` with uvicorn in this loop; the socket is bound first, so
    requests made before uvicorn is ready wait in the backlog."""
    sock = bind_socket("127.0.0.1", 0)
    server = make_server(app)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with httpx.AsyncClient(base_url=url_for(sock, "127.0.0.1"), timeout=TIMEOUT) as client:
            yield client
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, TIMEOUT)
        sock.close()


def auth(app: Any) -> dict[str, str]:
    return {"X-Smoke-Token": app.state.ui.token}


class SSE:
    """A minimal SSE reader over an httpx streaming response."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()
        self.seen: list[tuple[int | None, dict[str, Any]]] = []

    async def next(self) -> tuple[int | None, dict[str, Any]]:
        event_id: int | None = None
        data: list[str] = []
        async with asyncio.timeout(TIMEOUT):
            async for line in self.lines:
                if line == "":
                    if data:
                        item = (event_id, json.loads("\n".join(data)))
                        self.seen.append(item)
                        return item
                    continue
                if line.startswith(":"):
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "id":
                    event_id = int(value)
                elif field == "data":
                    data.append(value)
        raise EOFError("the event stream ended")

    async def until(self, type: str) -> dict[str, Any]:
        while True:
            _, event = await self.next()
            if event["type"] == type:
                return event


@contextlib.asynccontextmanager
async def events(client: httpx.AsyncClient, app: Any, **params: Any) -> AsyncIterator[SSE]:
    async with client.stream("GET", "/api/events", headers=auth(app), params=params) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield SSE(response)


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return create_app(scripted_factory(tmp_path, full_script), store=MemoryStore(), workspace=tmp_path)


# ---------------------------------------------------------------- security


async def test_api_refuses_requests_without_the_token(app: Any) -> None:
    async with serving(app) as client:
        assert (await client.get("/api/state")).status_code == 403
        wrong = await client.get("/api/state", headers={"X-Smoke-Token": "not-the-token"})
        assert wrong.status_code == 403
        assert "token" in wrong.json()["error"]
        assert (await client.get("/api/events")).status_code == 403
        assert (await client.post("/api/runs", json={"task": "x"})).status_code == 403
        assert (await client.post("/api/abort")).status_code == 403
        assert (await client.get("/api/sessions")).status_code == 403
        assert (await client.get("/")).status_code == 403
        assert app.state.ui.status == "idle"
        # right token, by header or query parameter
        assert (await client.get("/api/state", headers=auth(app))).status_code == 200
        assert (await client.get("/api/state", params={"token": app.state.ui.token})).status_code == 200
        # health and static assets carry no data and need no token
        assert (await client.get("/healthz")).json() == {"ok": True}
        js = await client.get("/static/app.js")
        assert js.status_code == 200 and "EventSource" in js.text


async def test_page_carries_the_token_and_security_headers(app: Any) -> None:
    async with serving(app) as client:
        page = await client.get("/", params={"token": app.state.ui.token})
        assert page.status_code == 200
        assert f'<meta name="smoke-token" content="{app.state.ui.token}">' in page.text
        assert 'data-testid="task-form"' in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer"


async def test_state_changing_requests_from_a_foreign_origin_are_refused(app: Any) -> None:
    async with serving(app) as client:
        own = str(client.base_url).rstrip("/")
        for origin in ("http://evil.example", "null", own.replace("127.0.0.1", "localhost")):
            res = await client.post("/api/runs", json={"task": "go"}, headers={**auth(app), "Origin": origin})
            assert res.status_code == 403, origin
            assert "origin" in res.json()["error"]
        assert (await client.post("/api/abort", headers={**auth(app), "Origin": "http://evil.example"})).status_code == 403
        assert app.state.ui.status == "idle" and not app.state.ui.running
        # a GET from elsewhere is not state-changing (and still needs the token)
        assert (await client.get("/api/state", headers={**auth(app), "Origin": "http://evil.example"})).status_code == 200
        res = await client.post("/api/runs", json={"task": "go"}, headers={**auth(app), "Origin": own})
        assert res.status_code == 202
        app.state.ui.abort()
        await app.state.ui.wait_idle()


# ---------------------------------------------------------------- runs


async def test_presentations_come_before_the_first_event(app: Any) -> None:
    async with serving(app) as client:
        state = (await client.get("/api/state", headers=auth(app))).json()
        assert state["presentations"]["write_note"] == {"label": "Write note", "icon": "📝", "tone": "warning",
                                                        "group": "notes"}
        assert state["presentations"]["ask"]["icon"] == "❓"
        assert state["status"] == "idle" and state["running"] is False and state["demo"] is False
        async with events(client, app) as sse:
            seq, hello = await sse.next()
            assert seq is None and hello["type"] == "ui.hello"
            assert hello["data"]["presentations"]["write_note"]["label"] == "Write note"


async def test_a_run_streams_in_order_and_takes_approvals_and_answers(app: Any) -> None:
    async with serving(app) as client:
        async with events(client, app) as sse:
            await sse.until("ui.hello")
            res = await client.post("/api/runs", json={"task": "write a note"}, headers=auth(app))
            assert res.status_code == 202
            session_id = res.json()["session_id"]

            required = await sse.until("permission.required")
            assert required["data"]["tool_call_id"] == "call_w"
            assert required["data"]["tool_name"] == "write_note"
            assert required["data"]["input"] == {"text": "hi"}
            state = (await client.get("/api/state", headers=auth(app))).json()
            assert [p["tool_call_id"] for p in state["pending_permissions"]] == ["call_w"]
            assert state["running"] is True

            ok = await client.post("/api/permissions/call_w", json={"decision": "allow"}, headers=auth(app))
            assert ok.status_code == 200 and ok.json() == {"ok": True, "decision": "allow"}

            question = await sse.until("ask_user.required")
            assert question["data"]["question"] == "Proceed?"
            assert question["data"]["options"] == ["yes", "no"]
            ok = await client.post("/api/questions/call_q", json={"text": "yes"}, headers=auth(app))
            assert ok.status_code == 200

            done = await sse.until("run.completed")
            assert done["data"]["text"] == "All done."
            assert done["session_id"] == session_id

        ids = [i for i, _ in sse.seen if i is not None]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        types = [e["type"] for _, e in sse.seen]
        assert types[0] == "ui.hello" and types[1] == "run.started" and types[-1] == "run.completed"
        order = ["text.thought", "text.delta", "text.end", "tool.started", "permission.required",
                 "permission.resolved", "tool.output", "custom.unknown_event", "tool.completed",
                 "ask_user.required", "ask_user.response"]
        positions = [types.index(t) for t in order]
        assert positions == sorted(positions), types
        assert types.count("usage.updated") == 3
        deltas = "".join(e["data"]["text"] for _, e in sse.seen if e["type"] == "text.delta")
        assert deltas == "Writing the note.All done."
        started = next(e for _, e in sse.seen if e["type"] == "tool.started")
        assert started["data"]["presentation"]["icon"] == "📝"
        completed = [e for _, e in sse.seen if e["type"] == "tool.completed"]
        assert completed[0]["data"]["content"] == [{"type": "text", "text": "wrote hi"}]
        assert completed[1]["data"]["content"] == [{"type": "text", "text": "user said yes"}]
        resolved = next(e for _, e in sse.seen if e["type"] == "permission.resolved")
        assert resolved["data"] == {"tool_call_id": "call_w", "decision": "allow"}
        state = (await client.get("/api/state", headers=auth(app))).json()
        assert state["status"] == "completed" and state["running"] is False
        assert state["usage"]["input_tokens"] == 60 and state["usage"]["output_tokens"] == 10


async def test_deny_reaches_the_model_as_a_tool_error(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, write_only_script), store=MemoryStore())
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "write"}, headers=auth(app))
        await sse.until("permission.required")
        res = await client.post("/api/permissions/call_w", json={"decision": "deny"}, headers=auth(app))
        assert res.status_code == 200
        completed = await sse.until("tool.completed")
        assert completed["data"]["is_error"] is True
        assert completed["data"]["error"]["code"] == "permission_denied"
        done = await sse.until("run.completed")
        assert done["data"]["text"] == "Finished."
    assert not (tmp_path / "note").exists()


async def test_allow_for_this_run(tmp_path: Path) -> None:
    def twice() -> list[Any]:
        return [
            {"tool_calls": [{"id": "a1", "name": "write_note", "input": {"text": "1"}}]},
            {"tool_calls": [{"id": "a2", "name": "write_note", "input": {"text": "2"}}]},
            "ok",
        ]

    app = create_app(scripted_factory(tmp_path, twice), store=MemoryStore())
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "write twice"}, headers=auth(app))
        await sse.until("permission.required")
        res = await client.post("/api/permissions/a1", json={"decision": "allow_run"}, headers=auth(app))
        assert res.status_code == 200
        await sse.until("run.completed")
    types = [e["type"] for _, e in sse.seen]
    assert types.count("permission.required") == 1
    assert types.count("tool.completed") == 2


async def test_bad_requests_get_clear_errors(app: Any) -> None:
    async with serving(app) as client, events(client, app) as sse:
        h = auth(app)
        empty = await client.post("/api/runs", json={"task": "  "}, headers=h)
        assert empty.status_code == 400 and "task" in empty.json()["error"]
        bad_json = await client.post("/api/runs", content=b"{nope", headers={**h, "Content-Type": "application/json"})
        assert bad_json.status_code == 400 and "JSON" in bad_json.json()["error"]
        bad_sid = await client.post("/api/runs", json={"task": "x", "session_id": "../etc"}, headers=h)
        assert bad_sid.status_code == 400
        nothing = await client.post("/api/permissions/call_w", json={"decision": "allow"}, headers=h)
        assert nothing.status_code == 404 and "no approval is pending" in nothing.json()["error"]
        assert (await client.post("/api/questions/call_q", json={"text": "x"}, headers=h)).status_code == 404
        assert (await client.post("/api/abort", headers=h)).json() == {"aborted": False}

        assert (await client.post("/api/runs", json={"task": "go"}, headers=h)).status_code == 202
        await sse.until("permission.required")
        busy = await client.post("/api/runs", json={"task": "again"}, headers=h)
        assert busy.status_code == 409 and "in progress" in busy.json()["error"]
        assert (await client.post("/api/sessions", headers=h)).status_code == 409
        wrong = await client.post("/api/permissions/call_w", json={"decision": "maybe"}, headers=h)
        assert wrong.status_code == 400 and "allow_run" in wrong.json()["error"]
        assert (await client.post("/api/permissions/call_w", json={}, headers=h)).status_code == 400
        assert (await client.post("/api/permissions/other", json={"decision": "allow"}, headers=h)).status_code == 404
        assert (await client.get("/api/events", headers=h, params={"since": "x"})).status_code == 400
        aborted = await client.post("/api/abort", headers=h)
        assert aborted.json() == {"aborted": True}
        await sse.until("run.interrupted")


async def test_abort_stops_a_run_waiting_for_approval(app: Any) -> None:
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "go"}, headers=auth(app))
        await sse.until("permission.required")
        assert (await client.post("/api/abort", headers=auth(app))).json() == {"aborted": True}
        interrupted = await sse.until("run.interrupted")
        assert interrupted["data"]["reason"] == "aborted"
        await app.state.ui.wait_idle()
        state = (await client.get("/api/state", headers=auth(app))).json()
        assert state["status"] == "interrupted" and state["running"] is False
        assert state["pending_permissions"] == []
        types = [e["type"] for _, e in sse.seen]
        assert "tool.completed" in types and "run.completed" not in types


async def test_reconnecting_replays_what_was_missed(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, write_only_script), store=MemoryStore())
    async with serving(app) as client:
        async with events(client, app) as sse:
            await client.post("/api/runs", json={"task": "write"}, headers=auth(app))
            await sse.until("permission.required")
            await client.post("/api/permissions/call_w", json={"decision": "allow"}, headers=auth(app))
            await sse.until("run.completed")
        live = [(i, e) for i, e in sse.seen if i is not None]
        # a late page sees the whole run, in the same order
        async with events(client, app, since=0) as again:
            await again.until("ui.hello")
            replay = [await again.next() for _ in live]
        assert replay == live
        # Last-Event-ID resumes after the given event
        middle = live[len(live) // 2][0]
        headers = {**auth(app), "Last-Event-ID": str(middle)}
        async with client.stream("GET", "/api/events", headers=headers) as response:
            rest = SSE(response)
            await rest.until("ui.hello")
            first_id, _ = await rest.next()
        assert first_id == middle + 1


async def test_sessions_are_listed_and_continued(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, lambda: ["first answer", "second answer"]), store=MemoryStore())
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        assert (await client.get("/api/sessions", headers=h)).json()["sessions"] == []
        sid = (await client.post("/api/runs", json={"task": "first task"}, headers=h)).json()["session_id"]
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        again = await client.post("/api/runs", json={"task": "second task", "session_id": sid}, headers=h)
        assert again.json()["session_id"] == sid
        done = await sse.until("run.completed")
        assert done["data"]["text"] == "second answer"
        await app.state.ui.wait_idle()

        listing = (await client.get("/api/sessions", headers=h)).json()
        assert [s["session_id"] for s in listing["sessions"]] == [sid]
        assert listing["sessions"][0]["title"] == "first task"
        assert listing["sessions"][0]["message_count"] == 4
        transcript = (await client.get(f"/api/sessions/{sid}", headers=h)).json()
        texts = [b["text"] for m in transcript["messages"] for b in m["content"] if b["type"] == "text"]
        assert texts == ["first task", "first answer", "second task", "second answer"]
        missing = await client.get("/api/sessions/ses_nope", headers=h)
        assert missing.status_code == 404 and "no session" in missing.json()["error"]

        new = await client.post("/api/sessions", headers=h)
        assert new.status_code == 201 and new.json()["session_id"] != sid
        third = await client.post("/api/runs", json={"task": "third task"}, headers=h)
        assert third.json()["session_id"] == new.json()["session_id"]
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        assert len((await client.get("/api/sessions", headers=h)).json()["sessions"]) == 2


async def test_fresh_session_per_run(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, lambda: ["only answer"]), store=MemoryStore(),
                     fresh_session_per_run=True, demo_label="simulated")
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        first = (await client.post("/api/runs", json={"task": "a"}, headers=h)).json()["session_id"]
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        second = (await client.post("/api/runs", json={"task": "b", "session_id": first}, headers=h)).json()
        assert second["session_id"] != first
        done = await sse.until("run.completed")
        assert done["data"]["text"] == "only answer"
        state = (await client.get("/api/state", headers=h)).json()
        assert state["demo"] is True and state["demo_label"] == "simulated"


async def test_a_factory_failure_is_reported(tmp_path: Path) -> None:
    calls = []

    def broken(*, session_id: str, store: Any) -> Any:
        calls.append(session_id)
        if len(calls) > 1:
            raise ValueError("no provider given")
        return scripted_factory(tmp_path, lambda: ["x"])(session_id=session_id, store=store)

    app = create_app(broken, store=MemoryStore())
    async with serving(app) as client:
        await client.get("/api/state", headers=auth(app))
        res = await client.post("/api/runs", json={"task": "x", "session_id": "ses_other"}, headers=auth(app))
        assert res.status_code == 500
        assert "could not create the agent: ValueError: no provider given" in res.json()["error"]


async def test_shutdown_ends_open_streams_and_aborts_the_run(app: Any) -> None:
    sock = bind_socket("127.0.0.1", 0)
    server = make_server(app)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    async with (
        httpx.AsyncClient(base_url=url_for(sock, "127.0.0.1"), timeout=TIMEOUT) as client,
        events(client, app) as sse,
    ):
        await client.post("/api/runs", json={"task": "go"}, headers=auth(app))
        await sse.until("permission.required")
        server.should_exit = True
        with pytest.raises(EOFError):
            while True:  # the server ends the stream instead of waiting for the page to leave
                await sse.next()
    await asyncio.wait_for(task, TIMEOUT)
    sock.close()
    assert app.state.ui.hub.closed
    assert not app.state.ui.running
    assert app.state.ui.status == "interrupted"


def test_event_hub_replays_and_closes() -> None:
    hub = EventHub(max_log=3)
    for n in range(5):
        hub.publish({"type": "t", "data": {"n": n}})
    backlog, queue = hub.subscribe(since=0)
    assert [json.loads(d)["data"]["n"] for _, d in backlog] == [2, 3, 4]
    hub.publish({"type": "t", "data": {"n": 5}})
    assert json.loads(queue.get_nowait()[1])["data"]["n"] == 5
    hub.close()
    assert queue.get_nowait() is None
    _, late = hub.subscribe(since=0)
    assert late.get_nowait() is None
