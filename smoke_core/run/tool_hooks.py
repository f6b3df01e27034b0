"""What the tool pipeline does with the answers of its gathering hooks:
``after_tool_call``'s context joins the result the model gets, and
``before_permission_prompt`` may answer a person's prompt (a deny always; an
allow only where the gate says a hook may, :meth:`PermissionGate.hook_allows_pending`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..hooks.runner import HookRunner
from ..policy.gate import PermissionGate
from ..policy.rules import PermissionRequest
from ..tools.definitions import ToolResult

OnError = Callable[[str, str, BaseException], None]


async def after_tool_call_hooks(hooks: HookRunner, kwargs: dict[str, Any], on_error: OnError) -> ToolResult:
    """Call ``after_tool_call``; the result with every hook's ``context`` added as text blocks."""
    result: ToolResult = kwargs["result"]
    answers = await hooks.gather("after_tool_call", kwargs, on_error)
    blocks = [{"type": "text", "text": text} for _, parsed in answers if (text := getattr(parsed, "context", None))]
    if not blocks:
        return result
    return result.model_copy(update={"content": [*result.content, *blocks]})


async def permission_prompt_hooks(
    hooks: HookRunner, gate: PermissionGate, request: PermissionRequest, run: Any, on_error: OnError
) -> bool | None:
    """Call ``before_permission_prompt`` for a request the gate asks about:
    False (a hook denied: ``request.reason`` says who and why), True (a hook
    allowed, and the gate lets a hook answer this ask), or None (ask the person)."""
    answers = await hooks.gather(
        "before_permission_prompt",
        {"tool_name": request.tool_name, "input": request.input, "tool_call_id": request.tool_call_id,
         "reason": request.reason, "run": run},
        on_error,
    )
    allowed = False
    for plugin, parsed in answers:
        decision = getattr(parsed, "decision", None)
        if decision == "deny":
            gate.take_pending(request.tool_call_id)
            request.reason = f"denied by {plugin}" + (f": {parsed.reason}" if parsed.reason else "")
            return False
        allowed = allowed or decision == "allow"
    if allowed and gate.hook_allows_pending(request):
        return True
    return None
