"""The run's calls of the session and turn hooks (``session_start``,
``before_prompt``, ``before_run_end``, ``before_compaction``): what each
answer does to the run, in one place beside the loop that calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import AgentErrorInfo
from ..hooks.runner import HookRunner
from .state import RunFailed

OnError = Callable[[str, str, BaseException], None]


def _texts(answers: list[tuple[str, Any]], key: str) -> list[str]:
    return [text for _, parsed in answers if (text := getattr(parsed, key, None))]


async def session_context(hooks: HookRunner, run: Any, source: str, on_error: OnError) -> list[str]:
    """``session_start``'s context texts (empty when no plugin implements it)."""
    if not hooks.has("session_start"):
        return []
    return _texts(await hooks.gather("session_start", {"run": run, "source": source}, on_error), "context")


async def prompt_context(hooks: HookRunner, run: Any, prompt: str) -> list[str]:
    """``before_prompt``: the context texts; a block or a failing hook ends the
    run (:class:`RunFailed`) before the prompt is recorded."""
    if not hooks.has("before_prompt"):
        return []
    outcome = await hooks.chain("before_prompt", {"run": run, "prompt": prompt}, (), ("context",))
    if outcome is None:
        return []
    if outcome.status == "block":
        raise RunFailed(AgentErrorInfo.from_code(
            "hook_blocked", f"the prompt was blocked by {outcome.plugin}: {outcome.reason}",
            details={"plugin": outcome.plugin, "reason": outcome.reason},
        ))
    if outcome.status == "fail":
        raise RunFailed(AgentErrorInfo.from_code(
            "hook_failed", f"the prompt was not sent: {outcome.reason}", details={"plugin": outcome.plugin},
        ))
    return [value for _, value in (outcome.gathered or {}).get("context", [])]


async def continue_with(hooks: HookRunner, run: Any, text: str | None, continued: int, on_error: OnError) -> str | None:
    """``before_run_end``: the message to go on with, or None to end the run."""
    if not hooks.has("before_run_end"):
        return None
    answers = await hooks.gather("before_run_end", {"run": run, "text": text, "continued": continued}, on_error)
    messages = _texts(answers, "continue_with")
    return "\n\n".join(messages) if messages else None


async def compaction_allowed(hooks: HookRunner, run: Any, trigger: str, instructions: str,
                             warn: Callable[[AgentErrorInfo], None], *, agent: Any = None) -> bool:
    """``before_compaction``: False when a hook blocks this compaction (warned);
    a failing hook lets it go ahead (fail-open, warned). ``run`` is None for a
    chat's ``/compact`` (``agent`` is then the chat's agent)."""
    if not hooks.has("before_compaction"):
        return True
    kwargs = {"run": run, "agent": agent if agent is not None else run.agent, "trigger": trigger,
              "instructions": instructions}
    outcome = await hooks.chain("before_compaction", kwargs, ())
    if outcome is None or outcome.status == "pass":
        return True
    if outcome.status == "block":
        warn(AgentErrorInfo.from_code(
            "hook_blocked", f"compaction skipped: blocked by {outcome.plugin}: {outcome.reason}", severity="warning",
            details={"plugin": outcome.plugin},
        ))
        return False
    warn(AgentErrorInfo.from_code(
        "hook_failed", f"{outcome.reason} (ignored: compaction goes ahead)", severity="warning",
        details={"plugin": outcome.plugin},
    ))
    return True
