"""What a hook's exit status and output mean, per event (Claude Code's
current rules; docs/hooks-commands.md has the table).

- exit 0: stdout starting with ``{`` is JSON (invalid JSON is a failure);
  other text is context for UserPromptSubmit and SessionStart only.
- exit 2: a block where the event can block; the reason is the JSON's
  reason when its JSON blocks, else stderr.
- any other status: valid JSON on stdout still decides; without it the
  hook failed (a non-blocking error, unless its ``on_error`` is ``block``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._config import CommandHook
from ._process import Finished

#: characters of a hook's text that reach the model or the person
TEXT_CAP = 10_000
#: events where exit 2 (or a JSON block) blocks, and what is blocked
BLOCKING = frozenset({"PreToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"})
#: events where exit 2's stderr goes to the model without blocking
STDERR_TO_MODEL = frozenset({"PostToolUse", "PostToolUseFailure"})
PLAIN_IS_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})
_PERMISSION = {"allow", "deny", "ask", "defer"}


def cap(text: str) -> str:
    text = text.strip()
    if len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    return f"{text[:half]}\n[... {len(text) - TEXT_CAP} characters of the hook's output left out ...]\n{text[-half:]}"


@dataclass(slots=True)
class Answer:
    """One hook's answer, as Smoke applies it."""

    hook: CommandHook
    finished: Finished
    block: bool = False
    reason: str | None = None
    #: PreToolUse: allow / ask / deny; PermissionRequest: allow / deny
    permission: str | None = None
    permission_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    #: ``continue: false``: the run stops (``stopReason``)
    stop: str | None = None
    system_message: str | None = None
    #: why the hook gave no usable answer (it failed), for the person
    failure: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def decision(self) -> str | None:
        """One word for events and ``smoke hooks test``."""
        if self.failure:
            return "error"
        if self.stop is not None:
            return "stop"
        if self.block:
            return "block"
        if self.permission:
            return self.permission
        if self.updated_input is not None:
            return "rewrite"
        if self.context:
            return "context"
        return None


def _parse_json(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"printed invalid JSON on stdout ({exc})"
    if not isinstance(value, dict):
        return None, "printed JSON that is not an object"
    return value, None


def _check(event: str, data: dict[str, Any]) -> str | None:
    """A problem with the JSON's fields for ``event``, or None."""
    for key, kinds in (("continue", bool), ("suppressOutput", bool), ("stopReason", str), ("systemMessage", str),
                       ("reason", str), ("decision", str)):
        if key in data and not isinstance(data[key], kinds):
            return f"{key} must be {kinds.__name__}, got {type(data[key]).__name__}"
    specific = data.get("hookSpecificOutput")
    if specific is None:
        return None
    if not isinstance(specific, dict):
        return "hookSpecificOutput must be an object"
    if specific.get("hookEventName") != event:
        return f"hookSpecificOutput.hookEventName is {specific.get('hookEventName')!r}, not {event!r}"
    decision = specific.get("permissionDecision")
    if decision is not None and decision not in _PERMISSION:
        return f"permissionDecision must be allow, deny, ask or defer, got {decision!r}"
    if "updatedInput" in specific and not isinstance(specific["updatedInput"], dict):
        return "updatedInput must be an object"
    context = specific.get("additionalContext")
    if context is not None and not isinstance(context, str):
        return "additionalContext must be text"
    return None


def interpret(hook: CommandHook, event: str, finished: Finished) -> Answer:
    """``finished`` as an answer to ``event``."""
    answer = Answer(hook, finished)
    if finished.failure:
        answer.failure = finished.failure
        return answer
    code = finished.exit_code
    stdout = finished.stdout
    data: dict[str, Any] | None = None
    problem: str | None = None
    if stdout.lstrip().startswith("{"):
        data, problem = _parse_json(stdout.strip())
        if data is not None:
            problem = _check(event, data)
            if problem:
                data = None
    if code == 2:
        stderr = cap(finished.stderr) or None
        if event in BLOCKING:
            answer.block = True
            answer.reason = stderr
            if event == "PreToolUse":
                answer.permission, answer.permission_reason = "deny", stderr
        elif event in STDERR_TO_MODEL and stderr:
            answer.context.append(stderr)
        elif event == "PermissionRequest":
            answer.notes.append("exit 2 does not deny a PermissionRequest (answer with decision.behavior: deny)")
        elif stderr:
            answer.system_message = stderr
        if data is not None:
            _apply(answer, event, data)
        return answer
    if problem:
        answer.failure = problem if code == 0 else f"exited with status {code} and {problem}"
        return answer
    if data is not None:
        _apply(answer, event, data)
        return answer
    if code != 0:
        first = finished.stderr.strip().splitlines()[0] if finished.stderr.strip() else "no stderr output"
        answer.failure = f"exited with status {code}: {first}"
        return answer
    if stdout.strip() and event in PLAIN_IS_CONTEXT:
        answer.context.append(cap(stdout))
    return answer


def _apply(answer: Answer, event: str, data: dict[str, Any]) -> None:
    """The JSON fields' effect (on top of what the exit status said)."""
    if data.get("continue") is False:
        answer.stop = cap(str(data.get("stopReason") or "")) or "a hook stopped the run"
    if data.get("systemMessage"):
        answer.system_message = cap(data["systemMessage"])
    decision = data.get("decision")
    reason = cap(data["reason"]) if isinstance(data.get("reason"), str) else None
    specific = data.get("hookSpecificOutput") or {}
    if event == "PreToolUse":
        permission = specific.get("permissionDecision")
        if permission is None and decision in ("approve", "block"):  # the deprecated top-level form
            permission = "allow" if decision == "approve" else "deny"
        if permission == "defer":
            answer.notes.append("permissionDecision defer is for non-interactive Claude Code; ignored")
            permission = None
        if permission is not None:
            answer.permission = permission
            answer.permission_reason = (cap(specific["permissionDecisionReason"])
                                        if isinstance(specific.get("permissionDecisionReason"), str) else reason)
            if permission == "deny":
                answer.block, answer.reason = True, answer.permission_reason
        if isinstance(specific.get("updatedInput"), dict):
            answer.updated_input = specific["updatedInput"]
    elif event == "PermissionRequest":
        chosen = specific.get("decision")
        if isinstance(chosen, dict) and chosen.get("behavior") in ("allow", "deny"):
            answer.permission = chosen["behavior"]
            if isinstance(chosen.get("message"), str):
                answer.permission_reason = cap(chosen["message"])
            for unsupported in ("updatedInput", "updatedPermissions"):
                if chosen.get(unsupported):
                    answer.notes.append(f"decision.{unsupported} is not supported in a PermissionRequest; ignored")
    elif decision == "block" and event in BLOCKING | STDERR_TO_MODEL:
        if event in STDERR_TO_MODEL:
            answer.context.append(reason or "a hook flagged this result")
        else:
            answer.block, answer.reason = True, reason or answer.reason
    if isinstance(specific.get("additionalContext"), str) and specific["additionalContext"].strip():
        answer.context.append(cap(specific["additionalContext"]))
    if specific.get("updatedToolOutput") is not None or specific.get("updatedMCPToolOutput") is not None:
        answer.notes.append("updatedToolOutput is not supported; the tool's result is kept")
