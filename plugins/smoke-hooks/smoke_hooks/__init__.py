"""smoke-hooks: command hooks in settings, in the shape Claude Code and Codex
use (JSON on stdin, an exit status and JSON out), and custom slash commands
from ``.claude/commands`` / ``.smoke/commands``.

A plugin on Smoke's pluggy hooks: ``before_tool_call`` runs PreToolUse,
``before_permission_prompt`` PermissionRequest, ``after_tool_call``
PostToolUse / PostToolUseFailure, ``before_prompt`` UserPromptSubmit,
``before_run_end`` Stop / SubagentStop, ``session_start`` /
``session_end`` SessionStart / SessionEnd, ``before_compaction`` PreCompact,
and permission prompts in the run's events Notification. Settings
(``register_settings``): ``hooks``, ``hooks_compat``,
``allow_managed_hooks_only``. docs/hooks-commands.md is the manual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    import click

    from smoke_core.plugin import AgentErrorInfo, RunHandle, ToolResult

__all__ = [
    "after_run",
    "after_tool_call",
    "before_compaction",
    "before_model_call",
    "before_permission_prompt",
    "before_prompt",
    "before_run",
    "before_run_end",
    "before_tool_call",
    "register_commands",
    "register_settings",
    "register_slash_commands",
    "session_end",
    "session_start",
]


@hookimpl
def register_settings(register: Any) -> None:
    """The settings keys this plugin reads."""
    from typing import Literal

    register("hooks", dict[str, Any] | None, default=None, trusted_only=True, code_only=True, description=(
        "Command hooks by event, in Claude Code's shape: {PreToolUse: [{matcher, hooks: [{type: command, "
        "command, timeout, on_error}]}]}. Entries of every layer are added together; a folder's own files "
        "count only when it is trusted."))
    register("hooks_compat", list[Literal["claude", "codex"]], default=[], trusted_only=True, description=(
        "Also run the hooks in Claude Code's settings.json files (claude) and Codex's hooks files (codex). "
        "Read only from your user settings, managed settings, flags and code."))
    register("allow_managed_hooks_only", bool, default=False, trusted_only=True, description=(
        "Only the managed settings' hooks run (honoured only in managed settings)."))


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import add_hooks_command

    add_hooks_command(cli)


@hookimpl
def register_slash_commands(register: Any, agent: Any) -> None:
    from ._commands import register_file_commands

    register_file_commands(register, agent)


# ---------------------------------------------------------------- the run


@hookimpl
def before_run(run: RunHandle) -> None:
    from ._hooks import start_run

    start_run(run)


@hookimpl
async def session_start(run: RunHandle, source: str) -> dict[str, Any] | None:
    from ._hooks import on_session_start

    return await on_session_start(run, source)


@hookimpl
async def before_prompt(run: RunHandle, prompt: str) -> dict[str, Any] | None:
    from ._hooks import on_prompt

    return await on_prompt(run, prompt)


@hookimpl
async def before_tool_call(tool_name: str, input: dict[str, Any], tool_call_id: str,
                           run: RunHandle) -> dict[str, Any] | None:
    from ._hooks import on_pre_tool_use

    return await on_pre_tool_use(run, tool_name, input, tool_call_id)


@hookimpl
async def before_permission_prompt(tool_name: str, input: dict[str, Any], tool_call_id: str,
                                   run: RunHandle) -> dict[str, Any] | None:
    from ._hooks import on_permission_request

    return await on_permission_request(run, tool_name, input, tool_call_id)


@hookimpl
async def after_tool_call(tool_name: str, input: dict[str, Any], tool_call_id: str, result: ToolResult,
                          duration_ms: float, blocked: bool, error: AgentErrorInfo | None,
                          run: RunHandle) -> dict[str, Any] | None:
    from ._hooks import on_post_tool_use

    return await on_post_tool_use(run, tool_name, input, tool_call_id, result, duration_ms, blocked, error)


@hookimpl
def before_model_call(run: RunHandle, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    from ._hooks import on_model_call

    return on_model_call(run, tools)


@hookimpl
async def before_run_end(run: RunHandle, text: str | None, continued: int) -> dict[str, Any] | None:
    from ._hooks import on_stop

    return await on_stop(run, text, continued)


@hookimpl
async def before_compaction(run: RunHandle | None, agent: Any, trigger: str, instructions: str) -> dict[str, Any] | None:
    from ._hooks import on_pre_compact

    return await on_pre_compact(run, agent, trigger, instructions)


@hookimpl
async def after_run(run: RunHandle) -> None:
    from ._hooks import end_run

    await end_run(run)


@hookimpl
async def session_end(agent: Any, reason: str) -> None:
    from ._hooks import on_session_end

    await on_session_end(agent, reason)
