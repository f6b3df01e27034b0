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
from smoke_core.plugin import MemoryStore
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
        # a late page sees the whole run, in the same order, minus the chunks a
        # finished message or tool call no longer needs (text.end and
        # tool.completed hold them whole)
        kept = [(i, e) for i, e in live if e["type"] not in ("text.delta", "tool.output")]
        assert len(kept) < len(live)
        async with events(client, app, since=0) as again:
            await again.until("ui.hello")
            replay = [await again.next() for _ in kept]
        assert replay == kept
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
    hub = EventHub(budget_bytes=4096)
    for n in range(50):
        hub.publish({"type": "t", "data": {"n": n, "pad": "x" * 100}})
    assert hub.replay_bytes <= 4096
    backlog, sub = hub.subscribe(since=0)
    numbers = [json.loads(d)["data"]["n"] for _, d in backlog]
    assert numbers == list(range(50 - len(numbers), 50)) and 0 < len(numbers) < 50  # the newest, in order
    assert hub.gap_after(0) and not hub.gap_after(49)
    hub.publish({"type": "t", "data": {"n": 50}})
    assert json.loads(sub.get_nowait()[1])["data"]["n"] == 50
    hub.close()
    assert sub.get_nowait() is None
    _, late = hub.subscribe(since=0)
    assert late.get_nowait() is None


# ---------------------------------------------------------------- markdown


XSS_TEXT = (
    "Here is the fix:\n\n```python\ndef f():\n    return 1\n```\n\n- one\n- two\n\n"
    "See [the docs](https://example.org/docs) or [this](javascript:alert(1)).\n\n"
    "<img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script> ![pic](https://evil.example/p.png?k=SECRET)"
)


async def test_markdown_is_rendered_on_the_server_and_html_from_the_model_stays_text(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, lambda: [XSS_TEXT]), store=MemoryStore())
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        sid = (await client.post("/api/runs", json={"task": "fix it"}, headers=h)).json()["session_id"]
        end = await sse.until("text.end")
        done = await sse.until("run.completed")
        await app.state.ui.wait_idle()
        transcript = (await client.get(f"/api/sessions/{sid}", headers=h)).json()
        css = await client.get("/static/highlight.css")
    html = end["ui"]["html"]
    assert end["data"]["text"] == XSS_TEXT  # the event itself is untouched
    assert '<pre><code class="language-python"><span class="tok-k">def</span>' in html
    assert "<li>one</li>" in html
    assert ('<a href="https://example.org/docs" target="_blank" rel="noopener noreferrer" '
            'title="https://example.org/docs">the docs</a>') in html
    assert "javascript:" not in html.replace("[this](javascript:alert(1))", "")
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;" in html
    assert "<img" not in html and "<script" not in html
    # a Markdown image becomes a link the person may click, never a fetch the page makes by itself
    assert '<a href="https://evil.example/p.png?k=SECRET"' in html and "🖼 pic" in html
    assert done["ui"]["html"] == html
    assistant = [m for m in transcript["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"][0]["html"] == html
    assert css.status_code == 200 and ".md pre code .tok-k" in css.text


# ---------------------------------------------------------------- diffs


@tool(kind="edit", permission_key="path", presentation={"label": "Edit file", "icon": "📝", "tone": "warning"})
def edit_file(path: str, old_string: str, new_string: str, ctx: ToolContext) -> str:
    """Replace old_string with new_string."""
    target = ctx.workspace.resolve(path, write=True)
    target.write_text(target.read_text().replace(old_string, new_string, 1))
    return f"edited {path}"


@tool(kind="edit", permission_key="path", presentation={"label": "Write file", "icon": "✍️", "tone": "warning"})
def write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file."""
    ctx.workspace.resolve(path, write=True).write_text(content)
    return f"wrote {path}"


@tool(kind="edit", permission_key="path", presentation={"label": "Replace lines", "icon": "🔁", "tone": "warning"})
def replace_lines(path: str, start_line: int, end_line: int, replacement: str, ctx: ToolContext) -> str:
    """Replace lines start_line..end_line."""
    target = ctx.workspace.resolve(path, write=True)
    lines = target.read_text().splitlines(keepends=True)
    lines[start_line - 1:end_line] = [replacement]
    target.write_text("".join(lines))
    return f"replaced lines in {path}"


@tool(kind="edit", presentation={"label": "Apply patch", "icon": "🩹", "tone": "warning"})
def apply_patch(patch: str, ctx: ToolContext) -> str:
    """Apply a patch (the tests deny it)."""
    raise AssertionError("the test denies apply_patch; it must not run")


PATCH = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n"


def edit_script() -> list[Any]:
    return [
        {"tool_calls": [{"id": "e1", "name": "edit_file",
                         "input": {"path": "app.py", "old_string": "y = 3", "new_string": "y = 4"}}]},
        {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "new.txt", "content": "alpha\nbeta\n"}}]},
        {"tool_calls": [{"id": "r1", "name": "replace_lines",
                         "input": {"path": "app.py", "start_line": 1, "end_line": 1, "replacement": "x = 10\n"}}]},
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"patch": PATCH}}]},
        "edited",
    ]


async def test_edit_approvals_carry_a_unified_diff(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 3\nz = 5\n")

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(tmp_path, provider=ScriptedProvider(edit_script()), autoload_plugins=False, plugins=[],
                            tools=[edit_file, write_file, replace_lines, apply_patch], store=store,
                            session_id=session_id)

    app = create_app(factory, store=MemoryStore())
    h = auth(app)
    seen: dict[str, dict[str, Any]] = {}
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "edit"}, headers=h)
        for call_id, decision in (("e1", "allow"), ("w1", "allow"), ("r1", "allow"), ("p1", "deny")):
            required = await sse.until("permission.required")
            assert required["data"]["tool_call_id"] == call_id
            seen[call_id] = required["ui"]["diff"]
            pending = (await client.get("/api/state", headers=h)).json()["pending_permissions"]
            assert pending[0]["ui"]["diff"] == seen[call_id]  # a page that loads now sees the same
            await client.post(f"/api/permissions/{call_id}", json={"decision": decision}, headers=h)
        await sse.until("run.completed")
    edit = seen["e1"]
    assert edit["path"] == "app.py" and edit["note"] is None
    assert edit["text"].splitlines() == ["--- a/app.py", "+++ b/app.py", "@@ -1,3 +1,3 @@", " x = 1", "-y = 3",
                                         "+y = 4", " z = 5"]
    assert (edit["added"], edit["removed"]) == (1, 1)
    write = seen["w1"]
    assert write["note"] == "creates a new file"
    assert write["text"].splitlines()[-2:] == ["+alpha", "+beta"]
    lines = seen["r1"]
    assert lines["text"].splitlines()[2:] == ["@@ -1,3 +1,3 @@", "-x = 1", "+x = 10", " y = 4", " z = 5"]
    assert seen["p1"]["text"] == PATCH.rstrip("\n")
    assert (tmp_path / "app.py").read_text() == "x = 10\ny = 4\nz = 5\n"
    assert (tmp_path / "new.txt").read_text() == "alpha\nbeta\n"


# ---------------------------------------------------------------- sessions: rename, delete


async def test_sessions_can_be_renamed_and_deleted(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, full_script), store=MemoryStore())
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        first = (await client.post("/api/runs", json={"task": "first"}, headers=h)).json()["session_id"]
        await sse.until("permission.required")
        # a running session can be neither renamed nor deleted
        busy = await client.patch(f"/api/sessions/{first}", json={"title": "x"}, headers=h)
        assert busy.status_code == 409 and "running" in busy.json()["error"]
        assert (await client.delete(f"/api/sessions/{first}", headers=h)).status_code == 409
        await client.post("/api/abort", headers=h)
        await sse.until("run.interrupted")
        await app.state.ui.wait_idle()

        renamed = await client.patch(f"/api/sessions/{first}", json={"title": "  Tidy the README  "}, headers=h)
        assert renamed.status_code == 200 and renamed.json() == {"session_id": first, "title": "Tidy the README"}
        listing = (await client.get("/api/sessions", headers=h)).json()["sessions"]
        assert [s["title"] for s in listing] == ["Tidy the README"]
        for bad, words in (({"title": ""}, "non-empty"), ({"title": 5}, "string"), ({"title": "a\nb"}, "U+000A"),
                           ({"title": "\x1b[2J"}, "U+001B"), ({"title": "t" * 201}, "limit is 200")):
            res = await client.patch(f"/api/sessions/{first}", json=bad, headers=h)
            assert res.status_code == 400 and words in res.json()["error"], (bad, res.text)
        assert (await client.patch("/api/sessions/ses_none", json={"title": "x"}, headers=h)).status_code == 404
        assert (await client.delete("/api/sessions/ses_none", headers=h)).status_code == 404

        assert app.state.ui.session_id == first
        gone = await client.delete(f"/api/sessions/{first}", headers=h)
        assert gone.status_code == 200
        assert gone.json()["deleted"] == first and gone.json()["current"] != first  # the next task starts afresh
        assert (await client.get("/api/sessions", headers=h)).json()["sessions"] == []
        assert (await client.get(f"/api/sessions/{first}", headers=h)).status_code == 404
        # from another site: refused before anything happens
        foreign = await client.delete(f"/api/sessions/{first}", headers={**h, "Origin": "http://evil.example"})
        assert foreign.status_code == 403


async def test_a_store_that_cannot_rename_says_so(tmp_path: Path) -> None:
    class AppendOnly:
        def __init__(self) -> None:
            self.inner = MemoryStore()

        def load(self, session_id: str) -> Any:
            return self.inner.load(session_id)

        def append(self, session_id: str, message: Any) -> None:
            self.inner.append(session_id, message)

        def list_sessions(self) -> Any:
            return self.inner.list_sessions()

    app = create_app(scripted_factory(tmp_path, lambda: ["ok"]), store=AppendOnly())  # type: ignore[arg-type]
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        sid = (await client.post("/api/runs", json={"task": "t"}, headers=h)).json()["session_id"]
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        res = await client.patch(f"/api/sessions/{sid}", json={"title": "x"}, headers=h)
        assert res.status_code == 501 and "cannot rename or delete" in res.json()["error"]


# ---------------------------------------------------------------- body limits


async def test_request_bodies_are_capped(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, lambda: ["ok"]), store=MemoryStore())
    h = auth(app)
    big_task = {"task": "x" * (1024 * 1024)}
    async with serving(app) as client:
        res = await client.post("/api/runs", json=big_task, headers=h)
        assert res.status_code == 413
        assert "too large" in res.json()["error"] and "1,048,576 bytes" in res.json()["error"]

        async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"task": "'
            for _ in range(40):
                yield b"y" * 65536
            yield b'"}'

        res = await client.post("/api/runs", content=chunked(), headers={**h, "Content-Type": "application/json"})
        assert res.status_code == 413
        # small endpoints have a small limit
        res = await client.post("/api/permissions/x", json={"decision": "allow", "pad": "p" * 20_000}, headers=h)
        assert res.status_code == 413 and "16,384 bytes" in res.json()["error"]
        # no token: refused before the body is looked at
        assert (await client.post("/api/runs", json=big_task)).status_code == 403
        assert not app.state.ui.running and app.state.ui.status == "idle"
        # just under the limit is fine
        ok = await client.post("/api/runs", json={"task": "z" * (1024 * 1024 - 100)}, headers=h)
        assert ok.status_code == 202
        await app.state.ui.wait_idle()


async def test_a_page_asking_for_dropped_events_is_told(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, full_script), store=MemoryStore(), replay_budget_bytes=2048)
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "write a note"}, headers=h)
        required = await sse.until("permission.required")
        async with events(client, app, since=0) as late:
            await late.until("ui.hello")
            _, gap = await late.next()
            assert gap["type"] == "ui.replay_gap" and gap["data"]["budget_bytes"] == 2048
            # the pending approval survived the tiny budget: a late page can still answer it
            assert (await late.until("permission.required"))["data"] == required["data"]
        assert app.state.ui.hub.replay_bytes <= 2048 + len(json.dumps(required)) * 4
        await client.post("/api/abort", headers=h)
        await sse.until("run.interrupted")


def test_a_damaged_session_database_is_moved_aside_and_the_server_starts(tmp_path):
    from smoke_ui.server import open_store

    db = tmp_path / ".smoke" / "sessions.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not a database" * 100)
    store = open_store(tmp_path)
    try:
        store.append("s1", {"role": "user", "content": [{"type": "text", "text": "hi"}]})
        assert [i.session_id for i in store.list_sessions()] == ["s1"]
    finally:
        store.close()
    kept = list(db.parent.glob("sessions.db.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not a database")


# ---------------------------------------------------------------- "always allow"


RAN: list[str] = []


@tool(kind="execute", permission_key="command", presentation={"label": "Run command", "icon": "💻"})
def run_command(command: str, ctx: ToolContext) -> str:
    """Run a command (here: recorded, so the test sees what ran)."""
    RAN.append(command)
    return f"ran {command}"


@tool(kind="edit", permission_key="path")
def save(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file."""
    target = ctx.workspace.resolve(path, write=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    return f"saved {path}"


@tool(permission_key="path")  # kind "other", but its argument is a path
def touch(path: str, ctx: ToolContext) -> str:
    """Create an empty file."""
    target = ctx.workspace.resolve(path, write=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch()
    return f"touched {path}"


@tool(permission_key="folder")
def make_dir(folder: str, ctx: ToolContext) -> str:
    """Create a folder."""
    ctx.workspace.resolve(folder, write=True).mkdir(parents=True, exist_ok=True)
    return f"made {folder}"


@tool
def ping(ctx: ToolContext) -> str:
    """Mutating, without an argument rules can match."""
    return "pong"


ALWAYS_TOOLS = [run_command, save, touch, make_dir, ping]


def call(call_id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "input": input}]}


def allow_list(path: Path) -> list[str]:
    import yaml

    return (yaml.safe_load(path.read_text()) or {}).get("permissions", {}).get("allow", [])


async def test_always_writes_exactly_the_rule_the_card_shows_to_the_chosen_file(tmp_path: Path) -> None:
    from smoke_core.settings import local_settings_path, user_settings_path

    ws = tmp_path / "ws [1]"  # glob characters in the folder: the user-file rules escape them
    ws.mkdir()
    RAN.clear()
    answers = [  # (call, scope, the rule expected in that file)
        (call("c1", "run_command", command="echo [a] *"), "user", "run_command(echo '[a]' '*')"),
        (call("c2", "save", path="src/app.py", content="x"), "user", rf"save({ws.resolve()}/src/app.py)"),
        (call("c3", "save", path="top.txt", content="x"), "local", "save(./top.txt)"),
        (call("c4", "touch", path="notes/a[1].md"), "user", rf"touch({ws.resolve()}/notes/a\[1\].md)"),
        (call("c5", "make_dir", folder="."), "user", f"make_dir({ws.resolve()})"),
        (call("c6", "ping"), "local", "ping"),
        (call("c7", "run_command", command="make build"), "local", "run_command(make build)"),
    ]
    script = [turn for turn, _, _ in answers] + ["done"]
    app = create_app(lambda **kw: create_agent(ws, provider=ScriptedProvider(list(script)), autoload_plugins=False,
                                               plugins=[], tools=ALWAYS_TOOLS, **kw), store=MemoryStore())
    h = auth(app)
    escape = {"[": r"\[", "]": r"\]"}
    expected = [rule.replace(str(ws.resolve()), "".join(escape.get(c, c) for c in str(ws.resolve())))
                for _, _, rule in answers]
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "go"}, headers=h)
        for (turn, scope, _), rule in zip(answers, expected, strict=True):
            required = await sse.until("permission.required")
            call_id = turn["tool_calls"][0]["id"]
            assert required["data"]["tool_call_id"] == call_id
            offer = required["ui"]["always"]
            assert offer["default"] == "local" and offer["local"]["available"] is True
            assert offer[scope]["rule"] == rule, (call_id, offer)
            assert offer["local"]["rule"] == required["data"]["suggested_rule"]
            assert offer["broad"] is (call_id == "c6")
            res = await client.post(f"/api/permissions/{call_id}", headers=h,
                                    json={"decision": "allow_always", "remember": scope, "rule": offer[scope]["rule"]})
            assert res.status_code == 200, res.text
            assert res.json()["remembered"] == {"rule": rule, "file": offer[scope]["file"], "scope": scope}
            resolved = await sse.until("permission.resolved")
            assert resolved["data"]["decision"] == "allow_always"
            assert resolved["ui"]["remembered"]["rule"] == rule  # every open page learns what was written
        await sse.until("run.completed")
    assert offer["local"]["file"] == str(local_settings_path(ws))
    assert offer["user"]["file"] == str(user_settings_path())
    # what core wrote is what the cards showed, file by file
    assert allow_list(local_settings_path(ws)) == [r for (_, s, _), r in zip(answers, expected, strict=True)
                                                   if s == "local"]
    assert allow_list(user_settings_path()) == [r for (_, s, _), r in zip(answers, expected, strict=True)
                                                if s == "user"]
    assert RAN == ["echo [a] *", "make build"]


async def test_always_errors_are_clear_and_leave_the_call_waiting(tmp_path: Path) -> None:
    from smoke_core import hookimpl

    class StartsAServer:
        @hookimpl
        async def before_run(self, run: Any) -> None:
            await run.request_permission(kind="mcp_server", name="github", input={"command": "github-mcp"},
                                         reason="start the MCP server github")

    RAN.clear()
    script = [call("c1", "run_command", command="make build"), "done"]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(list(script)),
                                               autoload_plugins=False, plugins=[StartsAServer()],
                                               tools=ALWAYS_TOOLS, **kw), store=MemoryStore())
    h = auth(app)
    local = tmp_path / ".smoke" / "config.local.yaml"

    async def post(call_id: str, **body: Any) -> httpx.Response:
        return await client.post(f"/api/permissions/{call_id}", json=body, headers=h)

    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "go"}, headers=h)
        server = await sse.until("permission.required")
        assert server["data"]["kind"] == "mcp_server" and server["data"]["suggested_rule"] is None
        assert "always" not in (server.get("ui") or {})
        res = await post("mcp_server:github", decision="allow_always", remember="local", rule="github")
        assert res.status_code == 400 and "MCP server start" in res.json()["error"]
        assert (await post("mcp_server:github", decision="allow")).status_code == 200

        required = await sse.until("permission.required")
        rule = required["ui"]["always"]["local"]["rule"]
        assert rule == "run_command(make build)"
        for body, status, words in (
            ({"decision": "allow_always", "rule": rule}, 400, "remember must be 'local' or 'user'"),
            ({"decision": "allow_always", "remember": "team", "rule": rule}, 400, "remember must be"),
            ({"decision": "allow_always", "remember": "local"}, 400, "rule must be the rule text"),
            ({"decision": "allow_always", "remember": "local", "rule": 5}, 400, "rule must be a string"),
            ({"decision": "allow_always", "remember": "local", "rule": "run_command(*)"}, 409, "reload the page"),
            ({"decision": "allow", "remember": "local"}, 400, "allow_always' only"),
        ):
            res = await post("c1", **body)
            assert res.status_code == status and words in res.json()["error"], (body, res.text)
        # the settings file cannot be written: a clear message, and the call still waits
        local.parent.mkdir()
        local.mkdir()
        res = await post("c1", decision="allow_always", remember="local", rule=rule)
        assert res.status_code == 422, res.text
        assert "could not write the rule to" in res.json()["error"] and "still waiting" in res.json()["error"]
        state = (await client.get("/api/state", headers=h)).json()
        assert [p["tool_call_id"] for p in state["pending_permissions"]] == ["c1"] and RAN == []
        local.rmdir()
        res = await post("c1", decision="allow_always", remember="local", rule=rule)
        assert res.status_code == 200 and res.json()["remembered"]["rule"] == rule
        stale = await post("c1", decision="allow_always", remember="local", rule=rule)
        assert stale.status_code == 404 and "no approval is pending" in stale.json()["error"]
        await sse.until("run.completed")
    assert allow_list(local) == [rule] and RAN == ["make build"]


async def test_in_an_untrusted_folder_always_goes_to_the_user_settings(tmp_path: Path) -> None:
    from smoke_core.settings import user_settings_path

    RAN.clear()
    script = [call("c1", "run_command", command="make test"), "done"]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(list(script)),
                                               autoload_plugins=False, plugins=[], tools=ALWAYS_TOOLS,
                                               trust_workspace=False, **kw), store=MemoryStore())
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "go"}, headers=h)
        offer = (await sse.until("permission.required"))["ui"]["always"]
        assert offer["default"] == "user"
        assert offer["local"]["available"] is False and "not trusted" in offer["local"]["note"]
        refused = await client.post("/api/permissions/c1", headers=h, json={
            "decision": "allow_always", "remember": "local", "rule": offer["local"]["rule"]})
        assert refused.status_code == 400 and "not trusted" in refused.json()["error"]
        ok = await client.post("/api/permissions/c1", headers=h, json={
            "decision": "allow_always", "remember": "user", "rule": offer["user"]["rule"]})
        assert ok.status_code == 200
        await sse.until("run.completed")
    assert allow_list(user_settings_path()) == ["run_command(make test)"]
    assert not (tmp_path / ".smoke" / "config.local.yaml").exists()


async def test_the_diff_view_needs_a_tool_that_declares_it_edits(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("y = 3\n")

    @tool(name="edit_file")  # named like the edit tool, but it declares no edit kind
    def not_an_edit(path: str, old_string: str, new_string: str, ctx: ToolContext) -> str:
        """Something else entirely."""
        return "did something else"

    script = [{"tool_calls": [{"id": "e1", "name": "edit_file",
                               "input": {"path": "app.py", "old_string": "y = 3", "new_string": "y = 4"}}]}, "ok"]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script), autoload_plugins=False,
                                               plugins=[], tools=[not_an_edit], **kw), store=MemoryStore())
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "go"}, headers=auth(app))
        required = await sse.until("permission.required")
        assert required["data"]["tool_kind"] == "other"
        assert "diff" not in required["ui"]  # the page shows the call's input, field by field
        await client.post("/api/permissions/e1", json={"decision": "deny"}, headers=auth(app))
        await sse.until("run.completed")


# ---------------------------------------------------------------- subagents


@tool(read_only=True, kind="read", permission_key="path")
def read_text(path: str, ctx: ToolContext) -> str:
    """Read a file."""
    return ctx.workspace.resolve(path).read_text()


@tool(name="task", read_only=True, kind="other", group="agent",
      presentation={"label": "Task", "icon": "🤖", "tone": "info", "group": "agent"})
async def task_tool(description: str, prompt: str, ctx: ToolContext, tools: list[str] | None = None) -> str:
    """Delegate to a subagent (as smoke-tools-agent's task tool does, through ctx.run_subagent)."""
    result = await ctx.run_subagent(prompt, tools=tools)
    if result.status != "completed":
        raise AssertionError(f"the subagent ended {result.status}")
    return result.text


def conversations(script: dict[str, list[Any]]) -> Callable[[Any], Any]:
    """A turn for every conversation, chosen by its first user message."""
    def turn(request: Any) -> Any:
        return script[request.messages[0]["content"][0]["text"]].pop(0)
    return turn


async def test_a_subagents_approval_is_pending_with_its_parent_and_answered_like_any_other(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    script = {
        "delegate": [{"text": "Delegating.", "tool_calls": [
            {"id": "t1", "name": "task", "input": {"description": "read", "prompt": "read a", "tools": ["read_text"]}},
            {"id": "t2", "name": "task", "input": {"description": "write", "prompt": "write c", "tools": ["save"]}},
        ]}, "both done"],
        "read a": [{"text": "Reading.", "tool_calls": [{"id": "r", "name": "read_text", "input": {"path": "a.txt"}}]},
                   "a says alpha"],
        "write c": [{"tool_calls": [{"id": "w", "name": "save", "input": {"path": "c.txt", "content": "c"}}]},
                    "c saved"],
    }
    turns = [conversations(script)] * sum(len(v) for v in script.values())
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(turns), autoload_plugins=False,
                                               plugins=[], tools=[task_tool, read_text, save], **kw),
                     store=MemoryStore())
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        await client.post("/api/runs", json={"task": "delegate"}, headers=h)
        required = await sse.until("permission.required")
        assert required["data"]["tool_call_id"] == "t2.w" and required["data"]["parent_tool_call_id"] == "t2"
        assert required["ui"]["always"]["local"]["rule"] == "save(./c.txt)"
        state = (await client.get("/api/state", headers=h)).json()
        assert [p["tool_call_id"] for p in state["pending_permissions"]] == ["t2.w"]
        res = await client.post("/api/permissions/t2.w", json={"decision": "allow"}, headers=h)
        assert res.status_code == 200
        done = await sse.until("run.completed")
    assert done["data"]["text"] == "both done"
    assert (tmp_path / "c.txt").read_text() == "c"
    seen = [e for _, e in sse.seen]
    ends = {e["data"]["parent_tool_call_id"]: e["data"]["text"] for e in seen if e["type"] == "subagent.completed"}
    assert ends == {"t1": "a says alpha", "t2": "c saved"}
    parent_text = [e["data"]["text"] for e in seen if e["type"] == "text.end" and "parent_tool_call_id" not in e["data"]]
    assert parent_text == ["Delegating.", "both done"]  # the subagents' text is theirs, not the parent's
    child_text = [e["data"]["text"] for e in seen if e["type"] == "text.end" and e["data"].get("parent_tool_call_id")]
    assert sorted(child_text) == ["Reading.", "a says alpha", "c saved"]


def test_smoke_store_url_chooses_the_servers_store(tmp_path, monkeypatch):
    from smoke_ui.server import open_store

    db = tmp_path / "shared.db"
    monkeypatch.setenv("SMOKE_STORE_URL", f"sqlite:///{db}")
    store = open_store(tmp_path / "ws")
    try:
        store.append("s", {"role": "user", "content": [{"type": "text", "text": "hi"}]})
    finally:
        store.close()
    assert db.exists() and not (tmp_path / "ws" / ".smoke" / "sessions.db").exists()


async def test_the_state_carries_the_run_budget_for_the_header(tmp_path: Path) -> None:
    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(tmp_path, provider=ScriptedProvider(["ok"]), autoload_plugins=False, plugins=[],
                            store=store, session_id=session_id, max_cost_usd=0.5, max_output_tokens=2000)

    budgeted = create_app(factory, store=MemoryStore(), workspace=tmp_path)
    plain = create_app(scripted_factory(tmp_path, full_script), store=MemoryStore(), workspace=tmp_path)
    async with serving(budgeted) as client:
        state = (await client.get("/api/state", headers=auth(budgeted))).json()
    assert state["budget"] == {"max_cost_usd": 0.5, "max_input_tokens": None, "max_output_tokens": 2000}
    async with serving(plain) as client:
        assert (await client.get("/api/state", headers=auth(plain))).json()["budget"] is None


# ---------------------------------------------------------------- plan mode (issue 33)


def plan_script() -> list[Any]:
    return [
        {"tool_calls": [{"id": "call_w0", "name": "write_note", "input": {"text": "too early"}}]},
        {"tool_calls": [{"id": "call_p1", "name": "exit_plan_mode", "input": {"plan": "# Plan\n1. write *hi*"}}]},
        {"tool_calls": [{"id": "call_p2", "name": "exit_plan_mode", "input": {"plan": "# Plan\n1. write *bye*"}}]},
        {"tool_calls": [{"id": "call_w", "name": "write_note", "input": {"text": "bye"}}]},
        "Done.",
    ]


async def test_the_plan_toggle_and_the_plan_answers(tmp_path: Path) -> None:
    app = create_app(scripted_factory(tmp_path, plan_script), store=MemoryStore(), workspace=tmp_path)
    async with serving(app) as client, events(client, app) as sse:
        await sse.until("ui.hello")
        state = (await client.get("/api/state", headers=auth(app))).json()
        assert state["permission_mode"] == "ask-default"
        res = await client.post("/api/mode", json={"mode": "plan"}, headers=auth(app))
        assert res.status_code == 200 and res.json() == {"ok": True, "mode": "plan"}
        changed = await sse.until("permission.mode_changed")
        assert changed["data"] == {"mode": "plan", "previous": "ask-default"}
        bad = await client.post("/api/mode", json={"mode": "yolo"}, headers=auth(app))
        assert bad.status_code == 400 and "is not a mode" in bad.json()["error"]

        await client.post("/api/runs", json={"task": "write a note"}, headers=auth(app))
        refused = await sse.until("tool.completed")
        assert refused["data"]["is_error"] and "plan mode is on" in refused["data"]["content"][0]["text"]
        first = await sse.until("plan.required")
        assert first["data"]["plan"] == "# Plan\n1. write *hi*" and "<em>hi</em>" in first["ui"]["html"]
        state = (await client.get("/api/state", headers=auth(app))).json()
        assert [p["tool_call_id"] for p in state["pending_plans"]] == ["call_p1"]
        for body, words in (({"decision": "maybe"}, "not one of approve"),
                            ({"decision": "approve", "mode": "allow-all"}, "not 'allow-all'"),
                            ({"decision": "edit", "text": ""}, "needs text")):
            res = await client.post("/api/plans/call_p1", json=body, headers=auth(app))
            assert res.status_code == 400 and words in res.json()["error"], res.json()
        res = await client.post("/api/plans/call_p1", json={"decision": "reject", "text": "say bye"},
                                headers=auth(app))
        assert res.status_code == 200
        again = await client.post("/api/plans/call_p1", json={"decision": "reject"}, headers=auth(app))
        assert again.status_code == 404
        second = await sse.until("plan.required")
        assert second["data"]["rejections"] == 1
        res = await client.post("/api/plans/call_p2", json={"decision": "approve", "mode": "accept-edits"},
                                headers=auth(app))
        assert res.status_code == 200
        changed = await sse.until("permission.mode_changed")
        assert changed["data"] == {"mode": "accept-edits", "previous": "plan"}
        asked = await sse.until("permission.required")  # write_note is not a file edit (kind): it still asks
        assert asked["data"]["tool_call_id"] == "call_w"
        await client.post("/api/permissions/call_w", json={"decision": "allow"}, headers=auth(app))
        done = await sse.until("run.completed")
        assert done["data"]["text"] == "Done."
    resolved = [e["data"] for _, e in sse.seen if e["type"] == "plan.resolved"]
    assert [(r["decision"], r["mode"], r["text"]) for r in resolved] == [("reject", None, "say bye"),
                                                                        ("approve", "accept-edits", None)]
    state = app.state.ui
    assert state.permission_mode() == "accept-edits" and state.pending_plans == {}


# ---------------------------------------------------------------- fork and rewind


def rewind_script() -> list[Any]:
    return [
        {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "a.txt", "content": "two\n"}}]},
        "Done 1.",
        {"tool_calls": [{"id": "w2", "name": "write_file", "input": {"path": "a.txt", "content": "three\n"}}]},
        "Done 2.",
        {"tool_calls": [{"id": "q1", "name": "ask", "input": {"question": "Go on?"}}]},
        "never",
    ]


def rewind_factory(workspace: Path) -> Callable[..., Any]:
    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(workspace, provider=ScriptedProvider(rewind_script()), autoload_plugins=False,
                            plugins=[], tools=[write_file, ask], store=store, session_id=session_id,
                            permission="allow-all")

    return factory


async def test_rewind_to_a_turn_restores_the_files_and_undo_puts_them_back_and_fork_copies(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"one\n")
    store = MemoryStore()
    app = create_app(rewind_factory(ws), store=store, workspace=ws)
    h = auth(app)
    async with serving(app) as client, events(client, app) as sse:
        first = (await client.post("/api/runs", json={"task": "first"}, headers=h)).json()["session_id"]
        started = await sse.until("run.started")
        assert started["ui"]["turn"] == 0  # the page's "Rewind to here" names the turn
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        await client.post("/api/runs", json={"task": "second", "session_id": first}, headers=h)
        assert (await sse.until("run.started"))["ui"]["turn"] == 1
        await sse.until("run.completed")
        await app.state.ui.wait_idle()
        assert (ws / "a.txt").read_bytes() == b"three\n"
        history = list(store.load(first))

        # while a run holds the session: no fork, no rewind, each with a clear 409
        await client.post("/api/runs", json={"task": "third", "session_id": first}, headers=h)
        await sse.until("ask_user.required")
        busy = await client.post(f"/api/sessions/{first}/fork", headers=h)
        assert busy.status_code == 409 and "running" in busy.json()["error"], busy.text
        busy = await client.post(f"/api/sessions/{first}/rewind", json={"turn": 0}, headers=h)
        assert busy.status_code == 409 and "run is in progress" in busy.json()["error"], busy.text
        assert (ws / "a.txt").read_bytes() == b"three\n"
        await client.post("/api/abort", headers=h)
        await sse.until("run.interrupted")
        await app.state.ui.wait_idle()
        history = list(store.load(first))

        # bad input: one clear line each, nothing changed
        for body, words in (({}, "either"), ({"turn": 1, "checkpoint": 1}, "either"), ({"turn": "x"}, "whole number"),
                            ({"turn": 9}, "between 0 and 2"), ({"checkpoint": 999}, "no checkpoint 999")):
            res = await client.post(f"/api/sessions/{first}/rewind", json=body, headers=h)
            assert res.status_code in (400, 404) and words in res.json()["error"], (body, res.text)
        assert (await client.post("/api/sessions/ses_none/rewind", json={"turn": 0}, headers=h)).status_code == 404
        assert (await client.post("/api/sessions/ses_none/fork", headers=h)).status_code == 404
        # from another site, or without the token: refused before anything happens
        foreign = await client.post(f"/api/sessions/{first}/rewind", json={"turn": 0},
                                    headers={**h, "Origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert (await client.post(f"/api/sessions/{first}/fork", headers={**h, "Origin": "http://evil.example"})
                ).status_code == 403
        assert (await client.post(f"/api/sessions/{first}/fork")).status_code == 403
        assert (ws / "a.txt").read_bytes() == b"three\n"
        assert list(store.load(first)) == history

        # rewind to before the second turn: the file as it was then, the conversation up to that task
        res = await client.post(f"/api/sessions/{first}/rewind", json={"turn": 1}, headers=h)
        assert res.status_code == 200, res.text
        body = res.json()
        assert (ws / "a.txt").read_bytes() == b"two\n"
        rewound = body["session_id"]
        assert rewound != first and app.state.ui.session_id == rewound
        cut = [i for i, m in enumerate(history) if m["role"] == "user"][1]
        assert list(store.load(rewound)) == history[:cut]
        assert list(store.load(first)) == history  # the old session is kept whole
        assert body["undo"]["session_id"] == first and "undo" in body["undo_hint"]

        # undo: the files back as they were before the rewind, the old session current again
        res = await client.post(f"/api/sessions/{first}/rewind", json={"checkpoint": body["undo"]["checkpoint"]},
                                headers=h)
        assert res.status_code == 200, res.text
        assert (ws / "a.txt").read_bytes() == b"three\n"
        assert res.json()["session_id"] == first and app.state.ui.session_id == first

        # and all the way back to before the first turn
        res = await client.post(f"/api/sessions/{first}/rewind", json={"turn": 0}, headers=h)
        assert res.status_code == 200, res.text
        assert (ws / "a.txt").read_bytes() == b"one\n"

        # fork: a new session with the same history, which becomes current
        res = await client.post(f"/api/sessions/{first}/fork", headers=h)
        assert res.status_code == 200, res.text
        fork = res.json()
        assert fork["forked_from"] == first and fork["messages"] == len(history)
        assert fork["session_id"] not in (first, rewound) and app.state.ui.session_id == fork["session_id"]
        assert list(store.load(fork["session_id"])) == history
        listed = {s["session_id"] for s in (await client.get("/api/sessions", headers=h)).json()["sessions"]}
        assert {first, rewound, fork["session_id"]} <= listed
