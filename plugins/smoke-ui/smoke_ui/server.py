"""The web app behind ``smoke serve``.

:func:`create_app` builds a Starlette application around an *agent factory*
(``factory(session_id=..., store=...) -> Agent``), so the same server drives a
real provider, the offline demo or a scripted agent in tests.

Wire protocol (all under ``/api``, every call needs the server's token in the
``X-Smoke-Token`` header or the ``token`` query parameter):

- ``GET /api/events`` — Server-Sent Events. The first message is ``ui.hello``
  (tool presentations, current session, status); then every agent event as
  ``{type, session_id, run_id, timestamp, data}`` with a sequence number as
  the SSE ``id`` (``Last-Event-ID`` / ``?since=`` replays what was missed).
- ``POST /api/runs`` ``{task, session_id?}`` starts a run in the background. A
  task ``/name args`` runs that slash command first (:mod:`smoke_ui.commands`):
  the text it returns is the task; one that returns nothing answers
  ``{status: "said", said: [...]}``. ``GET /api/commands`` lists them.
- ``POST /api/permissions/{tool_call_id}`` ``{decision}``, ``POST
  /api/questions/{tool_call_id}`` ``{text}``, ``POST /api/abort`` answer the run.
  ``{decision: "allow_always", remember: "local"|"user", rule}`` allows the
  call and writes ``rule`` (the text the card showed for that choice; any other
  text is refused with 409) to the chosen settings file
  (:mod:`smoke_ui.approvals`); a file that cannot be written is a 422 and the
  call still waits for an answer.
- ``GET /api/state``, ``GET /api/sessions``, ``GET /api/sessions/{id}``,
  ``POST /api/sessions`` for the page's initial state and the session list.

- ``PATCH /api/sessions/{id}`` ``{title}`` renames a session, ``DELETE
  /api/sessions/{id}`` deletes it (409 while that session runs).
- ``POST /api/sessions/{id}/fork`` copies a session into a new current one;
  ``POST /api/sessions/{id}/rewind`` ``{turn}`` or ``{checkpoint}`` rewinds
  files (and the conversation) — :mod:`smoke_ui.rewind`.

State-changing requests carrying an ``Origin`` header must come from the
server's own origin (403 otherwise). Request bodies are capped (413 beyond
:data:`DEFAULT_MAX_BODY_BYTES` for runs and answers, :data:`SMALL_BODY_BYTES`
elsewhere). The replay log is bounded in bytes (:mod:`smoke_ui.replay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import re
import secrets
import unicodedata
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from smoke_core.display import marked_table

from . import rewind as rewinding
from .approvals import SCOPES, always_offer
from .render import edit_preview, highlight_css, markdown_html
from .replay import DEFAULT_REPLAY_BUDGET, EventHub

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from smoke_core.plugin import Agent, Event, Store

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "SMALL_BODY_BYTES",
    "STATIC_DIR",
    "AgentFactory",
    "EventHub",
    "UIState",
    "create_app",
    "open_store",
]

log = logging.getLogger("smoke.ui")

STATIC_DIR = Path(__file__).with_name("static")
TOKEN_HEADER = "x-smoke-token"
KEEPALIVE_SECONDS = 15.0
RECONNECT_MS = 1000
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""Largest request body for ``POST /api/runs``, ``POST /api/questions/…`` and ``POST /api/plans/…`` (1 MiB)."""
SMALL_BODY_BYTES = 16 * 1024
"""Largest request body for every other request (16 KiB)."""
_LARGE_BODY_PATHS = ("/api/runs", "/api/questions/", "/api/plans/")
_DRAIN_BYTES = 64 * 1024 * 1024
_DRAIN_SECONDS = 5.0
MAX_TITLE_CHARS = 200
_SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TERMINAL = {"run.completed": "completed", "run.failed": "failed", "run.interrupted": "interrupted"}
_SUBAGENT_ENDS = frozenset({"subagent.completed", "subagent.failed", "subagent.interrupted"})

AgentFactory = Callable[..., "Agent"]
"""``factory(*, session_id: str, store: Store) -> Agent``: one agent per session."""


def open_store(workspace: str | Path) -> Store:
    """The server's session store: ``SMOKE_STORE_URL`` or the ``store`` setting
    when set (e.g. ``postgresql://...`` with smoke-store-postgres: sessions
    shared with other processes), else a SQLite file at
    ``<workspace>/.smoke/sessions.db``. A damaged SQLite file is moved aside
    (kept, named in a warning on stderr) and a fresh one started, so the
    server always comes up; ``smoke sessions doctor`` salvages what the old
    one holds."""
    import os

    from smoke_core.plugin import SQLiteStore
    from smoke_core.plugin import open_store as open_url

    url = os.environ.get("SMOKE_STORE_URL", "").strip() or None
    if url is None:
        from smoke_core.settings import resolve_settings

        try:
            url = resolve_settings(workspace, trust=None).values.get("store") or None
        except ValueError:
            url = None
    if url:
        store: Store = open_url(url)
        return store
    return SQLiteStore(Path(workspace) / ".smoke" / "sessions.db", on_corrupt="start_fresh")


# ---------------------------------------------------------------- events


def _sse(data: str, *, id: int | None = None) -> str:
    head = f"id: {id}\n" if id is not None else ""
    return head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"


# ---------------------------------------------------------------- state


class UIError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class UIState:
    """What one server holds: the store, one agent per session, the running
    run, and what it is waiting for (approvals, questions)."""

    def __init__(
        self,
        agent_factory: AgentFactory,
        *,
        store: Store,
        token: str,
        workspace: str | None,
        title: str,
        demo_label: str | None,
        fresh_session_per_run: bool,
        on_close: Iterable[Callable[[], Any]] = (),
        owns_store: bool = False,
        replay_budget_bytes: int = DEFAULT_REPLAY_BUDGET,
    ) -> None:
        from smoke_core.plugin import new_session_id

        self._new_session_id = new_session_id
        self.factory = agent_factory
        self.store = store
        self.token = token
        self.workspace = workspace
        self.title = title
        self.demo_label = demo_label
        self.fresh_session_per_run = fresh_session_per_run
        self.hub = EventHub(budget_bytes=replay_budget_bytes)
        self.agents: dict[str, Agent] = {}
        self.session_id = new_session_id()
        self.status = "idle"
        self.usage: dict[str, Any] | None = None
        self.pending_permissions: dict[str, dict[str, Any]] = {}
        self.pending_questions: dict[str, dict[str, Any]] = {}
        self.pending_plans: dict[str, dict[str, Any]] = {}
        #: the permission mode the person chose on this page (the plan toggle, an approved plan):
        #: agents made for other sessions start in it too
        self.mode: str | None = None
        self._ran: set[str] = set()
        self._running: Agent | None = None
        self._task: asyncio.Task[Any] | None = None
        self._on_close = list(on_close)
        self._owns_store = owns_store
        self._presentations: dict[str, dict[str, Any]] | None = None
        self._remembered: dict[str, dict[str, Any]] = {}  # tool_call_id -> rule written by "always"
        self._answered: set[str] = set()  # answered here, permission.resolved not seen yet
        self._next_turn: int | None = None  # the turn the run being started is in its session

    # ------------------------------------------------------------ agents

    def agent_for(self, session_id: str) -> Agent:
        agent = self.agents.get(session_id)
        if agent is None:
            agent = self.factory(session_id=session_id, store=self.store)
            if self.mode is not None and agent.permission_mode != self.mode:
                with contextlib.suppress(ValueError):  # a mode managed settings fix stays
                    agent.set_permission_mode(self.mode)
            agent.on_any(self._on_event)
            self.agents[session_id] = agent
        return agent

    def budget(self) -> dict[str, Any] | None:
        """The run budget (``max_cost_usd``, ``max_input_tokens``, ``max_output_tokens``) the header
        shows usage against, or None when none is set."""
        try:
            budget = self.agent_for(self.session_id).options.budget
        except Exception:  # the factory failing is reported when a run starts
            return None
        if not budget.active:
            return None
        return {"max_cost_usd": budget.max_cost_usd, "max_input_tokens": budget.max_input_tokens,
                "max_output_tokens": budget.max_output_tokens}

    def permission_mode(self) -> str:
        """The current session's permission mode (``"callable"`` for a programmer's function)."""
        try:
            mode = self.agent_for(self.session_id).permission_mode
        except Exception:  # the factory failing is reported when a run starts
            return "unknown"
        return mode if isinstance(mode, str) else "callable"

    def set_mode(self, mode: str) -> str:
        """The plan toggle: ``"plan"`` turns plan mode on, ``"off"`` goes back to the mode before it;
        any other permission mode is set as it is. During a run too (from the next call on)."""
        agent = self._running or self.agent_for(self.session_id)
        if mode == "off":
            if agent.permission_mode != "plan":
                return self.permission_mode()
            mode = getattr(agent, "_mode_before_plan", "ask-default")
        try:
            agent.set_permission_mode(mode)
        except ValueError as exc:
            raise UIError(400, str(exc)) from None
        self.mode = mode
        return mode

    def resolve_plan(self, tool_call_id: str, decision: str, *, mode: str | None, text: str | None) -> None:
        """Answer a pending plan: approve (in ``mode``), edit (approve ``text``) or reject (``text``: why)."""
        if tool_call_id not in self.pending_plans or self._running is None or tool_call_id in self._answered:
            raise UIError(404, f"no plan is waiting for {tool_call_id!r} (already answered, or the run ended)")
        try:
            self._running.resolve_plan(tool_call_id, decision, mode=mode, text=text)
        except ValueError as exc:
            raise UIError(400, str(exc)) from None
        self._answered.add(tool_call_id)

    def presentations(self) -> dict[str, dict[str, Any]]:
        if self._presentations is None:
            self._presentations = self.agent_for(self.session_id).get_tool_presentations()
        return self._presentations

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def new_session(self) -> str:
        self.session_id = self._new_session_id()
        return self.session_id

    async def start_run(self, task: str, session_id: str | None) -> str:
        if self.running:
            raise UIError(409, "a run is in progress: wait for it to end or stop it first")
        sid = session_id or self.session_id
        if self.fresh_session_per_run and sid in self._ran:
            sid = self._new_session_id()
        try:
            agent = self.agent_for(sid)
        except Exception as exc:
            log.exception("smoke-ui: the agent factory failed")
            raise UIError(500, f"could not create the agent: {type(exc).__name__}: {exc}") from exc
        self.session_id = sid
        try:  # the turn this run is (0-based) in its session: the page's "Rewind to here" names it
            self._next_turn = len(rewinding.turn_starts(self.store.load(sid)))
        except Exception:
            self._next_turn = None
        self._ran.add(sid)
        self._running = agent
        self.status = "running"
        self.usage = None
        self._task = asyncio.create_task(self._run(agent, task))
        return sid

    async def _run(self, agent: Agent, task: str) -> None:
        try:
            await agent.run(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # run() reports run errors as events; this is a startup failure
            log.exception("smoke-ui: the run could not start")
            self.status = "failed"
            self.hub.publish(
                {"type": "ui.error", "session_id": agent.session_id, "run_id": None, "timestamp": None,
                 "data": {"message": f"the run could not start: {type(exc).__name__}: {exc}"}}
            )
        finally:
            self._running = None
            self.pending_permissions.clear()
            self.pending_questions.clear()
            self.pending_plans.clear()
            self._remembered.clear()
            self._answered.clear()

    def _on_event(self, event: Event) -> None:
        payload = event.to_dict()  # a new dict; ``data`` is shared with other listeners: never mutated
        t = event.type
        data = event.data
        ui = self._extras(t, data)
        if t == "run.started" and self._next_turn is not None:
            ui = {**(ui or {}), "turn": self._next_turn}
            self._next_turn = None
        if ui:
            payload["ui"] = ui
        if t == "run.started":
            self.status = "running"
        elif t in _TERMINAL:
            self.status = _TERMINAL[t]
            if isinstance(data.get("usage"), dict):
                self.usage = data["usage"]
        elif t == "usage.updated":
            self.usage = data.get("usage")
        elif t == "permission.required":
            self.pending_permissions[data["tool_call_id"]] = {**data, **({"ui": ui} if ui else {})}
        elif t == "permission.resolved":
            self.pending_permissions.pop(str(data.get("tool_call_id")), None)
            self._answered.discard(str(data.get("tool_call_id")))
        elif t == "ask_user.required":
            self.pending_questions[data["tool_call_id"]] = data
        elif t == "ask_user.response":
            self.pending_questions.pop(str(data.get("tool_call_id")), None)
        elif t == "plan.required":
            self.pending_plans[data["tool_call_id"]] = {**data, **({"ui": ui} if ui else {})}
        elif t == "plan.resolved":
            self.pending_plans.pop(str(data.get("tool_call_id")), None)
            self._answered.discard(str(data.get("tool_call_id")))
        elif t == "permission.mode_changed" and isinstance(data.get("mode"), str):
            self.mode = data["mode"]
        elif t in _SUBAGENT_ENDS and isinstance(data.get("parent_tool_call_id"), str):
            # a subagent that ended waits for nothing more (its calls' ids start with "<parent>.")
            prefix = data["parent_tool_call_id"] + "."
            for pending in (self.pending_permissions, self.pending_questions):
                for call_id in [c for c in pending if c.startswith(prefix)]:
                    pending.pop(call_id, None)
        self.hub.publish(payload)

    def _extras(self, t: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """What the page needs beyond the event: Markdown as safe HTML for a
        message, the diff of an edit awaiting approval. Never fatal."""
        try:
            if t in ("text.end", "run.completed") and isinstance(data.get("text"), str):
                html = markdown_html(data["text"])
                return {"html": html} if html else None
            if t == "plan.required" and isinstance(data.get("plan"), str):
                html = markdown_html(data["plan"])
                return {"html": html} if html else None
            if t == "ask_user.required" and data.get("form") is not None:
                from smoke_core.plugin import FormError, form_fields

                try:
                    return {"fields": [f.to_dict() for f in form_fields(data["form"])]}
                except FormError as exc:
                    return {"form_problem": str(exc)}
            if t == "permission.required" and data.get("kind", "tool") == "tool":
                agent = self._running
                extras: dict[str, Any] = {}
                # the diff view only for a tool that declares it edits (kind "edit"),
                # never from its name alone
                if data.get("tool_kind") == "edit":
                    root = getattr(getattr(agent, "workspace", None), "root", None)
                    diff = edit_preview(str(data.get("tool_name")), data.get("input") or {}, root)
                    if diff:
                        extras["diff"] = diff
                always = always_offer(data, agent) if agent is not None else None
                if always:
                    extras["always"] = always
                return extras or None
            if t == "permission.resolved":
                written = self._remembered.pop(str(data.get("tool_call_id")), None)
                return {"remembered": written} if written else None
        except Exception:
            log.exception("smoke-ui: could not prepare %s for the page", t)
        return None

    def resolve_permission(self, tool_call_id: str, decision: str, *, remember: str | None = None,
                           rule: str | None = None) -> dict[str, Any] | None:
        """Answer a pending approval. ``allow_always`` needs ``remember``
        (``"local"`` or ``"user"``) and ``rule``, the rule text the person was
        shown for that choice: a different text is refused (what the person
        approves is what is written). Returns ``{rule, file, scope}`` for
        ``allow_always``."""
        from smoke_core.plugin import ANSWERS

        if decision not in ANSWERS:
            raise UIError(400, f"decision must be one of {', '.join(ANSWERS)}, got {decision!r}")
        pending = self.pending_permissions.get(tool_call_id)
        running = self._running
        if pending is None or running is None or tool_call_id in self._answered:
            raise UIError(404, f"no approval is pending for {tool_call_id!r} (already answered, or the run ended)")
        if decision != "allow_always":
            if remember is not None or rule is not None:
                raise UIError(400, "remember and rule go with decision 'allow_always' only")
            running.resolve_permission(tool_call_id, decision)
            self._answered.add(tool_call_id)  # until permission.resolved arrives, a second answer is stale too
            return None
        offer = (pending.get("ui") or {}).get("always")
        if not offer:
            what = "an MCP server start" if pending.get("kind") == "mcp_server" else "this request"
            raise UIError(400, f"'always' is not offered for {what}: answer it with allow, allow_run or deny")
        if remember not in SCOPES:
            raise UIError(400, f"remember must be 'local' or 'user' with decision 'allow_always', got {remember!r}")
        choice = offer[remember]
        if not choice.get("available"):
            raise UIError(400, f"cannot remember the rule in {choice['file']}: {choice.get('note')}; "
                               "choose your user settings instead")
        if not isinstance(rule, str):
            raise UIError(400, "rule must be the rule text the page showed (what 'always' writes)")
        if rule != choice["rule"]:
            raise UIError(409, f"the rule sent ({rule!r}) is not the one this answer writes ({choice['rule']!r}): "
                               "reload the page and answer again")
        from smoke_core.plugin import ConfigError

        try:
            written = running.resolve_permission(tool_call_id, "allow_always", remember=remember)
        except (OSError, ConfigError) as exc:  # the settings file could not be written: the call still waits
            log.warning("smoke-ui: could not write the rule %r to %s: %s", rule, choice["file"], exc)
            raise UIError(422, f"could not write the rule to {choice['file']}: {exc} "
                               "The call is still waiting: allow it once, allow it for this run, or deny it.") from exc
        except ValueError as exc:  # answered meanwhile, or not a tool call
            raise UIError(409, f"could not allow always: {exc}") from exc
        self._answered.add(tool_call_id)
        rules = list(written or [])
        text = ", ".join(r.text for r in rules) or rule  # the rules written, as the card showed them
        origin = rules[0].origin if rules else None
        result = {"rule": text, "file": str(origin or choice["file"]), "scope": remember}
        if text != rule:  # never expected (a test pins the derivation); say so rather than hide it
            log.warning("smoke-ui: the rule written (%r) differs from the rule shown (%r)", text, rule)
            result["shown"] = rule
        self._remembered[tool_call_id] = result
        return result

    def respond(self, tool_call_id: str, text: str) -> None:
        if tool_call_id not in self.pending_questions or self._running is None:
            raise UIError(404, f"no question is pending for {tool_call_id!r} (already answered, or the run ended)")
        self._running.respond(tool_call_id, text)

    def respond_form(self, tool_call_id: str, values: dict[str, Any] | None) -> None:
        """The answer to a form question: ``values`` (checked against the form) or None to decline."""
        from smoke_core.plugin import FormError

        if tool_call_id not in self.pending_questions or self._running is None:
            raise UIError(404, f"no question is pending for {tool_call_id!r} (already answered, or the run ended)")
        if self.pending_questions[tool_call_id].get("form") is None:
            raise UIError(400, "this question takes a text answer, not a form")
        try:
            self._running.respond_form(tool_call_id, values)
        except FormError as exc:
            raise UIError(400, f"the answer does not fit the form: {exc}") from None

    def abort(self) -> bool:
        if self._running is None:
            return False
        self._running.abort()
        return True

    async def wait_idle(self) -> None:
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task

    async def close(self) -> None:
        self.hub.close()
        self.abort()
        await self.wait_idle()
        for agent in list(self.agents.values()):
            with contextlib.suppress(Exception):
                await agent.aclose()
        self.close_store()
        for fn in self._on_close:
            try:
                fn()
            except Exception:
                log.exception("smoke-ui: cleanup failed")

    def close_store(self) -> None:
        """Close the store if this server opened it (a store passed in stays open)."""
        close = getattr(self.store, "close", None)
        if self._owns_store and close is not None:
            self._owns_store = False
            close()

    # ------------------------------------------------------------ views

    def _check_managed(self, session_id: str) -> Any:
        # duck-typed: ManagedStore is not @runtime_checkable itself (isinstance needs it from Python 3.12)
        if not all(callable(getattr(self.store, m, None)) for m in ("rename_session", "delete_session")):
            raise UIError(501, f"this server's store ({type(self.store).__name__}) cannot rename or delete sessions")
        if not any(s.session_id == session_id for s in self.store.list_sessions()):
            raise UIError(404, f"no session {session_id!r} in this server's store")
        running = self._running
        if self.running and running is not None and running.session_id == session_id:
            raise UIError(409, "this session is running: stop the run (or wait for it to end) first")
        return self.store

    def rename_session(self, session_id: str, title: str) -> str:
        title = title.strip()
        if not title:
            raise UIError(400, "title must be a non-empty string")
        if len(title) > MAX_TITLE_CHARS:
            raise UIError(400, f"title is {len(title)} characters; the limit is {MAX_TITLE_CHARS}")
        bad = next((c for c in title if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)
        if bad is not None:
            raise UIError(400, f"title contains the control character U+{ord(bad):04X}; use plain text on one line")
        store = self._check_managed(session_id)
        if not store.rename_session(session_id, title):
            raise UIError(404, f"no session {session_id!r} in this server's store")
        return title

    async def delete_session(self, session_id: str) -> str | None:
        """Delete a session; returns the new current session id when the
        deleted one was current."""
        store = self._check_managed(session_id)
        agent = self.agents.pop(session_id, None)
        deleted = store.delete_session(session_id)
        current = self.new_session() if self.session_id == session_id else None
        if agent is not None:
            with contextlib.suppress(Exception):
                await agent.aclose()
        if not deleted:
            raise UIError(404, f"no session {session_id!r} in this server's store")
        return current

    def sessions(self) -> list[dict[str, Any]]:
        out = []
        for info in self.store.list_sessions():
            out.append(
                {
                    "session_id": info.session_id,
                    "title": info.title,
                    "message_count": info.message_count,
                    "created_at": info.created_at,
                    "updated_at": info.updated_at,
                }
            )
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "workspace": self.workspace,
            "demo": self.demo_label is not None,
            "demo_label": self.demo_label,
            "session_id": self.session_id,
            "status": self.status,
            "running": self.running,
            "usage": self.usage,
            "budget": self.budget(),
            "presentations": self.presentations(),
            "pending_permissions": list(self.pending_permissions.values()),
            "pending_questions": list(self.pending_questions.values()),
            "pending_plans": list(self.pending_plans.values()),
            "permission_mode": self.permission_mode(),
            "last_seq": self.hub.last_seq,
        }


# ---------------------------------------------------------------- security


def _own_origin(scope: Scope) -> str | None:
    host = None
    for key, value in scope.get("headers", []):
        if key == b"host":
            host = value.decode("latin-1")
            break
    if host is None:
        return None
    return f"{scope.get('scheme', 'http')}://{host}"


class _SecurityMiddleware:
    """Token on every ``/api`` call and on the page; same-origin check and a
    body size cap on state-changing requests. Pure ASGI so streaming responses
    are untouched. Order matters: a request without the token is refused
    before a byte of its body is read."""

    def __init__(self, app: ASGIApp, *, token: str, max_body_bytes: int, small_body_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.small_body_bytes = small_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        method: str = scope["method"]
        needs_token = path.startswith("/api/") or path == "/api" or path in ("/", "/index.html")
        if needs_token and not self._has_token(scope):
            if path.startswith("/api"):
                response: Response = JSONResponse(
                    {"error": "missing or wrong token: use the URL printed by `smoke serve` (it carries ?token=...)"},
                    status_code=403,
                )
            else:
                response = HTMLResponse(
                    "<!doctype html><title>Smoke</title><p>This Smoke server needs its access token. "
                    "Open the URL printed by <code>smoke serve</code> (it ends with <code>?token=...</code>).</p>",
                    status_code=403,
                )
            await response(scope, receive, send)
            return
        if method not in _SAFE_METHODS:
            origin = _header(scope, b"origin")
            if origin is not None and origin != _own_origin(scope):
                response = JSONResponse(
                    {"error": f"cross-origin request refused: origin {origin!r} is not this server's origin"},
                    status_code=403,
                )
                await response(scope, receive, send)
                return
            limit = self.max_body_bytes if path.startswith(_LARGE_BODY_PATHS) else self.small_body_bytes
            body = await self._read_body(scope, receive, send, limit)
            if body is None:
                return
            sent = False

            async def replay() -> Any:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send, limit: int) -> bytes | None:
        """The whole body, or ``None`` after answering 413 (or when the client left).
        At most ``limit`` + one chunk is ever held."""
        declared = _header(scope, b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await JSONResponse({"error": f"bad Content-Length header {declared!r}"}, status_code=400)(
                    scope, receive, send)
                return None
            if size > limit:
                if size <= limit + _DRAIN_BYTES:
                    await _drain(receive)
                await self._too_large(scope, receive, send, limit, f"{size:,} bytes")
                return None
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > limit:
                if message.get("more_body", False):
                    await _drain(receive)
                await self._too_large(scope, receive, send, limit, f"over {limit:,} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    @staticmethod
    async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int, size: str) -> None:
        response = JSONResponse(
            {"error": f"request body too large ({size}); this endpoint accepts at most {limit:,} bytes "
                      f"({limit // 1024} KiB). Shorten the task or put long text in a file in the workspace."},
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)

    def _has_token(self, scope: Scope) -> bool:
        given = _header(scope, TOKEN_HEADER.encode())
        if given is None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            values = query.get("token")
            given = values[0] if values else None
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())


async def _drain(receive: Receive) -> None:
    """Read and discard the rest of a refused body (at most ``_DRAIN_BYTES``,
    at most ``_DRAIN_SECONDS``), holding one chunk at a time: a client still
    sending when the server closes would get a connection reset instead of the
    413. A bigger body gets the 413 at once and the connection is closed."""
    drained = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            while drained <= _DRAIN_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return
                drained += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


# ---------------------------------------------------------------- app


def create_app(
    agent_factory: AgentFactory,
    *,
    workspace: str | Path | None = None,
    token: str | None = None,
    store: Store | None = None,
    title: str = "Smoke",
    demo_label: str | None = None,
    fresh_session_per_run: bool = False,
    on_close: Iterable[Callable[[], Any]] = (),
    replay_budget_bytes: int = DEFAULT_REPLAY_BUDGET,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Starlette:
    """Build the ``smoke serve`` application.

    ``agent_factory(session_id=..., store=...)`` returns the agent of a session
    (called once per session). ``token`` defaults to a fresh random one; read
    it back from ``app.state.ui.token``. ``store`` defaults to
    :func:`open_store` on ``workspace`` (a memory store without one); a store
    the server opened is closed when it shuts down.
    ``demo_label`` marks the page as a simulation. ``fresh_session_per_run``
    starts a new session for every task (the scripted demo model knows one
    task only). ``on_close`` callables run when the server shuts down.
    ``replay_budget_bytes`` bounds the replay log (see :mod:`smoke_ui.replay`);
    ``max_body_bytes`` caps the body of ``POST /api/runs`` and answers to
    questions (other requests: :data:`SMALL_BODY_BYTES`); larger bodies get 413.
    """
    owns_store = store is None
    if store is None:
        if workspace is not None:
            store = open_store(workspace)
        else:
            from smoke_core.plugin import MemoryStore

            store = MemoryStore()
    state = UIState(
        agent_factory,
        store=store,
        token=token or secrets.token_urlsafe(32),
        workspace=str(workspace) if workspace is not None else None,
        title=title,
        demo_label=demo_label,
        fresh_session_per_run=fresh_session_per_run,
        on_close=on_close,
        owns_store=owns_store,
        replay_budget_bytes=replay_budget_bytes,
    )

    def fail(exc: UIError) -> JSONResponse:
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    async def json_body(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise UIError(400, "the request body must be a JSON object") from exc
        if not isinstance(body, dict):
            raise UIError(400, "the request body must be a JSON object")
        return body

    async def index(request: Request) -> Response:
        page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
        page = page.replace("{{TOKEN}}", html.escape(state.token, quote=True))
        page = page.replace("{{TITLE}}", html.escape(state.title))
        # the characters every front end marks (smoke_core.display.MARKED): the page marks the same ones
        page = page.replace("{{MARKS}}", html.escape(json.dumps(marked_table(), separators=(",", ":")), quote=True))
        return HTMLResponse(
            page,
            headers={
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
                "X-Frame-Options": "DENY",
                "X-Content-Type-Options": "nosniff",
                "Content-Security-Policy": (
                    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
                ),
            },
        )

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def get_state(request: Request) -> Response:
        try:
            return JSONResponse(state.snapshot())
        except Exception as exc:
            log.exception("smoke-ui: could not build the state")
            return JSONResponse({"error": f"could not create the agent: {type(exc).__name__}: {exc}"}, 500)

    async def events(request: Request) -> Response:
        raw = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
        try:
            since = max(0, int(raw))
        except ValueError:
            return JSONResponse({"error": f"since must be an integer, got {raw!r}"}, status_code=400)
        try:
            hello = {
                "type": "ui.hello",
                "session_id": state.session_id,
                "run_id": None,
                "timestamp": None,
                "data": {
                    "presentations": state.presentations(),
                    "status": state.status,
                    "running": state.running,
                    "demo_label": state.demo_label,
                },
            }
        except Exception as exc:
            return JSONResponse({"error": f"could not create the agent: {type(exc).__name__}: {exc}"}, 500)
        hub = state.hub
        gap = hub.gap_after(since)
        backlog, sub = hub.subscribe(since)

        async def stream() -> AsyncIterator[str]:
            try:
                yield f"retry: {RECONNECT_MS}\n" + _sse(json.dumps(hello, ensure_ascii=False, default=str))
                if gap:
                    note = {"type": "ui.replay_gap", "session_id": state.session_id, "run_id": None,
                            "timestamp": None,
                            "data": {"budget_bytes": hub.budget_bytes, "dropped_upto": hub.evicted_upto}}
                    yield _sse(json.dumps(note))
                for seq, data in backlog:
                    yield _sse(data, id=seq)
                while True:
                    try:
                        item = await asyncio.wait_for(sub.get(), KEEPALIVE_SECONDS)
                    except TimeoutError:
                        yield ": keepalive\n\n"
                        continue
                    if item is None:
                        return  # closed, or this page fell behind: the browser reconnects and replays
                    yield _sse(item[1], id=item[0])
            finally:
                hub.unsubscribe(sub)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def post_run(request: Request) -> Response:
        said: list[str] = []
        try:
            body = await json_body(request)
            task = body.get("task")
            if not isinstance(task, str) or not task.strip():
                raise UIError(400, "task must be a non-empty string")
            session_id = body.get("session_id")
            if session_id is not None and (not isinstance(session_id, str) or not _SESSION_ID.match(session_id)):
                raise UIError(400, "session_id must be 1-128 characters of letters, digits, '_', '-', '.', ':'")
            if task.startswith("/") and not task.startswith("//"):
                sent, session_id, said = await slash(task.strip(), session_id)
                if sent is None:
                    return JSONResponse({"session_id": session_id, "status": "said", "said": said})
                task = sent
            elif task.startswith("//"):
                task = task[1:]
            sid = await state.start_run(task, session_id)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"session_id": sid, "status": "running", "said": said}, status_code=202)

    async def slash(line: str, session_id: str | None) -> tuple[str | None, str, list[str]]:
        """Run a slash command (smoke_ui.commands): the task it sends (None: none), the session, what it said."""
        from .commands import run_command

        if state.running:
            raise UIError(409, "a run is in progress: wait for it to end or stop it first")
        sid = session_id or state.session_id
        try:
            agent = state.agent_for(sid)
        except Exception as exc:
            raise UIError(500, f"could not create the agent: {type(exc).__name__}: {exc}") from exc
        try:
            result, chat = await run_command(state, agent, sid, line)
        except LookupError as exc:
            raise UIError(400, str(exc)) from None
        except RuntimeError as exc:
            raise UIError(422, str(exc)) from None
        if result is None:
            return None, chat.session_id, chat.said
        if isinstance(result, list):
            result = "\n".join(p for p in result if isinstance(p, str))
        return str(result), chat.session_id, chat.said

    async def list_commands(request: Request) -> Response:
        from .commands import commands_of, describe

        try:
            agent = state.agent_for(state.session_id)
        except Exception as exc:
            return JSONResponse({"error": f"could not create the agent: {type(exc).__name__}: {exc}"}, 500)
        return JSONResponse({"commands": describe(commands_of(agent))})

    async def post_permission(request: Request) -> Response:
        try:
            body = await json_body(request)
            decision = body.get("decision")
            if not isinstance(decision, str):
                raise UIError(400, "decision must be 'allow', 'allow_run', 'allow_always' or 'deny'")
            remember, rule = body.get("remember"), body.get("rule")
            if remember is not None and not isinstance(remember, str):
                raise UIError(400, "remember must be 'local' or 'user'")
            if rule is not None and not isinstance(rule, str):
                raise UIError(400, "rule must be a string (the rule the page showed)")
            written = state.resolve_permission(request.path_params["tool_call_id"], decision,
                                               remember=remember, rule=rule)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"ok": True, "decision": decision, **({"remembered": written} if written else {})})

    async def post_question(request: Request) -> Response:
        try:
            body = await json_body(request)
            if "values" in body:  # a form: an object of field values, or null to decline
                values = body["values"]
                if values is not None and not isinstance(values, dict):
                    raise UIError(400, "values must be an object of field values, or null to decline the form")
                state.respond_form(request.path_params["tool_call_id"], values)
                return JSONResponse({"ok": True})
            text = body.get("text")
            if not isinstance(text, str):
                raise UIError(400, "text must be a string (the answer to the question)")
            state.respond(request.path_params["tool_call_id"], text)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"ok": True})

    async def post_plan(request: Request) -> Response:
        try:
            body = await json_body(request)
            decision, mode, text = body.get("decision"), body.get("mode"), body.get("text")
            if not isinstance(decision, str):
                raise UIError(400, "decision must be 'approve', 'edit' or 'reject'")
            if mode is not None and not isinstance(mode, str):
                raise UIError(400, "mode must be 'ask-default' or 'accept-edits'")
            if text is not None and not isinstance(text, str):
                raise UIError(400, "text must be a string (the edited plan, or why it is rejected)")
            state.resolve_plan(request.path_params["tool_call_id"], decision, mode=mode, text=text)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"ok": True, "decision": decision})

    async def post_mode(request: Request) -> Response:
        try:
            body = await json_body(request)
            mode = body.get("mode")
            if not isinstance(mode, str):
                raise UIError(400, "mode must be 'plan', 'off' (leave plan mode) or a permission mode")
            now = state.set_mode(mode)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"ok": True, "mode": now})

    async def post_abort(request: Request) -> Response:
        return JSONResponse({"aborted": state.abort()})

    async def list_sessions(request: Request) -> Response:
        return JSONResponse({"sessions": state.sessions(), "current": state.session_id})

    async def new_session(request: Request) -> Response:
        if state.running:
            return fail(UIError(409, "a run is in progress: wait for it to end or stop it first"))
        return JSONResponse({"session_id": state.new_session()}, status_code=201)

    async def get_session(request: Request) -> Response:
        sid = request.path_params["session_id"]
        known = {s["session_id"] for s in state.sessions()}
        if sid not in known:
            return fail(UIError(404, f"no session {sid!r} in this server's store"))
        messages = state.store.load(sid)
        for message in messages:  # loaded copies: adding the page's HTML touches nothing stored
            if message.get("role") != "assistant":
                continue
            for block in message.get("content") or []:
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    html = markdown_html(block["text"])
                    if html:
                        block["html"] = html
        return JSONResponse({"session_id": sid, "messages": messages})

    async def rename_session(request: Request) -> Response:
        try:
            body = await json_body(request)
            title = body.get("title")
            if not isinstance(title, str):
                raise UIError(400, "title must be a string (the session's new name)")
            sid = request.path_params["session_id"]
            title = state.rename_session(sid, title)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"session_id": sid, "title": title})

    async def delete_session(request: Request) -> Response:
        sid = request.path_params["session_id"]
        try:
            current = await state.delete_session(sid)
        except UIError as exc:
            return fail(exc)
        return JSONResponse({"deleted": sid, "current": current or state.session_id})

    async def fork_session(request: Request) -> Response:
        try:
            return JSONResponse(await rewinding.fork(state, request.path_params["session_id"]))
        except rewinding.Refused as exc:
            return fail(UIError(exc.status, exc.message))

    async def rewind_session(request: Request) -> Response:
        try:
            body = await json_body(request)
            turn, checkpoint = body.get("turn"), body.get("checkpoint")
            if (turn is None) == (checkpoint is None):
                raise UIError(400, "send either {turn: N} (files and conversation back to before that turn) or "
                                   "{checkpoint: N} (files back to that checkpoint: an undo)")
            for name, value in (("turn", turn), ("checkpoint", checkpoint)):
                if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                    raise UIError(400, f"{name} must be a whole number (0 or more); got {value!r}")
            return JSONResponse(await rewinding.rewind(state, request.path_params["session_id"], turn=turn,
                                                       checkpoint=checkpoint))
        except rewinding.Refused as exc:
            return fail(UIError(exc.status, exc.message))
        except UIError as exc:
            return fail(exc)

    async def highlight_stylesheet(request: Request) -> Response:
        return Response(highlight_css(), media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await state.close()

    routes = [
        Route("/", index),
        Route("/healthz", health),
        Route("/api/state", get_state),
        Route("/api/events", events),
        Route("/api/runs", post_run, methods=["POST"]),
        Route("/api/commands", list_commands, methods=["GET"]),
        Route("/api/permissions/{tool_call_id:str}", post_permission, methods=["POST"]),
        Route("/api/questions/{tool_call_id:str}", post_question, methods=["POST"]),
        Route("/api/plans/{tool_call_id:str}", post_plan, methods=["POST"]),
        Route("/api/mode", post_mode, methods=["POST"]),
        Route("/api/abort", post_abort, methods=["POST"]),
        Route("/api/sessions", list_sessions, methods=["GET"]),
        Route("/api/sessions", new_session, methods=["POST"]),
        Route("/api/sessions/{session_id:str}", get_session, methods=["GET"]),
        Route("/api/sessions/{session_id:str}", rename_session, methods=["PATCH"]),
        Route("/api/sessions/{session_id:str}", delete_session, methods=["DELETE"]),
        Route("/api/sessions/{session_id:str}/fork", fork_session, methods=["POST"]),
        Route("/api/sessions/{session_id:str}/rewind", rewind_session, methods=["POST"]),
        Route("/static/highlight.css", highlight_stylesheet),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(_SecurityMiddleware, token=state.token, max_body_bytes=max_body_bytes,
                       small_body_bytes=min(SMALL_BODY_BYTES, max_body_bytes))
    app.state.ui = state
    return app
