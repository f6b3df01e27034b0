"""Every exit-status and output-field case changes the run as documented
(docs/hooks-commands.md), event by event, with real hook scripts."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Hooks, answer_prompts, call, collect, config, last_result, make_agent, texts

# ------------------------------------------------------------ PreToolUse


def _pre(plan: dict[str, Any]) -> dict[str, Any]:
    return {"PreToolUse": plan}


def _specific(**fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}}


PRE_CASES = [
    # (plan, the tool ran, the person was asked, words the model sees)
    ({"exit": 0}, True, True, "ran: rm x"),
    ({"exit": 0, "stdout": "just text"}, True, True, "ran: rm x"),
    ({"exit": 2, "stderr": "no rm here"}, False, False, "no rm here"),
    ({"exit": 1, "stderr": "oops"}, True, True, "ran: rm x"),  # a non-blocking error: fail-open
    ({"stdout": _specific(permissionDecision="deny", permissionDecisionReason="not today")}, False, False,
     "not today"),
    ({"stdout": _specific(permissionDecision="allow")}, True, False, "ran: rm x"),
    ({"stdout": _specific(permissionDecision="ask", permissionDecisionReason="check this")}, True, True, "ran: rm x"),
    ({"stdout": {"decision": "block", "reason": "legacy block"}}, False, False, "legacy block"),
    ({"stdout": {"decision": "approve"}}, True, False, "ran: rm x"),
    ({"exit": 1, "stdout": _specific(permissionDecision="deny", permissionDecisionReason="json on exit 1")}, False,
     False, "json on exit 1"),
    ({"exit": 2, "stdout": _specific(permissionDecision="allow"), "stderr": "exit 2 wins"}, False, False,
     "exit 2 wins"),
    ({"stdout": _specific(permissionDecision="defer")}, True, True, "ran: rm x"),
]


@pytest.mark.parametrize("plan,ran,asked,seen", PRE_CASES)
async def test_pre_tool_use_exit_status_and_fields(workspace, hooks: Hooks, plan, ran, asked, seen):
    script = hooks.script(plans=_pre(plan))
    agent, provider = make_agent(workspace, [call("run_command", command="rm x"), "ok"],
                                 hooks=config("PreToolUse", command=script, matcher="Bash"))
    prompts = answer_prompts(agent, "allow")
    result = await agent.run("go")
    assert result.status == "completed"
    block = last_result(provider)
    assert (not block["is_error"]) is ran
    assert bool(prompts) is asked
    assert seen in texts(block)


async def test_pre_tool_use_ask_reason_is_shown_and_yes_does_not_answer_it(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": _specific(permissionDecision="ask",
                                                          permissionDecisionReason="a person should look")}))
    agent, _ = make_agent(workspace, [call("read_file", path="a"), "ok"], auto_approve=True,
                          hooks=config("PreToolUse", command=script))
    (workspace / "a").write_text("x")
    prompts = answer_prompts(agent, "deny")
    await agent.run("go")
    assert len(prompts) == 1 and "a person should look" in prompts[0]["reason"]


async def test_pre_tool_use_additional_context_reaches_the_model_beside_the_result(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": _specific(additionalContext="remember the style guide")}))
    agent, provider = make_agent(workspace, [call("read_file", path="a"), "ok"],
                                 hooks=config("PreToolUse", command=script))
    (workspace / "a").write_text("content")
    await agent.run("go")
    assert texts(last_result(provider)) == "content\nremember the style guide"


async def test_pre_tool_use_updated_input_from_smoke_settings_is_smoke_shaped(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": _specific(updatedInput={"command": "ls -la"})}))
    agent, provider = make_agent(workspace, [call("run_command", command="ls"), "ok"], auto_approve=True,
                                 hooks=config("PreToolUse", command=script, matcher="run_command"))
    await agent.run("go")
    assert texts(last_result(provider)) == "ran: ls -la"


async def test_a_rewritten_input_is_what_the_person_approves(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": _specific(updatedInput={"command": "ls -la"})}))
    agent, _ = make_agent(workspace, [call("run_command", command="ls"), "ok"],
                          hooks=config("PreToolUse", command=script))
    prompts = answer_prompts(agent, "allow")
    await agent.run("go")
    assert prompts[0]["input"] == {"command": "ls -la"}
    assert "rewritten by" in prompts[0]["reason"]


async def test_continue_false_stops_the_run_with_the_stop_reason(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": {"continue": False, "stopReason": "budget exhausted"}}))
    agent, provider = make_agent(workspace, [call("read_file", path="a"), "never"],
                                 hooks=config("PreToolUse", command=script))
    result = await agent.run("go")
    assert result.status == "failed" and result.error.code == "hook_blocked"
    assert "budget exhausted" in result.error.message
    assert len(provider.requests) == 1


async def test_system_message_is_shown_to_the_person(workspace, hooks: Hooks):
    script = hooks.script(plans=_pre({"stdout": {"systemMessage": "heads up: big change"}}))
    agent, _ = make_agent(workspace, [call("read_file", path="a"), "ok"],
                          hooks=config("PreToolUse", command=script))
    (workspace / "a").write_text("x")
    warnings = collect(agent, "run.warning")
    await agent.run("go")
    assert any("heads up: big change" in w.data["error"]["message"] for w in warnings)


# ------------------------------------------------------------ PostToolUse / PostToolUseFailure


@pytest.mark.parametrize("plan,seen", [
    ({"exit": 2, "stderr": "lint: line too long"}, "lint: line too long"),
    ({"stdout": {"decision": "block", "reason": "formatted the file"}}, "formatted the file"),
    ({"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "3 warnings"}}},
     "3 warnings"),
])
async def test_post_tool_use_feedback_reaches_the_model(workspace, hooks: Hooks, plan, seen):
    script = hooks.script(plans={"PostToolUse": plan})
    agent, provider = make_agent(workspace, [call("read_file", path="a"), "ok"],
                                 hooks=config("PostToolUse", command=script, matcher="Read"))
    (workspace / "a").write_text("content")
    await agent.run("go")
    block = last_result(provider)
    assert block["is_error"] is False and texts(block).splitlines() == ["content", seen]


async def test_post_tool_use_failure_fires_on_a_failing_tool_only(workspace, hooks: Hooks):
    script = hooks.script(plans={"PostToolUseFailure": {"exit": 2, "stderr": "try --verbose"}})
    agent, provider = make_agent(workspace, [call("explode", why="disk"), call("read_file", path="a"), "ok"],
                                 hooks=config("PostToolUse", "PostToolUseFailure", command=script))
    (workspace / "a").write_text("fine")
    await agent.run("go")
    assert hooks.events() == ["PostToolUseFailure", "PostToolUse"]
    assert "try --verbose" in texts(last_result(provider, 1))


async def test_no_post_event_for_a_call_that_never_ran(workspace, hooks: Hooks):
    block = hooks.script("block", {"PreToolUse": {"exit": 2, "stderr": "no"}})
    seen = hooks.script("seen")
    agent, _ = make_agent(workspace, [call("read_file", path="a"), "ok"], hooks={
        "PreToolUse": [{"hooks": [{"type": "command", "command": str(block)}]}],
        **config("PostToolUse", "PostToolUseFailure", command=seen)})
    await agent.run("go")
    assert hooks.events("seen") == []


# ------------------------------------------------------------ UserPromptSubmit


async def test_user_prompt_submit_plain_stdout_and_additional_context_are_context(workspace, hooks: Hooks):
    one = hooks.script("one", {"UserPromptSubmit": {"stdout": "today is a holiday"}})
    two = hooks.script("two", {"UserPromptSubmit": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit", "additionalContext": "branch: main"}}}})
    agent, provider = make_agent(workspace, ["ok"], hooks={"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": str(one)}, {"type": "command", "command": str(two)}]}]})
    await agent.run("plan my day")
    first = provider.requests[0].messages[0]["content"]
    assert [b["text"] for b in first] == ["plan my day", "today is a holiday\n\nbranch: main"]


@pytest.mark.parametrize("plan,reason", [
    ({"exit": 2, "stderr": "no secrets in prompts"}, "no secrets in prompts"),
    ({"stdout": {"decision": "block", "reason": "off topic"}}, "off topic"),
    ({"stdout": {"continue": False, "stopReason": "maintenance window"}}, "maintenance window"),
])
async def test_user_prompt_submit_block_erases_the_prompt(workspace, hooks: Hooks, plan, reason, tmp_path):
    from smoke_core.plugin import SQLiteStore

    script = hooks.script(plans={"UserPromptSubmit": plan})
    store = SQLiteStore(tmp_path / "s.db")
    agent, provider = make_agent(workspace, ["never"], store=store, session_id="ses_x",
                                 hooks=config("UserPromptSubmit", command=script))
    result = await agent.run("my password is hunter2")
    assert result.status == "failed" and result.error.code == "hook_blocked" and reason in result.error.message
    assert provider.requests == [] and store.load("ses_x") == []


# ------------------------------------------------------------ Stop / SubagentStop


async def test_stop_block_continues_the_run_and_stop_hook_active_ends_it(workspace, hooks: Hooks):
    gate = {"Stop": {"stdout": {"decision": "block", "reason": "run the tests first"}, "unless_active": True}}
    script = hooks.script(plans=gate)
    agent, provider = make_agent(workspace, ["done", "tests pass, done"], hooks=config("Stop", command=script))
    result = await agent.run("fix it")
    assert result.status == "completed" and result.text == "tests pass, done"
    assert [r["stdin"]["stop_hook_active"] for r in hooks.seen()] == [False, True]
    assert provider.requests[1].messages[-1]["content"][0]["text"] == "run the tests first"


async def test_a_stop_hook_that_always_blocks_is_capped(workspace, hooks: Hooks):
    script = hooks.script(plans={"Stop": {"exit": 2, "stderr": "again"}})
    agent, provider = make_agent(workspace, ["answer"] * 20, hooks=config("Stop", command=script))
    warnings = collect(agent, "run.warning")
    result = await agent.run("go")
    assert result.status == "completed" and len(provider.requests) == 9  # the answer and 8 continuations
    assert any("stop_continuations=8" in w.data["error"]["message"] for w in warnings)


async def test_stop_continue_false_wins_over_block(workspace, hooks: Hooks):
    script = hooks.script(plans={"Stop": {"stdout": {"continue": False, "decision": "block", "reason": "x"}}})
    agent, provider = make_agent(workspace, ["done", "never"], hooks=config("Stop", command=script))
    result = await agent.run("go")
    assert result.text == "done" and len(provider.requests) == 1


async def test_subagent_stop_sends_the_subagent_on_with_a_matcher_on_its_type(workspace, hooks: Hooks):
    script = hooks.script(plans={"SubagentStop": [{"exit": 2, "stderr": "look deeper"}, {"exit": 0}]})
    agent, provider = make_agent(
        workspace, [call("task", description="x", prompt="look", agent="Explore"), "shallow", "deep", "done"],
        hooks=config("SubagentStop", command=script, matcher="Explore"))
    result = await agent.run("go")
    assert result.text == "done"
    assert [r["stdin"]["stop_hook_active"] for r in hooks.seen()] == [False, True]
    assert texts(last_result(provider, 3)) == "deep"


# ------------------------------------------------------------ SessionStart, SessionEnd, PreCompact, PermissionRequest


async def test_session_start_matches_its_source_and_gives_context(workspace, hooks: Hooks):
    script = hooks.script(plans={"SessionStart": {"stdout": "open issues: #12"}})
    agent, provider = make_agent(workspace, ["one", "two"], hooks=config("SessionStart", command=script,
                                                                         matcher="startup"))
    await agent.run("first")
    await agent.run("second")
    assert hooks.events() == ["SessionStart"]
    assert provider.requests[0].messages[0]["content"][-1]["text"] == "open issues: #12"


async def test_session_end_gets_the_reason(workspace, hooks: Hooks):
    script = hooks.script()
    agent, _ = make_agent(workspace, ["one"], hooks=config("SessionEnd", command=script, timeout=30))
    await agent.run("first")
    await agent.aclose(reason="prompt_input_exit")
    assert [r["stdin"]["reason"] for r in hooks.seen()] == ["prompt_input_exit"]


async def test_pre_compact_exit_2_keeps_the_history(workspace, hooks: Hooks):
    script = hooks.script(plans={"PreCompact": {"exit": 2, "stderr": "archive first"}})
    script_turns = [call("read_file", path="big")] * 4 + ["done"]

    def turn(request: Any) -> Any:
        return "summary" if not request.tools else script_turns.pop(0)

    (workspace / "big").write_text("words " * 3000)
    agent, _ = make_agent(workspace, [turn] * 10, context_window=3000,
                          hooks=config("PreCompact", command=script, matcher="auto"))
    events = collect(agent, "compaction.started", "run.warning")
    result = await agent.run("go")
    assert result.status == "completed"
    assert [e.type for e in events if e.type == "compaction.started"] == []
    assert any("archive first" in e.data["error"]["message"] for e in events)


@pytest.mark.parametrize("behavior,ran", [("allow", True), ("deny", False)])
async def test_permission_request_answers_the_prompt(workspace, hooks: Hooks, behavior, ran):
    script = hooks.script(plans={"PermissionRequest": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": behavior, "message": "policy says so"}}}}})
    agent, provider = make_agent(workspace, [call("run_command", command="make"), "ok"],
                                 hooks=config("PermissionRequest", command=script, matcher="Bash"))
    prompts = answer_prompts(agent, "deny")
    await agent.run("go")
    assert prompts == [] and (not last_result(provider)["is_error"]) is ran
    if not ran:
        assert "policy says so" in texts(last_result(provider))


async def test_permission_request_exit_2_does_not_deny_and_says_so(workspace, hooks: Hooks):
    script = hooks.script(plans={"PermissionRequest": {"exit": 2, "stderr": "no"}})
    agent, _ = make_agent(workspace, [call("run_command", command="make"), "ok"],
                          hooks=config("PermissionRequest", command=script))
    prompts = answer_prompts(agent, "allow")
    warnings = collect(agent, "run.warning")
    await agent.run("go")
    assert len(prompts) == 1
    assert any("exit 2 does not deny a PermissionRequest" in w.data["error"]["message"] for w in warnings)


async def test_notification_fires_when_a_person_is_asked(workspace, hooks: Hooks):
    script = hooks.script()
    agent, _ = make_agent(workspace, [call("run_command", command="make"), "ok"],
                          hooks=config("Notification", command=script, matcher="permission_prompt"))
    answer_prompts(agent, "allow")
    await agent.run("go")
    assert [r["stdin"]["message"] for r in hooks.seen()] == ["Smoke needs your permission to use run_command"]
