"""Plan mode: the permission mode ``plan`` and its ``exit_plan_mode`` tool.

In plan mode only read-only tools run (the gate refuses every other call,
saying why). A top-level run that starts in plan mode gets the
``exit_plan_mode(plan)`` tool and a note saying how to use it; the call
pauses with ``plan.required`` until the person answers through
``agent.resolve_plan``: *approve* (the run goes on in the mode they pick:
``ask-default`` or ``accept-edits``), *edit* (approve their version of the
plan) or *reject* (their words go back to the model, which stays in plan
mode). After :data:`MAX_REJECTIONS` rejections in one run the model is told
to stop proposing plans, and later calls do not ask again.

Who may switch modes: the person (``--plan``, ``/plan``, the web UI's
toggle, an editor's session mode) and the programmer
(``agent.set_permission_mode``); never the model, whose only way out of plan
mode is the person's approval. A mode that managed settings set is final.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..base.errors import ToolError
from ..base.events import Event
from ..policy.rules import PERMISSION_MODES
from ..tools.definitions import (
    ClaudeDialect,
    ToolAnnotations,
    ToolDefinition,
    ToolPresentation,
    ToolResult,
)

PLAN_TOOL = "exit_plan_mode"
#: the modes a person may pick when approving a plan
APPROVAL_MODES = ("ask-default", "accept-edits")
#: ``agent.resolve_plan`` decisions
PLAN_DECISIONS = ("approve", "edit", "reject")
#: rejections in one run after which the model is told to stop proposing plans
MAX_REJECTIONS = 3
#: what each mode lets run, in the words the model and the person read
MODE_WORDS = {
    "ask-default": "read-only tools run; every other call asks the person first",
    "accept-edits": "file edits inside the workspace run without asking; commands and other tools ask",
    "plan": "only read-only tools run until the person approves a plan",
    "deny-all": "read-only tools run; everything else is refused",
    "allow-all": "every call runs without asking (deny and ask rules still apply)",
}

PLAN_INSTRUCTIONS = (
    "Plan mode is on: only read-only tools run, and nothing in the workspace may change yet. Read what you need, "
    f"then call {PLAN_TOOL} with your plan (Markdown: the steps, the files each touches, how you will check the "
    "result). The person approves, edits or rejects it; once approved, carry it out. Do not try to change files "
    "or run commands before that: such calls are refused."
)

PLAN_DESCRIPTION = (
    "Plan mode only: present your plan (Markdown) to the person for approval and wait. Approved, the run goes on "
    "in the mode the person picks and you carry the plan out; rejected, you get their words and stay in plan mode."
)

_KEY = "plan_rejections"


class ModeFixed(ValueError):
    """Managed settings set the permission mode, and managed settings are final."""


def check_mode(mode: Any) -> str:
    """``mode`` when it is one of :data:`~smoke_core.policy.rules.PERMISSION_MODES`, else one clear ValueError."""
    if not isinstance(mode, str) or mode not in PERMISSION_MODES:
        raise ValueError(f"permission mode {mode!r} is not a mode; use one of {', '.join(PERMISSION_MODES)}")
    return mode


def switch_mode(agent: Any, mode: str, emit: Callable[[str, dict[str, Any]], None] | None = None) -> str:
    """Set ``agent``'s permission mode (what ``agent.set_permission_mode`` does); the mode before.
    ``permission.mode_changed`` says so (through ``emit`` during a run, else the agent's bus)."""
    mode = check_mode(mode)
    gate = agent._gate
    previous = gate.mode
    if previous == mode:
        return mode
    settings = getattr(agent, "settings", None)
    if settings is not None and settings.layer_of.get("permission") == "managed":
        raise ModeFixed(f"the permission mode is {previous!r}, set by managed settings "
                        f"({settings.origins.get('permission', 'managed')}), and managed settings are final")
    if mode == "plan" and isinstance(previous, str):
        agent._mode_before_plan = previous
    gate.mode = mode
    agent.options.permission = mode
    data = {"mode": mode, "previous": previous if isinstance(previous, str) else "callable"}
    if emit is not None:
        emit("permission.mode_changed", data)
    else:
        agent._bus.emit(Event("permission.mode_changed", data, run_id=None, session_id=agent.session_id))
    return previous if isinstance(previous, str) else "callable"


def encode_answer(decision: str, mode: str | None, text: str | None) -> str:
    """What ``agent.resolve_plan`` hands to the paused call (checked there)."""
    if decision not in PLAN_DECISIONS:
        raise ValueError(f"plan decision {decision!r} is not one of {', '.join(PLAN_DECISIONS)}")
    if decision == "reject":
        return json.dumps({"decision": "reject", "text": "" if text is None else str(text)})
    mode = mode or "ask-default"
    if mode not in APPROVAL_MODES:
        raise ValueError(f"an approved plan goes on in {' or '.join(APPROVAL_MODES)}, not {mode!r}")
    if decision == "edit" and not (isinstance(text, str) and text.strip()):
        raise ValueError("decision 'edit' needs text: the plan as the person edited it")
    return json.dumps({"decision": decision, "mode": mode, "text": text if decision == "edit" else None})


def plan_tool(run: Any) -> ToolDefinition:
    """The ``exit_plan_mode`` tool of one top-level run (``run``: its RunHandle)."""

    async def execute(input: dict[str, Any], ctx: Any) -> ToolResult:
        return await _exit_plan_mode(run, input, ctx.tool_call_id)

    return ToolDefinition(
        name=PLAN_TOOL,
        description=PLAN_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {"plan": {"type": "string", "minLength": 1,
                                    "description": "The plan, in Markdown, as the person should read it."}},
            "required": ["plan"],
            "additionalProperties": False,
        },
        # it changes nothing itself: the mode changes only on the person's answer
        annotations=ToolAnnotations(title="Present the plan", read_only_hint=True, kind="think",
                                    claude=ClaudeDialect(name="ExitPlanMode", input={"plan": "plan"})),
        presentation=ToolPresentation(label="Plan", icon="🗺", tone="info", group="agent"),
        execute=execute,
        group="agent",
    )


async def _exit_plan_mode(run: Any, input: dict[str, Any], call_id: str) -> ToolResult:
    plan = input.get("plan")
    if not isinstance(plan, str) or not plan.strip():
        raise ToolError("plan is empty; write the plan the person should approve")
    deps = run._deps
    if deps.gate.mode != "plan":
        return ToolResult.text(f"Plan mode is off now (the permission mode is {deps.gate.mode}); go on with the "
                               "task without asking for approval of a plan.")
    scratch = run._st.scratch
    rejections = int(scratch.get(_KEY) or 0)
    if rejections >= MAX_REJECTIONS:
        return ToolResult.error(_stop_planning(rejections))
    settings = deps.settings
    if settings is not None and settings.layer_of.get("permission") == "managed":
        return ToolResult.error(
            "Managed settings keep this agent in plan mode, so no plan can be approved here. End your turn with "
            "the plan as your final answer."
        )
    if not run._listening("plan.required"):
        return ToolResult.error(
            "Nobody can approve a plan in this run (no person is following it). Stay in plan mode and end your "
            "turn with the plan as your final answer."
        )
    run.emit("plan.required", {"tool_call_id": call_id, "plan": plan, "modes": list(APPROVAL_MODES),
                               "rejections": rejections, "max_rejections": MAX_REJECTIONS})
    answer = _decode(await deps.pauses.wait(call_id))
    decision, text = answer["decision"], answer.get("text")
    mode = str(answer.get("mode") or "ask-default")
    run.emit("plan.resolved", {"tool_call_id": call_id, "decision": decision,
                               "mode": mode if decision != "reject" else None,
                               "text": text if decision != "approve" else None})
    if decision == "reject":
        rejections += 1
        scratch[_KEY] = rejections
        words = (text or "").strip() or "(they gave no reason)"
        if rejections >= MAX_REJECTIONS:
            return ToolResult.error(f"The person rejected the plan: {words}\n{_stop_planning(rejections)}",
                                    data={"decision": "reject", "rejections": rejections})
        return ToolResult.error(
            f"The person rejected the plan: {words}\nYou are still in plan mode: revise the plan (read more first "
            f"if you need to) and call {PLAN_TOOL} again.",
            data={"decision": "reject", "rejections": rejections},
        )
    approved = text.strip() if decision == "edit" and text else plan
    try:
        deps.set_mode(mode)
    except ValueError as exc:  # managed settings changed their mind mid-run; say so rather than pretend
        return ToolResult.error(f"The plan was approved but the mode could not change: {exc}. End your turn.")
    edited = " after editing it" if decision == "edit" else ""
    return ToolResult.text(
        f"The person approved the plan{edited}. The permission mode is now {mode}: {MODE_WORDS[mode]}. "
        f"Carry out this plan now:\n\n{approved}",
        data={"decision": decision, "mode": mode, "plan": approved},
    )


def _stop_planning(rejections: int) -> str:
    return (f"The person has rejected {rejections} plans in this run: do not propose another. End your turn with "
            "a short text reply that asks them what they want instead.")


def _decode(raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("decision") not in PLAN_DECISIONS:
        # an answer that did not come through resolve_plan (a front end calling respond): a rejection, with its words
        return {"decision": "reject", "text": str(raw)}
    return data
