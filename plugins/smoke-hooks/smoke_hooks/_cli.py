"""``smoke hooks``: the effective command hooks of a folder, the file each came
from, what is not read and why; ``smoke hooks test EVENT`` runs them once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ._config import CommandHook, LoadedHooks


class _NoModel:
    """A provider that is never called: ``smoke hooks`` needs the agent's settings and tools, not a model."""

    name = "none"
    model = "none"

    async def stream(self, request: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("smoke hooks does not call a model")
        yield


def _agent(workspace: str) -> Any:
    from smoke_core import create_agent

    return create_agent(workspace, provider=_NoModel(), trust_workspace=None)


def _describe(hook: CommandHook) -> str:
    matcher = f' matcher "{hook.matcher.text}"' if hook.matcher.text not in (None, "", "*") else ""
    closed = "fails closed" if hook.on_error == "block" else "fails open"
    shape = ", sees Claude Code's tool names" if hook.dialect == "claude" else ""
    return (f"  {hook.event}{matcher}: `{hook.shown}` (timeout {hook.timeout:g} s, {closed}{shape})\n"
            f"      from {hook.label} ({hook.layer})")


def render(loaded: LoadedHooks, workspace: Path, trusted: bool) -> str:
    lines = [f"command hooks for {workspace} ({'trusted' if trusted else 'not trusted'} folder):"]
    if loaded.hooks:
        lines.extend(_describe(h) for h in loaded.hooks)
    else:
        lines.append("  (none)")
    if loaded.managed_only:
        lines.append("managed settings allow only managed hooks (allow_managed_hooks_only)")
    if loaded.problems:
        lines.append("problems:")
        lines.extend(f"  ⚠ {p}" for p in loaded.problems)
    if loaded.unread:
        lines.append("not read:")
        lines.extend(f"  {path}: {why}" for path, why in loaded.unread)
        kinds = sorted({k for k in ("claude", "codex") if any(f"hooks_compat: [{k}]" in why for _, why in loaded.unread)})
        if kinds:
            from smoke_core.settings import user_settings_path

            lines.append(f"to run them, add this line to {user_settings_path()}:\n  hooks_compat: [{', '.join(kinds)}]")
    return "\n".join(lines)


def add_hooks_command(cli: click.Group) -> None:
    @cli.group("hooks", invoke_without_command=True)
    @click.option("--workspace", "-w", default=".", type=click.Path(file_okay=False), show_default=True,
                  help="The folder whose hooks to list.")
    @click.pass_context
    def hooks(ctx: click.Context, workspace: str) -> None:
        """List the effective command hooks (Claude Code / Codex shape) and where each came from."""
        ctx.obj = {"workspace": workspace}
        if ctx.invoked_subcommand is not None:
            return
        from ._hooks import engine_for

        agent = _agent(workspace)
        engine = engine_for(agent)
        click.echo(render(engine.loaded, engine.workspace, bool(agent.options.workspace_trusted)))

    @hooks.command("test")
    @click.argument("event")
    @click.option("--tool", "tool_name", default=None, help="The tool (Smoke's name or Claude Code's, e.g. Bash).")
    @click.option("--input", "input_json", default="{}", show_default=True,
                  help="JSON: the tool's input (in the shape of the name given), or the event's fields.")
    @click.pass_context
    def test(ctx: click.Context, event: str, tool_name: str | None, input_json: str) -> None:
        """Run the hooks of EVENT once, as if it fired now, and show what each answered."""
        from ._config import EVENTS, TOOL_EVENTS

        if event not in EVENTS:
            import difflib

            close = difflib.get_close_matches(event, EVENTS, n=1)
            raise click.UsageError(f"unknown event {event!r}" + (f" (did you mean {close[0]}?)" if close else
                                                                 f"; events: {', '.join(EVENTS)}"))
        try:
            given = json.loads(input_json)
        except ValueError as exc:
            raise click.UsageError(f"--input is not valid JSON ({exc})") from None
        if not isinstance(given, dict):
            raise click.UsageError("--input must be a JSON object")
        if event in TOOL_EVENTS and not tool_name:
            raise click.UsageError(f"{event} needs --tool NAME")
        import asyncio

        agent = _agent(ctx.obj["workspace"])
        answers = asyncio.run(_fire(agent, event, tool_name, given))
        if not answers:
            click.echo(f"no {event} hook matches" + (f" {tool_name}" if tool_name else ""))
            return
        for answer in answers:
            f = answer.finished
            click.echo(f"{answer.hook.label} (`{answer.hook.shown}`):")
            status = f"exit {f.exit_code}" if f.exit_code is not None else "no exit status"
            click.echo(f"  {status} in {f.duration_ms:.0f} ms; decision: {answer.decision or 'none'}")
            for label, value in (("reason", answer.reason or answer.permission_reason), ("error", answer.failure),
                                 ("stop", answer.stop), ("message", answer.system_message)):
                if value:
                    click.echo(f"  {label}: {value}")
            if answer.updated_input is not None:
                click.echo(f"  updated input: {json.dumps(answer.updated_input, ensure_ascii=False)}")
            for text in answer.context:
                click.echo(f"  context: {text}")
            for note in answer.notes:
                click.echo(f"  note: {note}")
            for name, text in (("stdout", f.stdout), ("stderr", f.stderr)):
                if text.strip():
                    shown = text.strip() if len(text.strip()) <= 2000 else text.strip()[:2000] + " ..."
                    click.echo(f"  {name}: {shown}")


async def _fire(agent: Any, event: str, tool_name: str | None, given: dict[str, Any]) -> list[Any]:
    from ._config import TOOL_EVENTS
    from ._dialect import from_claude, match_names, to_claude
    from ._hooks import engine_for

    engine = engine_for(agent)
    fields = dict(given)
    claude_fields: dict[str, Any] | None = None
    names: tuple[str, ...] = ("",)
    if event in TOOL_EVENTS:
        assert tool_name is not None
        tools = agent.tools
        tool = tools.get(tool_name)
        smoke_name = tool_name
        smoke_input = given
        if tool is None:  # a Claude name: find the tool that declares it
            for name, candidate in tools.items():
                if tool_name in match_names(candidate, name):
                    tool, smoke_name = candidate, name
                    smoke_input = from_claude(candidate, {}, given, engine.workspace)
                    break
        names = match_names(tool, smoke_name)
        claude_name, claude_input = to_claude(tool, smoke_name, smoke_input, engine.workspace)
        fields = {"tool_name": smoke_name, "tool_input": smoke_input, "tool_use_id": "toolu_smoke_hooks_test"}
        claude_fields = {"tool_name": claude_name, "tool_input": claude_input}
    else:
        key = {"SessionStart": "source", "SessionEnd": "reason", "PreCompact": "trigger",
               "Notification": "notification_type"}.get(event)
        defaults: dict[str, dict[str, Any]] = {"UserPromptSubmit": {"prompt": ""}, "Stop": {"stop_hook_active": False},
                    "SubagentStop": {"stop_hook_active": False}, "SessionStart": {"source": "startup"},
                    "SessionEnd": {"reason": "other"}, "PreCompact": {"trigger": "manual", "custom_instructions": ""},
                    "Notification": {"message": "Smoke needs your permission", "notification_type": "permission_prompt"}}
        fields = {**defaults.get(event, {}), **given}
        if key:
            names = (str(fields.get(key, "")),)
        if event == "SubagentStop":
            names = (str(fields.get("agent_type", "general-purpose")),)
    hooks = engine.matching(event, names)
    if not hooks:
        return []
    return await engine.fire(event, hooks, run=None, session_id=agent.session_id, fields=fields,
                             claude_fields=claude_fields)
