"""Who can add a hook: a folder's own files only when it is trusted (one
warning otherwise), other programs' files only with ``hooks_compat`` from
the person or managed settings, only managed hooks under
``allow_managed_hooks_only``; a hook's allow never beats a deny rule or a
managed rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import (
    Hooks,
    answer_prompts,
    call,
    collect,
    config,
    last_result,
    make_agent,
    texts,
    write_yaml,
)


def _user(**values: Any) -> Path:
    from smoke_core.settings import user_settings_path

    return write_yaml(user_settings_path(), values)


def _trust(workspace: Path) -> None:
    from smoke_core.settings import trust_folder

    trust_folder(workspace)


def _claude_file(workspace: Path, hooks: dict[str, Any]) -> Path:
    path = workspace / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def _warnings(events: list[Any]) -> list[str]:
    return [e.data["error"]["message"] for e in events]


async def test_an_untrusted_folder_runs_none_of_its_own_hooks_and_says_so_once(workspace, hooks: Hooks, caplog):
    script = hooks.script()
    _user(hooks_compat=["claude"])
    _claude_file(workspace, config("UserPromptSubmit", command=script))
    write_yaml(workspace / ".smoke" / "config.yaml", {"hooks": config("UserPromptSubmit", command=script)})
    agent, _ = make_agent(workspace, ["one", "two"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    await agent.run("again")
    assert hooks.events() == []
    about_claude = [m for m in _warnings(events) if ".claude/settings.json" in m]
    assert len(about_claude) == 1 and "not trusted" in about_claude[0] and "smoke trust" in about_claude[0]
    assert any("config.yaml: hooks" in r.getMessage() and "not trusted" in r.getMessage() for r in caplog.records)


async def test_claude_files_run_only_with_hooks_compat(workspace, hooks: Hooks):
    script = hooks.script()
    _trust(workspace)
    _claude_file(workspace, config("UserPromptSubmit", command=script))
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert hooks.events() == [] and events == []

    _user(hooks_compat=["claude"], trusted_folders=[str(workspace)])
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    await agent.run("hi")
    assert hooks.events() == ["UserPromptSubmit"]


async def test_a_repository_cannot_turn_on_hooks_compat(workspace, hooks: Hooks):
    script = hooks.script()
    _trust(workspace)
    _claude_file(workspace, config("UserPromptSubmit", command=script))
    write_yaml(workspace / ".smoke" / "config.yaml", {"hooks_compat": ["claude"]})
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert hooks.events() == []
    assert any("hooks_compat is read only from your user settings or managed settings" in m
               for m in _warnings(events))


async def test_codex_hooks_files_in_json_and_toml(workspace, hooks: Hooks, home):
    one, two = hooks.script("one"), hooks.script("two")
    _user(hooks_compat=["codex"])
    codex = home / ".codex"
    codex.mkdir()
    (codex / "hooks.json").write_text(json.dumps({"hooks": config("UserPromptSubmit", command=one)}))
    (codex / "config.toml").write_text(
        f'[[hooks.UserPromptSubmit]]\n\n[[hooks.UserPromptSubmit.hooks]]\ntype = "command"\ncommand = "{two}"\n')
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    await agent.run("hi")
    assert hooks.events("one") == hooks.events("two") == ["UserPromptSubmit"]


async def test_allow_managed_hooks_only_silences_user_project_and_code_hooks(workspace, hooks: Hooks, tmp_path,
                                                                            monkeypatch):
    managed_hook, user_hook, project_hook, code_hook = (hooks.script(n) for n in ("managed", "user", "project", "code"))
    managed = write_yaml(tmp_path / "managed.yaml", {
        "allow_managed_hooks_only": True, "hooks": config("UserPromptSubmit", command=managed_hook)})
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    _user(hooks=config("UserPromptSubmit", command=user_hook), hooks_compat=["claude"])
    _trust(workspace)
    _claude_file(workspace, config("UserPromptSubmit", command=project_hook))
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None,
                          hooks=config("UserPromptSubmit", command=code_hook))
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert hooks.events("managed") == ["UserPromptSubmit"]
    assert hooks.events("user") == hooks.events("project") == hooks.events("code") == []
    assert any("allow_managed_hooks_only" in m for m in _warnings(events))


async def test_allow_managed_hooks_only_outside_managed_settings_is_ignored(workspace, hooks: Hooks):
    script = hooks.script()
    _user(allow_managed_hooks_only=True, hooks=config("UserPromptSubmit", command=script))
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert hooks.events() == ["UserPromptSubmit"]
    assert any("allow_managed_hooks_only is honoured only in managed settings" in m for m in _warnings(events))


async def test_managed_and_user_hooks_add_up(workspace, hooks: Hooks, tmp_path, monkeypatch):
    managed_hook, user_hook = hooks.script("managed"), hooks.script("user")
    managed = write_yaml(tmp_path / "managed.yaml", {"hooks": config("UserPromptSubmit", command=managed_hook)})
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    _user(hooks=config("UserPromptSubmit", command=user_hook))
    agent, _ = make_agent(workspace, ["one"], trust_workspace=None)
    events = collect(agent, "run.warning")
    await agent.run("hi")
    assert hooks.events("managed") == hooks.events("user") == ["UserPromptSubmit"]
    assert events == []  # not "managed settings are final": hooks add up


async def test_a_managed_deny_rule_beats_a_hooks_allow(workspace, hooks: Hooks, tmp_path, monkeypatch):
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    script = hooks.script(plans={"PreToolUse": {"stdout": allow}})
    managed = write_yaml(tmp_path / "managed.yaml", {"permissions": {"deny": ["run_command(rm *)"]}})
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    agent, provider = make_agent(workspace, [call("run_command", command="rm -rf build"), "ok"],
                                 hooks=config("PreToolUse", command=script, matcher="Bash"))
    prompts = answer_prompts(agent, "allow")
    await agent.run("go")
    block = last_result(provider)
    assert prompts == [] and block["is_error"] is True and "managed" in texts(block)


async def test_a_hooks_allow_does_not_pass_an_ask_rule(workspace, hooks: Hooks):
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    script = hooks.script(plans={"PreToolUse": {"stdout": allow}})
    agent, provider = make_agent(workspace, [call("run_command", command="git push"), "ok"],
                                 permissions={"ask": ["run_command(git push*)"]},
                                 hooks=config("PreToolUse", command=script))
    prompts = answer_prompts(agent, "deny")
    await agent.run("go")
    assert len(prompts) == 1 and last_result(provider)["is_error"] is True


async def test_command_hooks_and_python_hooks_in_create_agent(workspace, hooks: Hooks):
    script = hooks.script()
    seen: list[str] = []
    agent, _ = make_agent(workspace, ["ok"], hooks={
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(script)}]}],
        "before_run": lambda run: seen.append(run.task),
    })
    await agent.run("hi")
    assert hooks.events() == ["UserPromptSubmit"] and seen == ["hi"]
