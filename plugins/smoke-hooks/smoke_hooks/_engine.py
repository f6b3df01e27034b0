"""The hooks of one agent: which match an event, the JSON each gets on
stdin, running them together, and telling the run (``hook.started`` /
``hook.completed`` events; a ``run.warning`` naming the file, the hook and
what happened for each failure).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._config import CommandHook, LoadedHooks
from ._contract import Answer, interpret
from ._process import hook_env, run_hook

log = logging.getLogger("smoke")

#: Smoke's permission modes as Claude Code names them in ``permission_mode``
_MODES = {"ask-default": "default", "accept-edits": "acceptEdits", "plan": "plan", "allow-all": "bypassPermissions",
          "deny-all": "dontAsk"}


def permission_mode(options: Any) -> str:
    mode = getattr(options, "permission", "ask-default")
    if getattr(options, "auto_approve", False):
        return "bypassPermissions"
    return _MODES.get(mode, "default") if isinstance(mode, str) else "default"


class Engine:
    """Runs the command hooks of one agent."""

    def __init__(self, workspace: Path, loaded: LoadedHooks, *, permission_mode: str = "default") -> None:
        self.workspace = workspace
        self.loaded = loaded
        self.permission_mode = permission_mode
        self.env = hook_env(workspace)
        self._by_event: dict[str, list[CommandHook]] = {}
        for hook in loaded.hooks:
            self._by_event.setdefault(hook.event, []).append(hook)
        self.warned = False
        self._transcripts: dict[str, tuple[Path, int]] = {}

    def has(self, event: str) -> bool:
        return event in self._by_event

    def matching(self, event: str, names: tuple[str, ...]) -> list[CommandHook]:
        return [h for h in self._by_event.get(event, ()) if h.matcher.matches(names)]

    # ------------------------------------------------------------ stdin

    def transcript(self, key: str, messages: list[Any] | None) -> str:
        """A JSONL file of the conversation so far (Smoke's message form), kept up to date."""
        path, written = self._transcripts.get(key, (None, 0))
        if path is None:
            safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in key)[:100] or "session"
            path = self.workspace / ".smoke" / "hooks" / "transcripts" / f"{safe}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")
            written = 0
        messages = messages or []
        if len(messages) < written:  # compacted: write it again
            path.write_text("", encoding="utf-8")
            written = 0
        if len(messages) > written:
            with path.open("a", encoding="utf-8") as f:
                for message in messages[written:]:
                    f.write(json.dumps(message, ensure_ascii=False, default=str) + "\n")
        self._transcripts[key] = (path, len(messages))
        return str(path)

    def common(self, event: str, run: Any, session_id: str | None) -> dict[str, Any]:
        key = session_id or (run.run_id if run is not None else "session")
        messages = run.messages if run is not None else None
        return {
            "session_id": key,
            "transcript_path": self.transcript(key, messages),
            "cwd": str(self.workspace),
            "hook_event_name": event,
            "permission_mode": self.permission_mode,
        }

    # ------------------------------------------------------------ running

    async def fire(
        self,
        event: str,
        hooks: list[CommandHook],
        *,
        run: Any,
        session_id: str | None,
        fields: dict[str, Any],
        claude_fields: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        check: Callable[[Answer], None] | None = None,
    ) -> list[Answer]:
        """Run ``hooks`` (all matching ``event``) concurrently; their answers
        in configuration order. ``fields`` are the event's own stdin fields
        (Smoke's shape); ``claude_fields`` override them for hooks written for
        Claude Code. ``check`` may turn an answer into a failure (a bad
        ``updatedInput``) before it is reported."""
        base = self.common(event, run, session_id)
        stdin = {
            "smoke": (json.dumps({**base, **fields}, ensure_ascii=False, default=str) + "\n").encode(),
        }
        if claude_fields is not None:
            stdin["claude"] = (json.dumps({**base, **fields, **claude_fields}, ensure_ascii=False,
                                          default=str) + "\n").encode()
        emit = getattr(run, "emit", None)

        async def one(hook: CommandHook) -> Answer:
            if emit is not None:
                emit("hook.started", {"hook_event": event, "hook": hook.label, "command": hook.shown,
                                      "tool_call_id": tool_call_id})
            data = stdin.get(hook.dialect, stdin["smoke"])
            finished = await run_hook(hook, data, workspace=self.workspace, env=self.env)
            answer = interpret(hook, event, finished)
            if check is not None and answer.failure is None:
                check(answer)
            if emit is not None:
                emit("hook.completed", {
                    "hook_event": event, "hook": hook.label, "command": hook.shown, "tool_call_id": tool_call_id,
                    "exit_code": finished.exit_code, "duration_ms": round(finished.duration_ms, 3),
                    "decision": answer.decision, "reason": answer.reason or answer.permission_reason,
                    "error": answer.failure,
                })
            return answer

        if len(hooks) == 1:
            answers = [await one(hooks[0])]
        else:
            answers = list(await asyncio.gather(*(one(h) for h in hooks)))
        for answer in answers:
            self.report(answer, event, run)
        return answers

    def report(self, answer: Answer, event: str, run: Any) -> None:
        """Tell the person about a failure, a note or a ``systemMessage``."""
        hook = answer.hook
        messages: list[tuple[str, str]] = []
        if answer.failure:
            closed = hook.on_error == "block" and event in FAIL_CLOSED
            effect = FAIL_CLOSED.get(event, "") if closed else "ignored: it fails open (on_error: allow)"
            messages.append(("hook_failed", f"{event} hook {hook.label} (`{hook.shown}`) {answer.failure}; "
                                            f"{effect}"))
        for note in answer.notes:
            messages.append(("hook_failed", f"{event} hook {hook.label}: {note}"))
        if answer.system_message:
            messages.append(("hook_message", f"{event} hook {hook.label}: {answer.system_message}"))
        for code, message in messages:
            warn(run, code, message, hook)


#: what a failing hook does where its ``on_error`` is ``block``
FAIL_CLOSED = {
    "PreToolUse": "the call is blocked (on_error: block)",
    "UserPromptSubmit": "the prompt is not sent (on_error: block)",
    "PermissionRequest": "the call is denied (on_error: block)",
    "PreCompact": "the compaction is skipped (on_error: block)",
}


def warn(run: Any, code: str, message: str, hook: CommandHook | None = None) -> None:
    """A ``run.warning`` for the person (the log when there is no run)."""
    from smoke_core.plugin import AgentErrorInfo

    if run is None or not hasattr(run, "warn"):
        log.warning("smoke-hooks: %s", message)
        return
    info = AgentErrorInfo.from_code(
        "hook_failed" if code == "hook_failed" else "hook_blocked", message, severity="warning",
        details={"plugin": "smoke-hooks", **({"hook": hook.label} if hook is not None else {})},
    )
    run.warn(info)
