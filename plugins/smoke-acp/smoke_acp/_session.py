"""One ACP session: a Smoke agent, its permission mode, and the bridge from
its events to ``session/update``, ``session/request_permission`` and back.

Events arrive from the run (sometimes from a tool's worker thread) and are
queued; one pump task per prompt turns them into updates in order. A
permission or question becomes its own task, so updates keep flowing while
the person decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CurrentModeUpdate,
    PermissionOption,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)
from acp.schema import Cost as AcpCost

from smoke_core.display import visible

from . import _updates as U


def invalid_params(message: str) -> RequestError:
    """A ``-32602`` error whose message says what happened and what to do."""
    return RequestError(-32602, message)

if TYPE_CHECKING:
    from smoke_core.plugin import Agent, Event

log = logging.getLogger("smoke.acp")

#: ACP session modes and the permission behaviour each stands for.
MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Read-only tools run; every other tool call asks first (Smoke's ask-default)."),
    "plan": ("Plan", "Read-only tools run and nothing changes: the agent presents a plan for you to approve, "
                     "then goes on in the mode you pick (Smoke's plan)."),
    "accept-edits": ("Accept edits", "File edits inside the workspace run without asking (secret-looking "
                                     "files still ask); commands and other tools ask."),
    "read-only": ("Read only", "Read-only tools run; every other tool call is refused without asking "
                               "(Smoke's deny-all)."),
    "allow-all": ("Allow all", "Every tool call runs without asking (Smoke's allow-all). Deny and ask "
                               "rules still apply."),
}
#: ACP mode → Smoke's permission mode (the gate decides: rules first, then the mode).
CORE_MODE = {"ask": "ask-default", "plan": "plan", "accept-edits": "accept-edits", "read-only": "deny-all",
             "allow-all": "allow-all"}
#: Smoke's permission mode → the ACP mode a session starts in.
MODE_OF_SETTING = {core: acp for acp, core in CORE_MODE.items()}
#: The context window the sessions' agents compact at (and report in usage updates).
CONTEXT_WINDOW = 128_000


class ACPSession:
    """A live ACP session: a Smoke agent bound to the client connection."""

    def __init__(self, *, session_id: str, cwd: Path, conn: Any, client_caps: Any, mode: str,
                 fixed_mode: str | None, models: list[str], trusted: bool,
                 warnings: list[str] | None = None) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.conn = conn
        self.client_caps = client_caps
        self.mode = mode
        #: set when managed settings fix the permission mode (the origin, for messages)
        self.fixed_mode = fixed_mode
        self.models = models
        self.trusted = trusted
        self.warnings = list(warnings or [])
        self.agent: Agent | None = None
        self.running: asyncio.Task[Any] | None = None
        self.cancel_requested = False
        self.denied_rules: set[str] = set()
        self._queue: asyncio.Queue[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ids: dict[str, str] = {}
        self._used_ids: set[str] = set()
        self._started: dict[str, ToolCallStart] = {}
        self._output: dict[str, str] = {}
        self._dirty: set[str] = set()
        self._streamed: list[str] = []
        self._off: Callable[[], None] | None = None

    # ------------------------------------------------------------ modes and models

    def mode_state(self) -> SessionModeState:
        ids = [self.mode] if self.fixed_mode else list(MODES)
        return SessionModeState(current_mode_id=self.mode, available_modes=[
            SessionMode(id=i, name=MODES[i][0], description=MODES[i][1]) for i in ids])

    def config_options(self) -> list[Any]:
        modes = [self.mode] if self.fixed_mode else list(MODES)
        options: list[Any] = [SessionConfigOptionSelect(
            type="select", id="mode", name="Permission mode", category="mode", current_value=self.mode,
            description="When Smoke asks before a tool call",
            options=[SessionConfigSelectOption(value=m, name=MODES[m][0], description=MODES[m][1]) for m in modes],
        )]
        current = self.model or "default"
        models = list(dict.fromkeys([current, *self.models])) if self._can_switch_model() else [current]
        options.append(SessionConfigOptionSelect(
            type="select", id="model", name="Model", category="model", current_value=current,
            options=[SessionConfigSelectOption(value=m, name=m) for m in models],
        ))
        return options

    @property
    def model(self) -> str | None:
        provider = getattr(self.agent, "provider", None)
        return getattr(provider, "model", None) or None

    def _can_switch_model(self) -> bool:
        return callable(getattr(getattr(self.agent, "provider", None), "with_model", None))

    def set_mode(self, mode_id: str) -> None:
        if mode_id not in MODES:
            raise invalid_params(f"unknown mode {mode_id!r}; the modes are "
                                                          f"{', '.join(MODES)}")
        if self.fixed_mode and mode_id != self.mode:
            raise invalid_params(f"the permission mode is fixed to {self.mode!r} by "
                                                          f"managed settings ({self.fixed_mode})")
        if self.agent is not None:
            try:
                self.agent.set_permission_mode(CORE_MODE[mode_id])
            except ValueError as exc:
                raise invalid_params(str(exc)) from None
        self.mode = mode_id

    def set_model(self, model: str) -> None:
        if model == self.model:
            return
        if not self._can_switch_model():
            raise invalid_params("this session's provider cannot switch models; "
                                                          "start a session with --model instead")
        if model not in self.models:
            raise invalid_params(f"unknown model {model!r}; offered: "
                                                          f"{', '.join([self.model or '', *self.models])} "
                                                          f"(list more in the setting acp_models)")
        if self.running is not None:
            raise invalid_params("a prompt is running; switch the model after it ends")
        assert self.agent is not None
        self.agent.set_model(model)

    # ------------------------------------------------------------ sending

    async def send(self, update: Any) -> None:
        try:
            await self.conn.session_update(session_id=self.session_id, update=update)
        except (ConnectionError, OSError) as exc:
            log.info("smoke acp: update not delivered (%s)", exc)

    async def send_commands(self) -> None:
        """The slash commands plugins offer for this session (``available_commands_update``)."""
        from ._commands import available

        assert self.agent is not None
        try:
            update = available(self.agent)
        except Exception as exc:  # a plugin's commands must not break the session
            log.warning("smoke acp: could not list slash commands: %s", exc)
            return
        if update.available_commands:
            await self.send(update)

    async def send_mode(self) -> None:
        await self.send(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=self.mode))

    async def send_config(self) -> None:
        from acp.schema import ConfigOptionUpdate

        await self.send(ConfigOptionUpdate(session_update="config_option_update",
                                           config_options=self.config_options()))

    def _read(self, raw: str) -> tuple[Path, str | None] | None:
        """``(absolute path, current text)`` of a tool's path argument, through the
        workspace sandbox (None outside it); the text only for small UTF-8 files."""
        assert self.agent is not None
        workspace = self.agent.workspace
        try:
            path = workspace.resolve(raw)
        except Exception:
            return None
        try:
            with workspace.open_path(str(path), write=False) as wp:
                st = wp.lstat()
                if st is None or st.st_size > U.MAX_DIFF_FILE_BYTES:
                    return path, None
                data = wp.read_bytes()
        except Exception:
            return path, None
        try:
            return path, data.decode("utf-8")
        except UnicodeDecodeError:
            return path, None

    # ------------------------------------------------------------ prompts

    async def prompt(self, parts: list[Any]) -> str:
        """Run one prompt; returns the ACP stop reason."""
        assert self.agent is not None
        if self.running is not None:
            raise RequestError(-32600, "a prompt is already running in this session; cancel it (session/cancel) "
                                      "or wait for it")
        from ._commands import expand

        expanded, said = await expand(self.agent, self.session_id, parts)
        for text in said:
            await self.send(U.message_chunk(text + "\n"))
        now = MODE_OF_SETTING.get(self.agent.permission_mode)  # a command (/plan) may have switched the mode
        if now is not None and now != self.mode:
            self.mode = now
            await self.send_mode()
            await self.send_config()
        if expanded is None:  # a slash command that sent nothing to the model
            return "end_turn"
        parts = expanded
        self.cancel_requested = False
        self._streamed.clear()
        loop = asyncio.get_running_loop()
        self._loop = loop
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue
        self._off = self.agent.on_any(lambda event: loop.call_soon_threadsafe(queue.put_nowait, event))
        pump = asyncio.create_task(self._pump(queue))
        for warning in self.warnings:
            queue.put_nowait(("note", f"⚠ {warning}"))
        self.warnings.clear()
        self.running = asyncio.current_task()
        try:
            with self._editor_files(loop):
                result = await self.agent.run(parts)
        except ValueError as exc:  # a task the provider cannot take (images), said for people
            raise invalid_params(str(exc)) from None
        finally:
            self.running = None
            if self._off is not None:
                self._off()
            loop.call_soon(queue.put_nowait, None)
            with contextlib.suppress(Exception):
                await pump
            for task in list(self._tasks):
                task.cancel()
        if self.cancel_requested or result.status == "interrupted":
            return "cancelled"
        if result.status == "completed" and result.text and result.text.strip() not in "".join(self._streamed):
            await self.send(U.message_chunk(("\n\n" if self._streamed else "") + result.text))  # finish_task's summary
        if result.status == "failed" and result.error is not None:
            if result.error.code == "run_max_steps":
                return "max_turn_requests"
            hint = f"\n\n{result.error.hint}" if result.error.hint else ""
            await self.send(U.message_chunk(f"\n\n✗ the run failed [{result.error.code}]: "
                                            f"{result.error.message}{hint}"))
        return "end_turn"

    def _editor_files(self, loop: asyncio.AbstractEventLoop) -> Any:
        fs = getattr(self.client_caps, "fs", None)
        read = bool(getattr(fs, "read_text_file", False))
        write = bool(getattr(fs, "write_text_file", False))
        if not (read or write):
            return contextlib.nullcontext()
        try:
            from smoke_tools_filesystem import editor_files
        except ImportError:
            return contextlib.nullcontext()
        from ._files import ClientFiles

        agent = self.agent
        try:
            from smoke_tools_terminal import background_running
        except ImportError:  # no terminal tools: no background command can race the editor

            def background_running(options: Any = None) -> bool:
                return False

        def busy() -> bool:
            return background_running(agent.options if agent is not None else None)

        root = agent.workspace.root if agent is not None else Path(self.cwd)
        return editor_files(ClientFiles(self.conn, self.session_id, loop, read=read, write=write, root=root,
                                        busy=busy))

    def cancel(self) -> None:
        self.cancel_requested = True
        if self.agent is not None and self.running is not None:
            self.agent.abort()

    # ------------------------------------------------------------ events

    async def _pump(self, queue: asyncio.Queue[Any]) -> None:
        while True:
            item = await queue.get()
            if item is None:
                await self._flush_output()
                return
            if isinstance(item, tuple) and item[0] == "note":
                await self.send(U.message_chunk(item[1] + "\n\n"))
                continue
            try:
                await self._handle(item, queue)
            except Exception:  # one bad event never stops the session
                log.exception("smoke acp: could not send %s", getattr(item, "type", item))

    def _acp_id(self, smoke_id: str) -> str:
        acp_id = self._ids.get(smoke_id)
        if acp_id is None:
            acp_id, n = smoke_id, 1
            while acp_id in self._used_ids:  # a model that reuses ids across turns
                n += 1
                acp_id = f"{smoke_id}#{n}"
            self._used_ids.add(acp_id)
            self._ids[smoke_id] = acp_id
        return acp_id

    async def _flush_output(self) -> None:
        for smoke_id in list(self._dirty):
            self._dirty.discard(smoke_id)
            if smoke_id in self._output:
                await self.send(U.output_progress(self._acp_id(smoke_id), self._output[smoke_id]))

    async def _handle(self, event: Event, queue: asyncio.Queue[Any]) -> None:
        assert self.agent is not None
        t, d = event.type, event.data
        if self._dirty and t != "tool.output":
            await self._flush_output()
        sub = d.get("parent_tool_call_id") is not None
        if t == "text.delta" and d.get("text"):
            if not sub:
                self._streamed.append(d["text"])
            await self.send(U.thought_chunk(d["text"]) if sub else U.message_chunk(d["text"]))
        elif t == "text.thought" and d.get("text"):
            await self.send(U.thought_chunk(d["text"]))
        elif t == "text.discarded":
            await self.send(U.message_chunk("\n\n↺ (the partial reply above was discarded; retrying)\n\n"))
        elif t == "tool.started":
            name = str(d.get("tool_name"))
            self._ids.pop(str(d["tool_call_id"]), None)  # a new call: a fresh id
            call_id = self._acp_id(str(d["tool_call_id"]))
            input: dict[str, Any] = d["input"] if isinstance(d.get("input"), dict) else {}
            start = U.tool_call_start(call_id, self.agent.registry.get(name), name, input,
                                      d.get("presentation"), self._read)
            if sub:
                start.field_meta = {"smoke": {"parentToolCallId": self._ids.get(str(d["parent_tool_call_id"]))}}
            self._started[call_id] = start
            await self.send(start)
        elif t == "tool.output":
            smoke_id = str(d["tool_call_id"])
            self._output[smoke_id] = (self._output.get(smoke_id, "") + str(d.get("text", "")))[-U.OUTPUT_TAIL_CHARS * 2:]
            self._dirty.add(smoke_id)
            if queue.empty():  # output already waiting in the queue is sent together
                await self._flush_output()
        elif t == "tool.progress":
            await self.send(ToolCallProgress(session_update="tool_call_update",
                                             tool_call_id=self._acp_id(str(d["tool_call_id"])),
                                             status="in_progress"))
        elif t == "tool.completed":
            smoke_id = str(d["tool_call_id"])
            call_id = self._acp_id(smoke_id)
            self._output.pop(smoke_id, None)
            done_start = self._started.pop(call_id, None)
            keep = [c for c in (done_start.content or []) if getattr(c, "type", None) == "diff"] if done_start else []
            await self.send(U.tool_call_done(call_id, is_error=bool(d.get("is_error")),
                                             content=d.get("content") or [], keep=keep if not d.get("is_error") else []))
        elif t == "permission.required":
            self._spawn(self._ask_permission(d))
        elif t == "permission.resolved":
            allowed = d.get("decision") != "deny"
            if str(d.get("tool_call_id", "")).startswith("mcp_server:"):
                await self.send(ToolCallProgress(session_update="tool_call_update",
                                                 tool_call_id=self._acp_id(str(d["tool_call_id"])),
                                                 status="completed" if allowed else "failed"))
            elif allowed:  # approved: the call runs now
                await self.send(ToolCallProgress(session_update="tool_call_update",
                                                 tool_call_id=self._acp_id(str(d["tool_call_id"])),
                                                 status="in_progress"))
        elif t == "ask_user.required":
            self._spawn(self._ask_question(d))
        elif t == "plan.required":
            self._spawn(self._ask_plan(d))
        elif t == "permission.mode_changed" and d.get("mode") in MODE_OF_SETTING:
            self.mode = MODE_OF_SETTING[d["mode"]]  # an approved plan: the editor's mode selector follows
            await self.send_mode()
            await self.send_config()
        elif t == "todo.updated":
            await self.send(U.plan_update(d.get("todos") or []))
        elif t == "usage.updated" and not sub:
            step = d.get("step_usage") or {}
            usage = d.get("usage") or {}
            used = int(step.get("input_tokens") or 0) + int(step.get("output_tokens") or 0)
            cost = usage.get("cost_usd")
            await self.send(UsageUpdate(session_update="usage_update", used=max(0, used), size=CONTEXT_WINDOW,
                                        cost=AcpCost(amount=float(cost), currency="USD") if cost is not None else None))
        elif t == "run.warning":
            error = d.get("error") or {}
            await self.send(U.message_chunk(f"\n\n⚠ {error.get('message', '')}\n\n"))
        elif t == "subagent.started":
            await self.send(U.thought_chunk(f"subagent started: {d.get('task', '')}\n"))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ permissions and questions

    async def _ask_permission(self, d: dict[str, Any]) -> None:
        assert self.agent is not None
        agent = self.agent
        smoke_id = str(d["tool_call_id"])
        rule = d.get("suggested_rule")
        if rule and rule in self.denied_rules:
            agent.resolve_permission(smoke_id, "deny")  # answered "always reject" earlier in this session
            return
        name = str(d.get("tool_name"))
        input: dict[str, Any] = d["input"] if isinstance(d.get("input"), dict) else {}
        call_id = self._acp_id(smoke_id)
        if d.get("kind") == "tool":
            start = self._started.get(call_id)
            title = start.title if start else U.tool_title(agent.registry.get(name), name, input, d.get("presentation"))
            kind = start.kind if start else "other"
            locations = start.locations if start else None
            start_content = list(start.content or []) if start else []
            options = [PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once")]
            if rule:
                options.append(PermissionOption(option_id="allow_always", name=f"Always allow {visible(rule)}",
                                                kind="allow_always"))
            options.append(PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"))
            if rule:
                options.append(PermissionOption(option_id="reject_always", name=f"Always reject {visible(rule)}",
                                                kind="reject_always"))
        else:  # an MCP server asks to start: announce it as a tool call first
            self._ids.pop(smoke_id, None)
            call_id = self._acp_id(smoke_id)
            title = f"Start MCP server {visible(name)}"
            kind, locations, start_content = "execute", None, []
            await self.send(ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=title,
                                          kind="execute", status="pending"))
            options = [PermissionOption(option_id="allow_once", name="Start it", kind="allow_once"),
                       PermissionOption(option_id="reject_once", name="Do not start it", kind="reject_once")]
        tool_call = ToolCallUpdate(tool_call_id=call_id, title=title, kind=kind, status="pending",
                                   locations=locations,
                                   content=U.approval_content(name, input, d.get("reason"), start_content))
        choice = await self._choose(tool_call, options, "cancelled", "the permission request failed (%s); denied")
        await self._apply(smoke_id, choice, rule)

    async def _choose(self, tool_call: ToolCallUpdate, options: list[PermissionOption], otherwise: str,
                      failed: str) -> str:
        """The option the person picked in ``session/request_permission``;
        ``otherwise`` when they cancelled or the request failed (logged with ``failed``)."""
        try:
            response = await self.conn.request_permission(session_id=self.session_id, tool_call=tool_call,
                                                          options=options)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("smoke acp: " + failed, exc)
            return otherwise
        outcome = response.outcome
        return outcome.option_id if isinstance(outcome, AllowedOutcome) else otherwise

    async def _apply(self, smoke_id: str, choice: str, rule: str | None) -> None:
        assert self.agent is not None
        agent = self.agent
        try:
            if choice == "allow_once":
                agent.resolve_permission(smoke_id, "allow")
            elif choice == "allow_always" and rule:
                written = agent.resolve_permission(smoke_id, "allow_always",
                                                   remember="local" if self.trusted else "user")
                if written:
                    texts = ", ".join(r.text for r in written)
                    await self.send(U.message_chunk(f"\n\n→ always allowed: rule{'s' if len(written) > 1 else ''} "
                                                    f"{texts} written to {written[0].origin}\n\n"))
            elif choice == "reject_always" and rule:
                # deny rules apply even from a folder that is not trusted: the local file always counts
                denied = agent.resolve_permission(smoke_id, "deny_always", remember="local")
                self.denied_rules.add(rule)
                if denied:
                    texts = ", ".join(r.text for r in denied)
                    await self.send(U.message_chunk(f"\n\n→ always rejected: deny rule{'s' if len(denied) > 1 else ''} "
                                                    f"{texts} written to {denied[0].origin}\n\n"))
            else:
                agent.resolve_permission(smoke_id, "deny")
        except (ValueError, OSError) as exc:
            log.warning("smoke acp: could not apply %s for %s (%s)", choice, smoke_id, exc)
            with contextlib.suppress(ValueError):
                agent.resolve_permission(smoke_id, "allow" if choice.startswith("allow") else "deny")
            await self.send(U.message_chunk(f"\n\n⚠ could not remember that answer ({exc}); applied to this call "
                                            f"only\n\n"))

    async def _ask_plan(self, d: dict[str, Any]) -> None:
        """``exit_plan_mode``: the plan in a permission request whose options are
        the ways on (accept edits, or ask before each change) and "keep planning"."""
        assert self.agent is not None
        smoke_id = str(d["tool_call_id"])
        call_id = self._acp_id(smoke_id)
        options = [
            PermissionOption(option_id="approve_edits", name="Yes, and accept edits", kind="allow_always"),
            PermissionOption(option_id="approve", name="Yes, and ask before each change", kind="allow_once"),
            PermissionOption(option_id="reject", name="No, keep planning", kind="reject_once"),
        ]
        tool_call = ToolCallUpdate(tool_call_id=call_id, title="Ready to go on? Approve the plan", kind="switch_mode",
                                   status="pending", content=[U._text_content(visible(str(d.get("plan") or "")))])
        choice = await self._choose(tool_call, options, "reject", "the plan could not be shown (%s); rejected")
        if choice in ("approve", "approve_edits"):
            self.agent.resolve_plan(smoke_id, "approve", mode="accept-edits" if choice == "approve_edits"
                                    else "ask-default")
            return
        # ACP takes no words with an answer: the person's next message says what to change
        self.agent.resolve_plan(smoke_id, "reject", text="the person chose to keep planning in their editor, which "
                                "cannot take their words during this turn. End your turn now without a new plan: "
                                "their next message says what to change.")

    async def _ask_form(self, d: dict[str, Any]) -> None:
        """A form (an MCP server's elicitation): ACP's ``elicitation/create``
        when the editor says it can show forms (client capability
        ``elicitation.form``), else declined with a line saying why. The answer
        is checked against the form (defaults applied); one that does not fit
        declines, with what was wrong."""
        assert self.agent is not None
        from acp.schema import (
            AcceptElicitationResponse,
            ElicitationFormSessionMode,
            ElicitationSchema,
        )

        from smoke_core.plugin import FormError

        smoke_id = str(d["tool_call_id"])
        question = visible(str(d.get("question", "")))
        caps = getattr(self.client_caps, "elicitation", None)
        if getattr(caps, "form", None) is None:
            await self.send(U.message_chunk(f"\n\n⚠ {question} — this asks for a form, and your editor cannot show "
                                            f"forms (no elicitation capability): declined\n\n"))
            self.agent.respond_form(smoke_id, None)
            return
        try:
            schema = ElicitationSchema.model_validate(d["form"])
            response = await self.conn.create_elicitation(
                message=question, mode=ElicitationFormSessionMode(session_id=self.session_id, requested_schema=schema))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("smoke acp: the form could not be shown (%s); declined", exc)
            await self.send(U.message_chunk(f"\n\n⚠ {question} — the form could not be shown in your editor "
                                            f"({type(exc).__name__}): declined\n\n"))
            self.agent.respond_form(smoke_id, None)
            return
        if not isinstance(response, AcceptElicitationResponse):
            self.agent.respond_form(smoke_id, None)
            return
        try:
            self.agent.respond_form(smoke_id, dict(response.content or {}))
        except FormError as exc:
            await self.send(U.message_chunk(f"\n\n⚠ the answer to {question!r} does not fit the form ({exc}): "
                                            f"declined\n\n"))
            self.agent.respond_form(smoke_id, None)

    async def _ask_question(self, d: dict[str, Any]) -> None:
        assert self.agent is not None
        if d.get("form") is not None:
            await self._ask_form(d)
            return
        smoke_id = str(d["tool_call_id"])
        question = str(d.get("question", ""))
        options = [str(o) for o in d.get("options") or []]
        if not options or d.get("multiple"):
            # ACP has no free-text question inside a turn: the question is shown, the
            # model ends its turn, and the person's next message is the answer
            await self.send(U.message_chunk(f"\n\n**{question}**\n\n"
                                            + "".join(f"- {o}\n" for o in options)))
            self.agent.respond(smoke_id, "(the question is shown to the person in their editor, which cannot "
                                         "take an answer during this turn. End your turn now without guessing: "
                                         "their next message is the answer.)")
            return
        call_id = self._acp_id(smoke_id)
        choices = [PermissionOption(option_id=f"answer_{i}", name=visible(o), kind="allow_once")
                   for i, o in enumerate(options)]
        choices.append(PermissionOption(option_id="no_answer", name="Do not answer", kind="reject_once"))
        tool_call = ToolCallUpdate(tool_call_id=call_id, title=visible(question), kind="other", status="pending",
                                   content=[U._text_content(visible(question))])
        choice = await self._choose(tool_call, choices, "no_answer", "the question could not be asked (%s)")
        if choice.startswith("answer_") and choice[7:].isdigit() and int(choice[7:]) < len(options):
            self.agent.respond(smoke_id, options[int(choice[7:])])
        else:
            self.agent.respond(smoke_id, "")

    # ------------------------------------------------------------ replay and closing

    async def replay(self, messages: list[dict[str, Any]]) -> None:
        assert self.agent is not None
        registry = self.agent.registry

        def read(raw: str) -> tuple[Path, str | None] | None:
            found = self._read(raw)
            return None if found is None else (found[0], None)  # today's file is not the old side of a diff

        for update in U.replay(messages, registry.get, read):
            await self.send(update)

    async def aclose(self) -> None:
        if self.agent is not None and self.running is not None:
            self.agent.abort()
            with contextlib.suppress(BaseException):
                await asyncio.shield(self.running)
        for task in list(self._tasks):
            task.cancel()
        if self.agent is not None:
            with contextlib.suppress(Exception):
                await self.agent.aclose()
