"""Bad hooks: each is one clear message naming the file, the hook and what
happened; nothing crashes the run; a failing PreToolUse hook fails closed
only where ``on_error: block`` (the default for managed hooks) says so."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import Hooks, call, collect, config, last_result, make_agent, texts, write_yaml

LABEL = "create_agent(hooks=...) PreToolUse[0].hooks[0]"


def _messages(events: list[Any]) -> list[str]:
    return [e.data["error"]["message"] for e in events if e.type == "run.warning"]


async def _run_pre(workspace: Path, command: str, **handler: Any) -> tuple[Any, Any, list[str]]:
    agent, provider = make_agent(workspace, [call("read_file", path="a"), "ok"],
                                 hooks=config("PreToolUse", command=command, **handler))
    (workspace / "a").write_text("content")
    events = collect(agent, "run.warning")
    result = await agent.run("go")
    return result, provider, _messages(events)


@pytest.mark.parametrize("plan,words", [
    ({"stdout": "{not json"}, "printed invalid JSON on stdout"),
    ({"kill": "SIGKILL"}, "was killed by SIGKILL"),
    ({"sleep": 30}, "timed out after 1 s and was killed"),
    ({"flood": True}, "printed more than 1024 KiB on stdout and was killed"),
    ({"exit": 3, "stderr": "Traceback: boom\nmore"}, "exited with status 3: Traceback: boom"),
    ({"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse"}}},
     "hookSpecificOutput.hookEventName is 'PostToolUse', not 'PreToolUse'"),
])
async def test_a_failing_hook_fails_open_with_one_clear_message(workspace, hooks: Hooks, plan, words):
    script = hooks.script(plans={"PreToolUse": plan})
    result, provider, messages = await _run_pre(workspace, str(script), timeout=1)
    assert result.status == "completed"
    assert texts(last_result(provider)) == "content"  # the call went on
    assert len(messages) == 1, messages
    assert LABEL in messages[0] and words in messages[0] and "fails open" in messages[0]


@pytest.mark.parametrize("plan", [{"stdout": "{not json"}, {"kill": "SIGTERM"}, {"exit": 1}])
async def test_on_error_block_fails_closed(workspace, hooks: Hooks, plan):
    script = hooks.script(plans={"PreToolUse": plan})
    result, provider, messages = await _run_pre(workspace, str(script), on_error="block")
    block = last_result(provider)
    assert result.status == "completed" and block["is_error"] is True
    assert "on_error is block" in texts(block) and "the call is blocked" in messages[0]


async def test_not_executable_and_missing_commands_name_the_file(workspace, hooks: Hooks):
    script = hooks.script()
    script.chmod(0o644)
    _, _, messages = await _run_pre(workspace, str(script))
    assert "could not start: the command is not executable (chmod +x it)" in messages[0] and LABEL in messages[0]
    _, _, messages = await _run_pre(workspace, str(workspace / "nowhere.sh"))
    assert "could not start: the command was not found" in messages[0]


async def test_exec_form_not_executable(workspace, hooks: Hooks):
    script = hooks.script()
    script.chmod(0o644)
    _, _, messages = await _run_pre(workspace, str(script), args=["--check"])
    assert f"could not start: {script} is not executable" in messages[0]


async def test_a_timed_out_hook_is_killed_with_its_process_group(workspace, hooks: Hooks):
    pid_file = hooks.root / "child.pid"
    script = hooks.script(plans={"PreToolUse": {"spawn": str(pid_file), "sleep": 30}})
    _, _, messages = await _run_pre(workspace, str(script), timeout=1)
    assert "timed out" in messages[0]
    child = int(pid_file.read_text())
    # the child is gone (or a zombie waiting for init): its group was killed
    try:
        os.kill(child, 0)
        state = Path(f"/proc/{child}/stat").read_text().split()[2]
        assert state == "Z", f"the hook's child {child} still runs"
    except ProcessLookupError:
        pass


async def test_an_updated_input_that_fails_the_schema_is_refused(workspace, hooks: Hooks):
    bad = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"path": 42}}}
    script = hooks.script(plans={"PreToolUse": {"stdout": bad}})
    _result, provider, messages = await _run_pre(workspace, str(script))
    assert texts(last_result(provider)) == "content"  # the original input ran
    assert "returned an updatedInput that does not fit read_file's schema" in messages[0] and LABEL in messages[0]


async def test_unknown_events_and_bad_matchers_are_named_and_the_rest_load(workspace, hooks: Hooks):
    script = hooks.script()
    agent, _ = make_agent(workspace, [call("read_file", path="a"), "ok"], hooks={
        "PreToolUs": [{"hooks": [{"type": "command", "command": str(script)}]}],
        "PostToolBatch": [{"hooks": [{"type": "command", "command": str(script)}]}],
        "PostToolUse": [{"matcher": "Read(", "hooks": [{"type": "command", "command": str(script)}]},
                        {"matcher": "Read", "hooks": [{"type": "prompt", "prompt": "x"},
                                                      {"type": "command", "command": str(script), "timeout": -1},
                                                      {"type": "command", "command": str(script)}]}],
    })
    (workspace / "a").write_text("x")
    events = collect(agent, "run.warning")
    result = await agent.run("go")
    assert result.status == "completed"
    messages = _messages(events)
    assert any("unknown hook event 'PreToolUs' (did you mean 'PreToolUse'?)" in m for m in messages)
    assert any("hooks for PostToolBatch never run: Smoke has no PostToolBatch event" in m for m in messages)
    assert any("PostToolUse[0]: matcher 'Read(' is not a valid regular expression" in m for m in messages)
    assert any("PostToolUse[1].hooks[0]: hooks of type 'prompt' are not supported" in m for m in messages)
    assert any("PostToolUse[1].hooks[1]: timeout must be a positive number" in m for m in messages)
    assert hooks.events() == ["PostToolUse"]  # the good one ran


async def test_a_bad_file_is_named_and_the_others_still_load(workspace, hooks: Hooks, home):
    from smoke_core.settings import trust_folder, user_settings_path

    script = hooks.script()
    write_yaml(user_settings_path(), {"hooks_compat": ["claude"],
                                      "hooks": config("UserPromptSubmit", command=script)})
    trust_folder(workspace)
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{ not json")
    agent, _ = make_agent(workspace, ["ok"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert any(".claude/settings.json: is not valid JSON" in m for m in _messages(events))
    assert hooks.events() == ["UserPromptSubmit"]


async def test_a_managed_hook_fails_closed_by_default(workspace, hooks: Hooks, tmp_path, monkeypatch):
    script = hooks.script(plans={"PreToolUse": {"exit": 1, "stderr": "policy server down"}})
    managed = write_yaml(tmp_path / "managed.yaml", {"hooks": config("PreToolUse", command=script)})
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    agent, provider = make_agent(workspace, [call("read_file", path="a"), "ok"])
    await agent.run("go")
    block = last_result(provider)
    assert block["is_error"] is True and "policy server down" in texts(block)
