"""What the *before* and gathering hooks may return, as pydantic models
(loaded on the first non-empty return: ``smoke --help`` builds the hook
runner without importing pydantic)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class HookReturn(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    block: bool = False
    reason: str | None = None


class BeforeToolCallResult(HookReturn):
    """What ``before_tool_call`` may return: ``{"input": {...}}``, ``{"permission": ...}``
    or ``{"block": True, "reason": ...}``."""

    input: dict[str, Any] | None = None
    permission: Literal["allow", "ask", "deny"] | None = None


class BeforeModelCallResult(HookReturn):
    """What ``before_model_call`` may return: ``{"messages", "tools", "system"}`` rewrites or a block."""

    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    system: str | None = None


class BeforePromptResult(HookReturn):
    """What ``before_prompt`` may return: ``{"context": text}`` or a block."""

    context: str | None = None


class ContextResult(HookReturn):
    """What ``session_start`` and ``after_tool_call`` may return: ``{"context": text}``."""

    context: str | None = None


class RunEndResult(HookReturn):
    """What ``before_run_end`` may return: ``{"continue_with": message}``."""

    continue_with: str | None = None


class PermissionPromptResult(HookReturn):
    """What ``before_permission_prompt`` may return: ``{"decision": "allow" | "deny", "reason"?}``."""

    decision: Literal["allow", "deny"] | None = None


RESULT_MODELS: dict[str, type[HookReturn]] = {
    "before_tool_call": BeforeToolCallResult,
    "before_model_call": BeforeModelCallResult,
    "before_prompt": BeforePromptResult,
    "before_compaction": HookReturn,
    "session_start": ContextResult,
    "after_tool_call": ContextResult,
    "before_run_end": RunEndResult,
    "before_permission_prompt": PermissionPromptResult,
}
