"""Every event fires, with the documented stdin (checked against the JSON
Schema of Claude Code's contract), in both shapes: a hook from a Claude Code
file sees Claude's tool names and inputs, a hook from Smoke's settings sees
Smoke's; the environment a hook gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import Hooks, call, config, make_agent, validate_stdin, write_yaml

EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit", "Stop",
          "SubagentStop", "SessionStart", "SessionEnd", "PreCompact", "Notification")


def every_event_run() -> list[Any]:
    script: list[Any] = [
        call("run_command", command="echo hi", timeout_ms=5000),  # asks: PermissionRequest, Notification
        call("explode", why="boom"),                                  # PostToolUseFailure
        call("task", description="look", prompt="look around", agent="Explore"),
        "sub done",                                                   # the subagent's answer: SubagentStop
        call("read_file", path="big.txt"),                            # a long result: compaction next step
        "done",                                                       # Stop
    ]

    def turn(request: Any) -> Any:
        return "the summary" if not request.tools else script.pop(0)

    return [turn] * 12


def trusted_with_compat(workspace: Path, home: Path) -> None:
    from smoke_core.settings import trust_folder, user_settings_path

    write_yaml(user_settings_path(), {"hooks_compat": ["claude"]})
    trust_folder(workspace)  # after: the trust list is in the same file


async def test_every_event_fires_with_the_documented_stdin_in_both_shapes(workspace, hooks: Hooks, home, monkeypatch):
    import json

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-this-must-not-reach-a-hook")
    trusted_with_compat(workspace, home)
    (workspace / "big.txt").write_text("line of text\n" * 1200)
    claude = hooks.script("claude")
    smoke = hooks.script("smoke")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": config(*EVENTS, command=claude)}))
    write_yaml(workspace / ".smoke" / "config.yaml", {"hooks": config(*EVENTS, command=smoke)})

    agent, _provider = make_agent(workspace, every_event_run(), context_window=3000, trust_workspace=None)
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    result = await agent.run("do everything")
    await agent.aclose()
    assert result.status == "completed", result.error

    for name in ("claude", "smoke"):
        seen = hooks.seen(name)
        assert sorted(set(hooks.events(name))) == sorted(EVENTS), name
        for record in seen:
            validate_stdin(record["stdin"])
            assert "OPENAI_API_KEY" not in record["env"]
            assert record["env"]["SMOKE_PROJECT_DIR"] == record["env"]["CLAUDE_PROJECT_DIR"] == str(workspace)
            assert record["stdin"]["cwd"] == str(workspace)
            assert Path(record["stdin"]["transcript_path"]).is_file()
        by_event: dict[str, list[dict[str, Any]]] = {}
        for record in seen:
            by_event.setdefault(record["stdin"]["hook_event_name"], []).append(record["stdin"])
        pre = by_event["PreToolUse"][0]
        assert pre["permission_mode"] == "default" and pre["tool_use_id"]
        if name == "claude":
            assert pre["tool_name"] == "Bash" and pre["tool_input"] == {"command": "echo hi", "timeout": 5000}
            post = by_event["PostToolUse"][0]
            assert post["tool_response"]["stdout"] == "ran: echo hi"
            assert {r["tool_name"] for r in by_event["PreToolUse"]} >= {"Bash", "Task", "Read"}
            read = next(r for r in by_event["PreToolUse"] if r["tool_name"] == "Read")
            assert read["tool_input"] == {"file_path": str(workspace / "big.txt")}
        else:
            assert pre["tool_name"] == "run_command" and pre["tool_input"] == {"command": "echo hi",
                                                                                "timeout_ms": 5000}
            assert by_event["PostToolUse"][0]["tool_response"]["content"][0]["text"] == "ran: echo hi"
        assert by_event["PermissionRequest"][0]["tool_input"] == pre["tool_input"]
        failure = by_event["PostToolUseFailure"][0]
        assert "exploded: boom" in failure["error"] and failure["is_interrupt"] is False
        assert by_event["UserPromptSubmit"][0]["prompt"] == "do everything"
        assert by_event["SessionStart"][0]["source"] == "startup"
        assert by_event["SessionEnd"][0]["reason"] == "other"
        assert by_event["PreCompact"][0]["trigger"] == "auto"
        assert by_event["Notification"][0]["notification_type"] == "permission_prompt"
        sub = by_event["SubagentStop"][0]
        assert sub["agent_type"] == "Explore" and sub["last_assistant_message"] == "sub done"
        assert sub["stop_hook_active"] is False
        stop = by_event["Stop"][0]
        assert stop["stop_hook_active"] is False and stop["last_assistant_message"] == "done"


async def test_the_hook_events_carry_the_file_the_decision_and_the_duration(workspace, hooks: Hooks):
    script = hooks.script(plans={"PreToolUse": {"exit": 2, "stderr": "no"}})
    agent, _ = make_agent(workspace, [call("run_command", command="ls"), "ok"],
                          hooks=config("PreToolUse", command=script, matcher="Bash"))
    events: list[Any] = []
    agent.on("hook.started", events.append)
    agent.on("hook.completed", events.append)
    await agent.run("go")
    started, completed = events
    assert started.type == "hook.started" and completed.type == "hook.completed"
    assert completed.data["hook"] == "create_agent(hooks=...) PreToolUse[0].hooks[0]"
    assert completed.data["tool_call_id"] == started.data["tool_call_id"] and completed.data["tool_call_id"]
    assert completed.data["decision"] == "block" and completed.data["reason"] == "no"
    assert completed.data["exit_code"] == 2 and completed.data["duration_ms"] > 0


async def test_updated_input_round_trips_through_the_claude_shape(workspace, hooks: Hooks, home):
    import json

    from smoke_core.settings import trust_folder, user_settings_path

    write_yaml(user_settings_path(), {"hooks_compat": ["claude"]})
    trust_folder(workspace)  # after: the trust list is in the same file
    rewrite = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                      "updatedInput": {"file_path": str(workspace / "notes" / "b.txt"),
                                                       "content": "rewritten"}}}
    script = hooks.script(plans={"PreToolUse": {"stdout": rewrite}})
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": config("PreToolUse", command=script, matcher="Write")}))
    agent, provider = make_agent(workspace, [call("write_file", path="notes/a.txt", content="original"), "ok"],
                                 trust_workspace=None)
    asked: list[Any] = []
    agent.on("permission.required", asked.append)
    result = await agent.run("write it")
    assert result.status == "completed"
    assert asked == []  # the hook's allow answered the mode's ask
    assert (workspace / "notes" / "b.txt").read_text() == "rewritten"
    assert not (workspace / "notes" / "a.txt").exists()
    seen = hooks.seen()[0]["stdin"]
    assert seen["tool_input"] == {"file_path": str(workspace / "notes" / "a.txt"), "content": "original"}
    started = next(m for m in provider.requests[1].messages if m["role"] == "assistant")["content"][0]
    assert started["input"] == {"path": "notes/a.txt", "content": "original"}  # the model's call as it made it


async def test_hooks_of_one_event_run_together(workspace, hooks: Hooks):
    # each waits for the other's mark: they finish only when both run at once
    a_mark, b_mark = hooks.root / "a.here", hooks.root / "b.here"
    a = hooks.script("a", {"PreToolUse": {"touch": str(a_mark), "wait_for": str(b_mark)}})
    b = hooks.script("b", {"PreToolUse": {"touch": str(b_mark), "wait_for": str(a_mark)}})
    agent, _provider = make_agent(workspace, [call("read_file", path="x"), "ok"], hooks={
        "PreToolUse": [{"hooks": [{"type": "command", "command": str(a), "timeout": 30},
                                  {"type": "command", "command": str(b), "timeout": 30}]}]})
    (workspace / "x").write_text("x")
    warnings: list[Any] = []
    agent.on("run.warning", warnings.append)
    await agent.run("go")
    assert warnings == [] and hooks.events("a") == hooks.events("b") == ["PreToolUse"]


async def test_the_same_handler_in_two_files_runs_once(workspace, hooks: Hooks):
    from smoke_core.settings import trust_folder, user_settings_path

    script = hooks.script()
    write_yaml(user_settings_path(), {"hooks": config("UserPromptSubmit", command=script)})
    trust_folder(workspace)
    write_yaml(workspace / ".smoke" / "config.yaml", {"hooks": config("UserPromptSubmit", command=script)})
    agent, _ = make_agent(workspace, ["ok"], trust_workspace=None)
    await agent.run("hi")
    assert hooks.events() == ["UserPromptSubmit"]
