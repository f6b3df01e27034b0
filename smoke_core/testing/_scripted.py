"""The scripted provider and the small helpers of ``smoke_core.testing``:
:class:`ScriptedProvider`, :func:`make_tool_context`, :func:`isolate_settings`."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from ..base.errors import AgentError, AgentErrorInfo
from ..tools.context import ToolContext
from ..tools.workspace import Workspace
from ..wire.types import (
    Finished,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)

#: The settings variables ``isolate_settings`` removes from the environment.
SETTINGS_ENV = ("SMOKE_PROVIDER", "SMOKE_MODEL", "SMOKE_BASE_URL", "SMOKE_PERMISSION", "SMOKE_MAX_STEPS")


def isolate_settings(monkeypatch: Any, folder: Path) -> None:
    """Keep a test away from the real user settings, trust store and managed
    settings (``/etc/smoke/managed.yaml``) and from ``SMOKE_*`` settings in the
    environment. Use it in an autouse fixture::

        @pytest.fixture(autouse=True)
        def _isolated(tmp_path_factory, monkeypatch):
            isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings"))
    """
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "state"))
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(folder / "no-managed-settings.yaml"))
    for var in SETTINGS_ENV:
        monkeypatch.delenv(var, raising=False)


Turn = str | dict[str, Any] | BaseException | AgentErrorInfo | Callable[[ModelRequest], Any]


class ScriptedProvider:
    """Plays back ``turns``, one per model call.

    A turn is a string (the final text), a dict ``{"text": str,
    "thought": str, "tool_calls": [{"name": str, "input": dict}],
    "usage": {"input_tokens": n, "output_tokens": n}}`` (a tool call may give
    ``"id"``, or ``"arguments"`` as raw JSON text instead of ``"input"``;
    ``"finish_reason"``, ``"response_model"`` and ``"response_id"`` set what
    the turn's ``Finished`` reports), an
    exception or :class:`AgentErrorInfo` to raise for that call, or a callable
    ``(request) -> turn``. ``.requests`` holds every :class:`ModelRequest`
    received (deep copies). ``delay`` seconds are awaited per call.
    """

    name = "scripted"

    def __init__(self, turns: Iterable[Turn] = (), *, model: str = "scripted-model", delay: float = 0.0,
                 chunk_size: int = 0, copy_requests: bool = True) -> None:
        self.turns: list[Turn] = list(turns)
        self.model = model
        self.delay = delay
        self.chunk_size = chunk_size
        self.copy_requests = copy_requests
        self.requests: list[ModelRequest] = []
        self._calls = 0

    def with_model(self, model: str) -> ScriptedProvider:
        """The same script, shared (a subagent's calls take the next turns); ``model`` recorded."""
        clone = copy.copy(self)
        clone.model = model
        return clone

    def add(self, *turns: Turn) -> None:
        self.turns.extend(turns)

    @property
    def calls(self) -> int:
        return self._calls

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self.copy_requests:
            self.requests.append(
                ModelRequest(
                    model=request.model,
                    messages=copy.deepcopy(request.messages),
                    tools=copy.deepcopy(request.tools),
                    system=request.system,
                    settings=dict(request.settings),
                    user_id=request.user_id,
                )
            )
        else:
            self.requests.append(request)
        index = self._calls
        self._calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if index >= len(self.turns):
            raise AgentError.from_code(
                "provider_error",
                f"ScriptedProvider ran out of turns: call {index + 1} but only {len(self.turns)} turn(s) scripted",
            )
        turn = self.turns[index]
        if callable(turn) and not isinstance(turn, (BaseException, AgentErrorInfo)):
            turn = turn(request)
        if isinstance(turn, AgentErrorInfo):
            raise AgentError(turn)
        if isinstance(turn, BaseException):
            raise turn
        if isinstance(turn, str):
            turn = {"text": turn}
        if not isinstance(turn, dict):
            raise TypeError(f"ScriptedProvider: unsupported turn {turn!r}")
        if turn.get("thought"):
            yield ThoughtDelta(turn["thought"])
        text = turn.get("text") or ""
        if text:
            size = self.chunk_size or len(text)
            for i in range(0, len(text), size):
                yield TextDelta(text[i : i + size])
        for i, call in enumerate(turn.get("tool_calls") or []):
            args: Any = call["arguments"] if "arguments" in call else call.get("input", {})
            yield ToolCallRequest(id=call.get("id") or f"call_{index + 1}_{i + 1}", name=call["name"], arguments=args)
        usage = turn.get("usage") or {"input_tokens": _estimate(request), "output_tokens": max(1, len(text) // 4)}
        yield UsageReport(Usage(**usage))
        yield Finished(turn.get("finish_reason") or ("tool_calls" if turn.get("tool_calls") else "stop"),
                       model=turn.get("response_model"), response_id=turn.get("response_id"))


def _estimate(request: ModelRequest) -> int:
    # a rough, cheap figure: the test double must not cost more than the loop it drives
    return max(1, len(request.system or "") // 4 + 20 * len(request.messages))


def make_tool_context(
    workspace: str | Path | Workspace,
    *,
    tool_name: str = "tool",
    tool_call_id: str = "call_test",
    events: list[tuple[str, dict[str, Any]]] | None = None,
    answers: Iterable[str] = (),
    options: Any = None,
    run_id: str = "run_test",
) -> ToolContext:
    """A real :class:`ToolContext` for unit tests: events go to ``events``,
    ``ask_user`` returns the next of ``answers``, instructions and the finish
    summary are kept on ``ctx.test_instructions`` / ``ctx.test_finished``."""
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    sink = events if events is not None else []
    pending = list(answers)
    instructions: list[str] = []
    finished: list[str] = []
    artifacts = ws.root / ".smoke" / "runs" / run_id

    async def ask(call_id: str, question: str, *, options: Any = None, multiple: bool = False) -> str:
        sink.append(("ask_user.required", {"tool_call_id": call_id, "question": question, "options": options}))
        if not pending:
            raise AssertionError(f"make_tool_context: no answer scripted for question {question!r}")
        return pending.pop(0)

    def add(text: str) -> bool:
        if text in instructions:
            return False
        instructions.append(text)
        return True

    def artifacts_dir() -> Path:
        artifacts.mkdir(parents=True, exist_ok=True)
        return artifacts

    ctx = ToolContext(
        workspace=ws,
        run_id=run_id,
        session_id=None,
        user_id=None,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        cancelled=asyncio.Event(),
        emit=lambda t, d: sink.append((t, d)),
        ask_user=ask,
        add_instructions=add,
        finish=finished.append,
        artifacts_dir=artifacts_dir,
        options=options,
    )
    ctx.test_instructions = instructions  # type: ignore[attr-defined]
    ctx.test_finished = finished  # type: ignore[attr-defined]
    ctx.test_events = sink  # type: ignore[attr-defined]
    return ctx
