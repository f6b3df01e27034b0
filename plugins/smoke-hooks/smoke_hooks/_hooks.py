"""Each Smoke hook point as the Claude Code event it fires, and what the
answers of the command hooks do to the run."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

from ._config import LoadedHooks, load_hooks
from ._contract import Answer
from ._dialect import from_claude, match_names, to_claude, tool_response
from ._engine import Engine, permission_mode, warn

_engines: weakref.WeakKeyDictionary[Any, Engine] = weakref.WeakKeyDictionary()
#: a slash command's ``allowed-tools``, waiting for the agent's next run
pending_narrowing: weakref.WeakKeyDictionary[Any, Narrowing] = weakref.WeakKeyDictionary()
_STATE = "smoke_hooks"
_FINAL_TOOLS = frozenset({"final_result", "finish_task"})


@dataclass
class Narrowing:
    """What a slash command's ``allowed-tools`` leaves: ``(tool names, pattern or None)`` entries."""

    command: str
    allowed: list[tuple[frozenset[str], str | None]]
    text: str

    def permits(self, tool: Any, name: str, tool_input: dict[str, Any]) -> bool:
        import fnmatch

        names = set(match_names(tool, name))
        for allowed_names, pattern in self.allowed:
            if not names & allowed_names:
                continue
            if pattern is None:
                return True
            value = tool.permission_value(tool_input) if tool is not None and tool.permission_key else None
            if value is not None and fnmatch.fnmatchcase(value, pattern):
                return True
        return False


@dataclass
class RunHooks:
    """What this plugin keeps for one run (``run.state``)."""

    contexts: dict[str, list[str]] = field(default_factory=dict)
    stop: str | None = None
    narrowing: Narrowing | None = None
    agent_types: dict[str, str] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    unsubscribe: Any = None


def loaded_for(options: Any) -> LoadedHooks:
    extra = getattr(options, "extra", {}) or {}
    return load_hooks(options.workspace.root, trusted=bool(options.workspace_trusted), values=extra,
                      origins=extra.get("settings_origin") or {}, code_hooks=extra.get("hooks"))


def engine_for(agent: Any) -> Engine:
    engine = _engines.get(agent)
    if engine is None:
        options = agent.options
        engine = Engine(options.workspace.root, loaded_for(options), permission_mode=permission_mode(options))
        _engines[agent] = engine
    return engine


def _state(run: Any) -> RunHooks:
    state: RunHooks | None = run.state.get(_STATE)
    if state is None:
        state = run.state[_STATE] = RunHooks()
    return state


def _top(run: Any) -> Any:
    while getattr(run, "parent", None) is not None:
        run = run.parent
    return run


def _joined(texts: list[str]) -> str | None:
    texts = [t for t in texts if t]
    return "\n\n".join(texts) if texts else None


def _reason(answer: Answer, default: str) -> str:
    return answer.reason or answer.permission_reason or default


def _fails_closed(answer: Answer) -> bool:
    return answer.failure is not None and answer.hook.on_error == "block"


# ---------------------------------------------------------------- the run


def start_run(run: Any) -> None:
    engine = engine_for(run.agent)
    state = _state(run)
    if run.parent is not None:
        return
    if not engine.warned:
        engine.warned = True
        for problem in engine.loaded.problems:
            warn(run, "hook_failed", problem)
    state.narrowing = pending_narrowing.pop(run.agent, None)
    if engine.has("Notification"):
        loop = asyncio.get_running_loop()

        def on_permission(event: Any) -> None:
            data = event.data
            task = loop.create_task(_notify(run, engine, str(data.get("tool_name") or "a tool")))
            state.tasks.add(task)
            task.add_done_callback(state.tasks.discard)

        state.unsubscribe = run.agent.on("permission.required", on_permission)


async def _notify(run: Any, engine: Engine, tool_name: str) -> None:
    hooks = engine.matching("Notification", ("permission_prompt",))
    if hooks:
        await engine.fire("Notification", hooks, run=run, session_id=run.session_id, fields={
            "message": f"Smoke needs your permission to use {tool_name}", "title": "Permission needed",
            "notification_type": "permission_prompt"})


async def end_run(run: Any) -> None:
    state = run.state.get(_STATE)
    if state is None:
        return
    if state.unsubscribe is not None:
        state.unsubscribe()
        state.unsubscribe = None
    if state.tasks:
        await asyncio.gather(*list(state.tasks), return_exceptions=True)


async def on_session_start(run: Any, source: str) -> dict[str, Any] | None:
    engine = engine_for(run.agent)
    hooks = engine.matching("SessionStart", (source,))
    if not hooks:
        return None
    answers = await engine.fire("SessionStart", hooks, run=run, session_id=run.session_id,
                                fields={"source": source, "model": run.options.model or ""})
    context = _joined([t for a in answers for t in a.context])
    return {"context": context} if context else None


async def on_session_end(agent: Any, reason: str) -> None:
    engine = engine_for(agent)
    hooks = engine.matching("SessionEnd", (reason,))
    if hooks:
        await engine.fire("SessionEnd", hooks, run=None, session_id=agent.session_id, fields={"reason": reason})


async def on_prompt(run: Any, prompt: str) -> dict[str, Any] | None:
    engine = engine_for(run.agent)
    if not engine.has("UserPromptSubmit"):
        return None
    hooks = engine.matching("UserPromptSubmit", ("",))
    answers = await engine.fire("UserPromptSubmit", hooks, run=run, session_id=run.session_id,
                                fields={"prompt": prompt})
    for answer in answers:
        if answer.stop is not None:
            return {"block": True, "reason": answer.stop}
        if answer.block:
            return {"block": True, "reason": _reason(answer, f"refused by {answer.hook.label}")}
        if _fails_closed(answer):
            return {"block": True, "reason": f"the UserPromptSubmit hook {answer.hook.label} failed "
                                             f"({answer.failure}) and its on_error is block"}
    context = _joined([t for a in answers for t in a.context])
    return {"context": context} if context else None


# ---------------------------------------------------------------- tool calls


async def on_pre_tool_use(run: Any, name: str, tool_input: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    state = _state(run)
    tool = run.tools.get(name)
    if name == "task" and isinstance(tool_input.get("agent"), str):
        state.agent_types[call_id] = tool_input["agent"]
    narrowing = _state(_top(run)).narrowing
    if narrowing is not None and name not in _FINAL_TOOLS and not narrowing.permits(tool, name, tool_input):
        return {"block": True, "reason": f"/{narrowing.command} allows only {narrowing.text} (its allowed-tools)"}
    engine = engine_for(run.agent)
    if not engine.has("PreToolUse"):
        return None
    hooks = engine.matching("PreToolUse", match_names(tool, name))
    if not hooks:
        return None
    root = engine.workspace
    claude_name, claude_input = to_claude(tool, name, tool_input, root)

    def check(answer: Answer) -> None:
        if answer.updated_input is None:
            return
        new = (from_claude(tool, tool_input, answer.updated_input, root) if answer.hook.dialect == "claude"
               else dict(answer.updated_input))
        problem = tool.validate_input(new) if tool is not None else None
        if problem:
            answer.failure = f"returned an updatedInput that does not fit {name}'s schema ({problem})"
            answer.updated_input = answer.permission = None
            answer.block = False
        else:
            answer.updated_input = new

    answers = await engine.fire(
        "PreToolUse", hooks, run=run, session_id=run.session_id, tool_call_id=call_id, check=check,
        fields={"tool_name": name, "tool_input": tool_input, "tool_use_id": call_id},
        claude_fields={"tool_name": claude_name, "tool_input": claude_input},
    )
    out: dict[str, Any] = {}
    rank = {"allow": 1, "ask": 2}
    for answer in answers:
        if answer.stop is not None:
            _top_state(run).stop = answer.stop
            return {"block": True, "reason": answer.stop}
        if answer.block:
            return {"block": True, "reason": _reason(answer, f"refused by {answer.hook.label}")}
        if _fails_closed(answer):
            return {"block": True, "reason": f"the PreToolUse hook {answer.hook.label} failed ({answer.failure}) "
                                             f"and its on_error is block"}
        if answer.updated_input is not None:
            out["input"] = answer.updated_input
        if answer.permission in rank and rank[answer.permission] > rank.get(out.get("permission", ""), 0):
            out["permission"] = answer.permission
            out["reason"] = f"{answer.hook.label}: {answer.permission_reason or answer.permission}"
        if answer.context:
            state.contexts.setdefault(call_id, []).extend(answer.context)
    return out or None


def _top_state(run: Any) -> RunHooks:
    return _state(_top(run))


async def on_permission_request(run: Any, name: str, tool_input: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    engine = engine_for(run.agent)
    if not engine.has("PermissionRequest"):
        return None
    tool = run.tools.get(name)
    hooks = engine.matching("PermissionRequest", match_names(tool, name))
    if not hooks:
        return None
    claude_name, claude_input = to_claude(tool, name, tool_input, engine.workspace)
    answers = await engine.fire(
        "PermissionRequest", hooks, run=run, session_id=run.session_id, tool_call_id=call_id,
        fields={"tool_name": name, "tool_input": tool_input},
        claude_fields={"tool_name": claude_name, "tool_input": claude_input},
    )
    allowed = False
    for answer in answers:
        if answer.permission == "deny" or _fails_closed(answer):
            reason = answer.permission_reason or (f"its hook failed ({answer.failure})" if answer.failure else None)
            return {"decision": "deny", "reason": f"{answer.hook.label}: {reason or 'denied'}"}
        allowed = allowed or answer.permission == "allow"
    return {"decision": "allow"} if allowed else None


#: codes of a call that never ran: no PostToolUse / PostToolUseFailure (as in Claude Code)
_NOT_RUN = frozenset({"permission_denied", "tool_invalid_input", "tool_not_found", "tool_blocked", "hook_failed"})


async def on_post_tool_use(run: Any, name: str, tool_input: dict[str, Any], call_id: str, result: Any,
                           duration_ms: float, blocked: bool, error: Any) -> dict[str, Any] | None:
    state = _state(run)
    texts = state.contexts.pop(call_id, [])
    engine = engine_for(run.agent)
    code = getattr(error, "code", None)
    failed = result.is_error or error is not None
    event = "PostToolUseFailure" if failed else "PostToolUse"
    if not blocked and code not in _NOT_RUN and engine.has(event):
        tool = run.tools.get(name)
        hooks = engine.matching(event, match_names(tool, name))
        if hooks:
            claude_name, claude_input = to_claude(tool, name, tool_input, engine.workspace)
            fields: dict[str, Any] = {"tool_name": name, "tool_input": tool_input, "tool_use_id": call_id,
                                      "duration_ms": round(duration_ms, 3)}
            claude_fields: dict[str, Any] = {"tool_name": claude_name, "tool_input": claude_input}
            if failed:
                message = getattr(error, "message", None) or result.text_content()
                fields.update(error=message[:10_000], is_interrupt=code == "tool_cancelled")
            else:
                fields["tool_response"] = tool_response(False, name, tool_input, result)
                claude_fields["tool_response"] = tool_response(True, claude_name, claude_input, result)
            answers = await engine.fire(event, hooks, run=run, session_id=run.session_id, tool_call_id=call_id,
                                        fields=fields, claude_fields=claude_fields)
            for answer in answers:
                texts.extend(answer.context)
                if answer.stop is not None:
                    _top_state(run).stop = answer.stop
    context = _joined(texts)
    return {"context": context} if context else None


def on_model_call(run: Any, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    top = _top(run).state.get(_STATE)
    if top is None:
        return None
    if top.stop is not None:
        return {"block": True, "reason": f"a hook stopped the run: {top.stop}"}
    narrowing = top.narrowing
    if narrowing is None:
        return None
    kept = [t for t in tools if t.get("name") in _FINAL_TOOLS or _named(narrowing, run, str(t.get("name")))]
    return {"tools": kept} if len(kept) != len(tools) else None


def _named(narrowing: Narrowing, run: Any, name: str) -> bool:
    names = set(match_names(run.tools.get(name), name))
    return any(names & allowed for allowed, _ in narrowing.allowed)


# ---------------------------------------------------------------- the end of a run, compaction


async def on_stop(run: Any, text: str | None, continued: int) -> dict[str, Any] | None:
    engine = engine_for(run.agent)
    sub = run.parent is not None
    event = "SubagentStop" if sub else "Stop"
    if not engine.has(event):
        return None
    fields: dict[str, Any] = {"stop_hook_active": continued > 0, "last_assistant_message": text or ""}
    names: tuple[str, ...] = ("",)
    if sub:
        parent_call = getattr(run, "parent_tool_call_id", None) or ""
        agent_type = _state(run.parent).agent_types.get(parent_call, "general-purpose")
        names = (agent_type,)
        fields.update(agent_id=run.run_id, agent_type=agent_type,
                      agent_transcript_path=engine.transcript(run.run_id, run.messages))
    hooks = engine.matching(event, names)
    if not hooks:
        return None
    answers = await engine.fire(event, hooks, run=run, session_id=_top(run).session_id, fields=fields)
    if any(a.stop is not None for a in answers):
        return None
    reasons = [_reason(a, f"{a.hook.label} asks to go on") for a in answers if a.block]
    return {"continue_with": "\n\n".join(reasons)} if reasons else None


async def on_pre_compact(run: Any, agent: Any, trigger: str, instructions: str) -> dict[str, Any] | None:
    owner = agent if agent is not None else run.agent
    engine = engine_for(owner)
    hooks = engine.matching("PreCompact", (trigger,))
    if not hooks:
        return None
    answers = await engine.fire("PreCompact", hooks, run=run,
                                session_id=run.session_id if run is not None else owner.session_id,
                                fields={"trigger": trigger, "custom_instructions": instructions})
    for answer in answers:
        if answer.block or _fails_closed(answer):
            return {"block": True, "reason": _reason(answer, f"{answer.hook.label} keeps the history whole")}
    return None
