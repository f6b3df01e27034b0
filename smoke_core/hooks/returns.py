"""What the *before* hooks may return, as pydantic models (loaded on the
first non-empty return: ``smoke --help`` builds the hook runner without
importing pydantic)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class HookReturn(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    block: bool = False
    reason: str | None = None


class BeforeToolCallResult(HookReturn):
    """What ``before_tool_call`` may return: ``{"input": {...}}`` or ``{"block": True, "reason": ...}``."""

    input: dict[str, Any] | None = None


class BeforeModelCallResult(HookReturn):
    """What ``before_model_call`` may return: ``{"messages", "tools", "system"}`` rewrites or a block."""

    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    system: str | None = None


RESULT_MODELS: dict[str, type[HookReturn]] = {
    "before_tool_call": BeforeToolCallResult,
    "before_model_call": BeforeModelCallResult,
}
