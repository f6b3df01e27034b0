"""Subagents: a child run with a fresh context under its parent's policy
(``ctx.run_subagent``, the ``task`` tool), and how its events reach the
parent's listeners.

:class:`SubagentRunner` is a base of :class:`~smoke_core.run.handle.RunHandle`;
a child is a run of the same class (``type(self)``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..base.errors import ToolError
from ..base.messages import Message
from .event_bus import EventBus
from .output import FINAL_RESULT, OutputSpec
from .state import RunDeps, RunResult, RunState

if TYPE_CHECKING:
    from ..policy.options import AgentOptions


class SubagentRunner:
    """Starts child runs; the attributes are set by the run."""

    _deps: RunDeps
    _st: RunState
    _loop: asyncio.AbstractEventLoop | None
    options: AgentOptions
    agent: Any
    depth: int
    emit: Callable[[str, dict[str, Any]], None]
    _listening: Callable[[str], bool]

    async def _run_subagent(
        self,
        parent_tool_call_id: str,
        prompt: str,
        *,
        system_prompt: str | None = None,
        tools: list[str] | None = None,
        max_steps: int | None = None,
        output_type: Any = None,
        model: str | None = None,
        name: str | None = None,
    ) -> RunResult:
        """A child run with a fresh context under this run's policy (see
        :meth:`ToolContext.run_subagent`)."""
        deps = self._deps
        limit = deps.guards.subagent_depth
        if not limit or self.depth + 1 > limit:
            raise ToolError(
                f"a subagent cannot start another one here: subagents nest at most {limit} deep "
                f"(Guards.subagent_depth); do this part yourself",
            )
        available = {n: t for n, t in self._st.tools.items() if n != FINAL_RESULT}
        if tools is not None:
            unknown = [n for n in tools if n not in available]
            if unknown:
                raise ToolError(
                    f"the subagent asks for tools this run does not have: {', '.join(unknown)}; "
                    f"available: {', '.join(sorted(available))}",
                    code="tool_invalid_input",
                )
            available = {n: available[n] for n in tools}
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ToolError(f"max_steps must be a positive whole number, got {max_steps!r}", code="tool_invalid_input")
        provider = deps.provider
        if model is not None and model != getattr(provider, "model", None):
            with_model = getattr(provider, "with_model", None)
            if with_model is None:
                raise ToolError(
                    f"the provider {getattr(provider, 'name', '?')} cannot switch models for a subagent; "
                    f"leave model out (the subagent uses {getattr(provider, 'model', 'the same model')})",
                )
            provider = with_model(model)
        options = dataclasses.replace(self.options, max_steps=max_steps or self.options.max_steps)
        child_deps = dataclasses.replace(
            deps,
            provider=provider,
            options=options,
            exposed_tools=lambda: dict(available),
            load_history=list,
            store_append=_discard,
            compactor=type(deps.compactor)(context_window=deps.compactor.context_window),
            system_prompt=deps.system_prompt if system_prompt is None else system_prompt,
        )
        output = OutputSpec(output_type) if output_type is not None else None
        make_run = cast("Callable[..., Any]", type(self))  # a child is a run of the same class
        child = make_run(self.agent, prompt, child_deps, output=output, parent=self,
                          parent_tool_call_id=parent_tool_call_id)
        child.agent_name = name
        child._loop = self._loop
        result: RunResult = await child._execute()
        self._st.usage.add(result.usage)  # the parent's totals include what its subagents spent
        if self._listening("usage.updated"):
            self.emit("usage.updated", {"usage": self._st.usage.to_dict(), "step_usage": result.usage.to_dict()})
        return result


#: how a subagent's events reach its parent's listeners: lifecycle events are
#: renamed (a subagent's run.completed is not the run's), bookkeeping of its
#: own loop stays inside, the rest is forwarded; all carry parent_tool_call_id.
_SUBAGENT_RENAMED = {
    "run.started": "subagent.started", "run.completed": "subagent.completed",
    "run.failed": "subagent.failed", "run.interrupted": "subagent.interrupted",
}
_SUBAGENT_DROPPED = frozenset({
    "step.started", "step.ended", "phase.changed", "usage.updated", "compaction.started", "compaction.completed",
})


def subagent_emitter(
    bus: EventBus, run_id: str, session_id: str | None, parent_tool_call_id: str | None
) -> tuple[Callable[[str, dict[str, Any]], None], Callable[[str], bool]]:
    emit = bus.emitter(run_id, session_id)

    def forward(type: str, data: dict[str, Any]) -> None:
        if type in _SUBAGENT_DROPPED:
            return
        emit(_SUBAGENT_RENAMED.get(type, type), {**data, "parent_tool_call_id": parent_tool_call_id})

    def listening(type: str) -> bool:
        return type not in _SUBAGENT_DROPPED and bus.listening(_SUBAGENT_RENAMED.get(type, type))

    return forward, listening


def _discard(message: Message) -> None:
    pass
