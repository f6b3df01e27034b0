"""Typed errors: every failure in Smoke is an :class:`AgentErrorInfo`.

The codes are a closed set (DESIGN §5). Each code has a default layer,
severity and retryability, so a plugin raising ``AgentError.from_code(...)``
only has to say what happened.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

ErrorLayer = Literal["provider", "tool", "run", "hook", "permission", "transport"]
Severity = Literal["info", "warning", "error", "fatal"]
ErrorCode = Literal[
    "provider_rate_limited",
    "provider_auth",
    "provider_timeout",
    "provider_unavailable",
    "provider_error",
    "provider_cancelled",
    "provider_context_overflow",
    "provider_fallback",
    "tool_failed",
    "tool_blocked",
    "tool_not_found",
    "tool_cancelled",
    "tool_invalid_input",
    "permission_denied",
    "run_repeated_error",
    "run_hard_stop",
    "run_empty_responses",
    "run_max_steps",
    "run_budget_exceeded",
    "run_cancelled",
    "run_internal_error",
    "output_invalid",
    "output_truncated",
    "session_busy",
    "batch_task_invalid",
    "batch_setup_failed",
    "batch_worker_lost",
    "hook_blocked",
    "hook_failed",
    "transport_disconnected",
]

ERROR_CODES: tuple[str, ...] = get_args(ErrorCode)

# code -> (layer, severity, retryable, what a person should do)
ERROR_CODE_DEFAULTS: dict[str, tuple[ErrorLayer, Severity, bool, str]] = {
    "provider_rate_limited": ("provider", "warning", True, "Wait and retry, or lower the request rate."),
    "provider_auth": ("provider", "fatal", False, "Check the API key for this provider."),
    "provider_timeout": ("provider", "warning", True, "The provider did not answer in time; it is retried."),
    "provider_unavailable": ("provider", "warning", True, "The provider is overloaded or down; it is retried."),
    "provider_error": ("provider", "error", False, "The provider sent something Smoke could not use; see details."),
    "provider_cancelled": ("provider", "info", False, "The model call was cancelled."),
    "provider_context_overflow": ("provider", "error", False, "The prompt is longer than the context the server serves; the run compacts the history and tries once more. Serve a larger context (llama-server -c) or set context_window."),
    "provider_fallback": ("provider", "warning", False, "The server cannot do what was asked in the chosen way; Smoke uses the way the message names. Choose it yourself (tool_calls) to silence this."),
    "tool_failed": ("tool", "error", False, "The tool raised; the model sees the message and can try another way."),
    "tool_blocked": ("tool", "warning", False, "A before_tool_call hook refused this call."),
    "tool_not_found": ("tool", "error", False, "Call one of the tools listed in the request."),
    "tool_cancelled": ("tool", "info", False, "The tool was cancelled because the run was aborted."),
    "tool_invalid_input": ("tool", "error", False, "Call the tool again with arguments that match its schema."),
    "permission_denied": ("permission", "warning", False, "The call was not approved; try something else or ask the user."),
    "run_repeated_error": ("run", "error", False, "The same error happened repeatedly; fix its cause and run again."),
    "run_hard_stop": ("run", "error", False, "Commands kept failing with no successful edit between them."),
    "run_empty_responses": ("run", "error", False, "The model kept returning empty replies; try another model."),
    "run_max_steps": ("run", "error", False, "Raise max_steps or split the task."),
    "run_budget_exceeded": ("run", "error", False, "Raise the budget (max_cost_usd, max_input_tokens, "
                                                   "max_output_tokens) or split the task."),
    "run_cancelled": ("run", "info", False, "The run was aborted."),
    "run_internal_error": ("run", "fatal", False, "A bug in Smoke or a plugin; please report it with the details."),
    "output_invalid": ("run", "error", False, "The model's result did not match output_type after the retries; see details for the errors."),
    "output_truncated": ("run", "warning", False, "The model's reply reached max_tokens and was cut off; it is asked to continue. Raise max_tokens if replies keep being cut."),
    "session_busy": ("run", "error", False, "Another run is using this session (one run per session at a time); wait for it to end, or continue in another session."),
    "batch_task_invalid": ("run", "error", False, "Fix this line of the tasks file; the other tasks are not affected."),
    "batch_setup_failed": ("run", "error", False, "The task's setup command failed; its output is in details. Fix the command or the workspace."),
    "batch_worker_lost": ("run", "error", False, "The worker running the task died more times than the engine retries; run the batch again to resume it from its session."),
    "hook_blocked": ("hook", "error", False, "A hook blocked or stopped something (the run, a prompt, a call); "
                                             "see the message."),
    "hook_failed": ("hook", "error", False, "A hook raised; see details for the plugin and message."),
    "transport_disconnected": ("transport", "warning", True, "The connection dropped; it is retried or reconnected."),
}


class AgentErrorInfo(BaseModel):
    """A classified failure, safe to show to people and to serialise."""

    model_config = ConfigDict(frozen=True)

    code: ErrorCode
    layer: ErrorLayer
    severity: Severity = "error"
    message: str
    retryable: bool = False
    hint: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_code(
        cls,
        code: ErrorCode,
        message: str,
        *,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
        retryable: bool | None = None,
        severity: Severity | None = None,
    ) -> AgentErrorInfo:
        """Build an info with the code's default layer, severity, retryability and hint."""
        try:
            layer, default_sev, default_retry, default_hint = ERROR_CODE_DEFAULTS[code]
        except KeyError:
            raise ValueError(
                f"unknown error code {code!r}; use one of: {', '.join(ERROR_CODES)}"
            ) from None
        return cls(
            code=code,
            layer=layer,
            severity=severity or default_sev,
            message=message,
            retryable=default_retry if retryable is None else retryable,
            hint=hint if hint is not None else default_hint,
            details=details or {},
        )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class AgentError(Exception):
    """An exception carrying an :class:`AgentErrorInfo` as ``.info``."""

    def __init__(self, info: AgentErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info

    @classmethod
    def from_code(cls, code: ErrorCode, message: str, **kwargs: Any) -> AgentError:
        return cls(AgentErrorInfo.from_code(code, message, **kwargs))

    @property
    def code(self) -> str:
        return self.info.code

    def __str__(self) -> str:
        text = f"[{self.info.code}] {self.info.message}"
        if self.info.hint:
            text += f" ({self.info.hint})"
        return text


class ToolError(Exception):
    """Raise from a tool's ``execute`` to report a clean error to the model.

    The message goes to the model as it is (no traceback); the call is
    reported as ``tool_failed`` unless ``code`` says otherwise.
    """

    def __init__(self, message: str, *, code: ErrorCode = "tool_failed", details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = details or {}


# ---------------------------------------------------------------- configuration


class ConfigError(ValueError):
    """Settings, flags or files a person wrote that Smoke cannot use (one message, exit status 2)."""


class NoProviderError(ConfigError):
    """No provider in the flags or config files, and no provider key in the environment."""

    def __init__(self, key_vars: list[str]) -> None:
        names = ", ".join(key_vars) or "none installed (pip install smoke-provider-openai smoke-provider-anthropic)"
        super().__init__(
            "no model provider is configured.\n"
            f"  Set an API key in the environment (one of: {names}),\n"
            "  or pass --provider/--model, or write provider/model in ~/.config/smoke/config.yaml\n"
            "  (or in .smoke/config.yaml of a folder you trusted with `smoke trust`)."
        )
        self.key_vars = key_vars
