"""smoke-otel: OpenTelemetry traces and metrics for Smoke runs, on the GenAI
semantic conventions (docs/observability.md).

Installed, it instruments every agent: spans go to the application's global
``TracerProvider`` if it set one, else to what the standard ``OTEL_*``
variables ask for (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
``OTEL_TRACES_EXPORTER``...); with neither, nothing is exported.
``smoke run --trace-console`` (or ``SMOKE_TRACE_CONSOLE=1``) prints each
run's span tree on stderr.

Importing this module imports no ``opentelemetry`` package: that happens on
the first run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core.plugin import hookimpl

from ._plugin import OtelPlugin, owned_providers

if TYPE_CHECKING:
    from collections.abc import Callable

    import click

    from smoke_core.plugin import Agent, AgentErrorInfo, RunHandle, ToolResult

__all__ = [
    "OtelPlugin",
    "after_model_call",
    "after_run",
    "after_tool_call",
    "before_model_call",
    "before_run",
    "before_tool_call",
    "close_agent",
    "owned_providers",
    "register_commands",
    "register_settings",
]

#: the instance the installed plugin uses (global providers)
_default = OtelPlugin()


def _steps_aside(run: RunHandle) -> bool:
    """True when the agent was given its own OtelPlugin (one set of spans, not two)."""
    return any(isinstance(p, OtelPlugin) for p in run.agent.plugin_manager.get_plugins())


# ---------------------------------------------------------------- registration


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from typing import Annotated

    from pydantic import StringConstraints

    from smoke_core.secrets import register_secret

    from ._setup import header_secrets

    # trusted_only: recording conversation content is a privacy decision a repository may not make
    register("otel_capture_content", bool | None, default=None, trusted_only=True,
             description="Record message and tool-argument content on spans (after secret redaction); "
                         "unset: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT decides.")
    register("otel_agent_name", Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9 ._/-]{1,64}$")],
             default="smoke", trusted_only=False,
             description="gen_ai.agent.name of top-level runs (span name invoke_agent {name}).")
    # backend credentials in OTLP headers must never reach the model or a log
    for value in header_secrets():
        register_secret(value)


@hookimpl(trylast=True)  # after core's own commands, which it extends
def register_commands(cli: click.Group) -> None:
    from ._cli import add_trace_console_option

    add_trace_console_option(cli)


# ---------------------------------------------------------------- lifecycle


@hookimpl
def before_run(run: RunHandle) -> None:
    if not _steps_aside(run):
        _default.before_run(run)


@hookimpl
def after_run(run: RunHandle, status: str, error: AgentErrorInfo | None) -> None:
    _default.after_run(run, status, error)


@hookimpl(trylast=True)
def before_model_call(messages: list[dict[str, Any]], system: str | None, model: str, run: RunHandle,
                      tools: list[dict[str, Any]] | None) -> None:
    _default.before_model_call(messages, system, model, run, tools)


@hookimpl
def after_model_call(response: dict[str, Any] | None, usage: dict[str, Any], duration_ms: float,
                     error: AgentErrorInfo | None, run: RunHandle, finish_reason: str | None,
                     response_model: str | None, response_id: str | None) -> None:
    _default.after_model_call(response, usage, duration_ms, error, run, finish_reason, response_model, response_id)


@hookimpl(trylast=True)
def before_tool_call(tool_name: str, input: dict[str, Any], tool_call_id: str, run: RunHandle) -> None:
    _default.before_tool_call(tool_name, input, tool_call_id, run)


@hookimpl
def after_tool_call(tool_name: str, input: dict[str, Any], tool_call_id: str, result: ToolResult,
                    duration_ms: float, blocked: bool, error: AgentErrorInfo | None, run: RunHandle) -> None:
    _default.after_tool_call(tool_name, input, tool_call_id, result, duration_ms, blocked, error, run)


@hookimpl
async def close_agent(agent: Agent) -> None:
    await _default.close_agent()
