"""``ToolContext``: what a tool's ``execute`` gets besides its input."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, overload

from .workspace import Workspace


class ToolContext:
    """Per-call context handed to ``execute(input, ctx)``.

    Attributes: ``workspace`` (the sandbox), ``run_id``, ``session_id``,
    ``user_id``, ``tool_call_id``, ``tool_name``, ``cancelled`` (an
    ``asyncio.Event`` set when the run is aborted) and ``options`` (the
    agent's options, including plugin options passed to ``create_agent``).
    """

    def __init__(
        self,
        *,
        workspace: Workspace,
        run_id: str,
        session_id: str | None,
        user_id: str | None,
        tool_call_id: str,
        tool_name: str,
        cancelled: asyncio.Event,
        emit: Callable[[str, dict[str, Any]], None],
        ask_user: Callable[..., Awaitable[str]],
        add_instructions: Callable[[str], bool],
        finish: Callable[[str], None],
        artifacts_dir: Callable[[], Path],
        options: Any = None,
        state: dict[str, Any] | None = None,
        subagent: Callable[..., Awaitable[Any]] | None = None,
        grants: frozenset[str] = frozenset(),
    ) -> None:
        self.workspace = workspace
        self.run_id = run_id
        self.session_id = session_id
        self.user_id = user_id
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.cancelled = cancelled
        self._emit = emit
        self._ask_user = ask_user
        self._add_instructions = add_instructions
        self._finish = finish
        self._artifacts_dir = artifacts_dir
        self.options = options
        self._subagent = subagent
        #: what the person granted this one call beyond the settings when
        #: approving it (``"network"``: "allow with network" for a sandboxed command)
        self.grants = grants
        #: Run-scoped scratch space shared by the tools of one run (e.g. background processes).
        self.state: dict[str, Any] = state if state is not None else {}

    @property
    def artifacts_dir(self) -> Path:
        """``<workspace>/.smoke/runs/<run_id>/``, created on first use."""
        return self._artifacts_dir()

    def emit_progress(
        self,
        message: str | None = None,
        *,
        progress: float | None = None,
        total: float | None = None,
        presentation: dict[str, Any] | None = None,
    ) -> None:
        """Emit ``tool.progress`` for this call."""
        data: dict[str, Any] = {
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "message": message,
            "progress": progress,
            "total": total,
        }
        if presentation is not None:
            data["presentation"] = presentation
        self._emit("tool.progress", data)

    def emit_output(self, text: str, *, stream: str = "stdout") -> None:
        """Emit ``tool.output`` (live output of a running command)."""
        self._emit(
            "tool.output",
            {"tool_call_id": self.tool_call_id, "tool_name": self.tool_name, "stream": stream, "text": text},
        )

    def emit(self, type: str, data: dict[str, Any]) -> None:
        """Emit any event (e.g. ``todo.updated``) on the run's stream."""
        self._emit(type, data)

    @overload
    async def ask_user(self, question: str, *, options: list[str] | None = None, multiple: bool = False) -> str: ...

    @overload
    async def ask_user(self, question: str, *, form: dict[str, Any]) -> dict[str, Any] | None: ...

    async def ask_user(self, question: str, *, options: list[str] | None = None, multiple: bool = False,
                       form: dict[str, Any] | None = None) -> Any:
        """Pause with ``ask_user.required`` until ``agent.respond(tool_call_id, text)``.

        With ``form`` (a flat JSON Schema object, see :mod:`smoke_core.base.forms`)
        the person fills in a form instead (``agent.respond_form``): the
        answer is the checked values with the schema's defaults applied, or
        None when the person declined (or nobody is there to answer)."""
        if form is not None:
            return await self._ask_user(self.tool_call_id, question, form=form)
        return await self._ask_user(self.tool_call_id, question, options=options, multiple=multiple)

    def add_instructions(self, text: str) -> bool:
        """Add guidance for the rest of the run: it joins the conversation as a
        message before the next model turn (the system prompt never changes
        during a run, so what providers cache stays valid) and is given again
        after a compaction. The same text is added once; returns False if it
        was already there."""
        return self._add_instructions(text)

    async def run_subagent(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        tools: list[str] | None = None,
        max_steps: int | None = None,
        output_type: Any = None,
        model: str | None = None,
        name: str | None = None,
    ) -> Any:
        """Run a child agent on ``prompt`` with a fresh context and return its
        :class:`~smoke_core.RunResult`. The child uses this run's provider,
        hooks, permission gate (rules, mode, the same person answering) and
        sandbox — never looser; ``tools`` narrows the tools it gets (names
        from this run's tools); ``model`` switches the model on the same
        provider (when the provider can: ``provider.with_model``). Its events reach this agent's listeners with
        ``parent_tool_call_id`` = this call; aborting this run aborts it.
        Raises :class:`~smoke_core.ToolError` past ``Guards.subagent_depth``."""
        if self._subagent is None:
            raise RuntimeError("this tool context cannot start subagents (it was not made by a run)")
        return await self._subagent(
            self.tool_call_id, prompt, system_prompt=system_prompt, tools=tools, max_steps=max_steps,
            output_type=output_type, model=model, name=name,
        )

    def finish(self, summary: str) -> None:
        """End the run as completed with ``summary`` once this step's calls are done."""
        self._finish(summary)
