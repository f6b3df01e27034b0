"""Custom slash commands from ``.claude/commands``, ``~/.claude/commands`` and
``.smoke/commands``: names, front matter, arguments, what a file cannot do
(``!`cmd``` is not run, ``@path`` is not read, ``allowed-tools`` only
narrows), and ``/review`` in a real ``smoke chat`` on a pseudo-terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import Pty, call, dedent, last_result, make_agent, smoke, smoke_env, texts

REVIEW = dedent("""
    ---
    description: Review a change for bugs
    argument-hint: "[what]"
    allowed-tools: Read, Bash(git diff:*)
    ---
    Review $ARGUMENTS for bugs. List each with file and line.
""")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _commands(agent: Any) -> dict[str, Any]:
    from smoke_core.plugin import collect_slash_commands

    commands, problems = collect_slash_commands(agent)
    assert problems == []
    return commands


class Chat:
    """What a handler gets as ``chat`` (only ``agent`` is used)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent


def test_files_become_commands_with_their_front_matter_and_precedence(workspace, home):
    _write(workspace / ".claude" / "commands" / "review.md", REVIEW)
    _write(workspace / ".claude" / "commands" / "frontend" / "component.md", "Make a component named $1.")
    _write(workspace / ".smoke" / "commands" / "deploy.md", "Deploy to $1 with care.")
    _write(home / ".claude" / "commands" / "deploy.md", "My own deploy: $ARGUMENTS")
    agent, _ = make_agent(workspace, [])
    commands = _commands(agent)
    review = commands["review"]
    assert review.description == "Review a change for bugs (.claude/commands)"
    assert review.usage == "/review [what]"
    assert "frontend:component" in commands and "component" in commands
    assert commands["component"].description.endswith("(.claude/commands:frontend)")
    assert commands["deploy"].handler("prod", Chat(agent)) == "My own deploy: prod"  # yours wins


@pytest.mark.parametrize("body,args,expected", [
    ("Review $ARGUMENTS now.", "the parser", "Review the parser now."),
    ("Fix issue $1 with priority $2.", "123 high", "Fix issue 123 with priority high."),
    ("First: $ARGUMENTS[0]; second: $ARGUMENTS[1]", '"two words" next', "First: two words; second: next"),
    ("Missing: [$3]", "a b", "Missing: []"),
    ("Summarise the repository.", "briefly please", "Summarise the repository.\n\nARGUMENTS: briefly please"),
])
def test_arguments(workspace, body, args, expected):
    from smoke_hooks._commands import CommandFile, expand

    assert expand(CommandFile("x", workspace / "x.md", "project", body), args) == expected


def test_shell_and_file_expansions_are_never_performed(workspace, tmp_path):
    from smoke_hooks._commands import CommandFile, expand

    marker = tmp_path / "ran"
    (workspace / "secret.txt").write_text("TOP SECRET")
    body = f"Status: !`touch {marker}`\nContext: @secret.txt and @../../etc/passwd. Mail me@example.com"
    text = expand(CommandFile("x", workspace / "x.md", "project", body), "")
    assert not marker.exists()
    assert "TOP SECRET" not in text and "root:" not in text
    assert f"(the output of `touch {marker}`: run it yourself to see it)" in text
    assert "`secret.txt` (read that file yourself) and `../../etc/passwd` (read that file yourself)." in text
    assert "me@example.com" in text


def test_a_symlink_out_of_the_commands_folder_is_refused(workspace, tmp_path, caplog):
    outside = _write(tmp_path / "credentials", "aws_secret_access_key = abc")
    link = workspace / ".claude" / "commands" / "leak.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    agent, _ = make_agent(workspace, [])
    assert "leak" not in _commands(agent)
    assert any("a symlink out of" in r.getMessage() for r in caplog.records)


async def test_allowed_tools_only_narrows_the_turn(workspace):
    _write(workspace / ".claude" / "commands" / "review.md", REVIEW)
    (workspace / "a.py").write_text("print(1)\n")
    agent, provider = make_agent(workspace, [call("run_command", command="rm -rf /"),
                                             call("run_command", command="git diff HEAD"), "looks fine", "plain"])
    asked: list[Any] = []
    agent.on("permission.required", lambda e: (asked.append(e.data), agent.resolve_permission(
        e.data["tool_call_id"], "deny")))
    prompt = _commands(agent)["review"].handler("a.py", Chat(agent))
    result = await agent.run(prompt)
    assert result.status == "completed"
    offered = {t["name"] for t in provider.requests[0].tools}
    assert offered == {"read_file", "run_command"}
    refused = last_result(provider, 1)
    assert refused["is_error"] and "/review allows only" in texts(refused)
    assert [a["input"]["command"] for a in asked] == ["git diff HEAD"]  # not pre-approved: it still asks
    # the next turn is not narrowed
    await agent.run("anything else")
    assert {t["name"] for t in provider.requests[-1].tools} >= {"write_file", "explode", "task"}


@pytest.mark.slow
def test_review_is_a_slash_command_in_smoke_chat_on_a_terminal(workspace, tmp_path):
    _write(workspace / ".claude" / "commands" / "review.md", REVIEW)
    env = smoke_env(tmp_path)
    term = Pty([sys.executable, "-m", "smoke_core.cli", "chat", "--provider", "echo-scripted"], workspace, env)
    prompt = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "
    term.read_until(prompt)
    term.send("/help\n")
    out = term.read_until(prompt)
    assert "/review [what]" in out and "Review a change for bugs (.claude/commands)" in out
    term.send("/review the parser\n")
    out = term.read_until(prompt).replace("\r", "")
    assert "the model got: Review the parser for bugs. List each with file and line." in out
    term.send("/exit\n")
    assert term.finish() == 0


def test_smoke_hooks_lists_hooks_with_their_files_and_what_is_not_read(workspace, tmp_path):
    import json

    env = smoke_env(tmp_path, HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
                    XDG_STATE_HOME=str(tmp_path / "home" / ".state"),
                    SMOKE_MANAGED_SETTINGS=str(tmp_path / "no-managed.yaml"))
    _write(workspace / ".claude" / "settings.json", json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.py"}]}]}}))
    out = smoke("hooks", cwd=workspace, env=env)
    assert out.returncode == 0, out.stderr
    assert "(none)" in out.stdout and ".claude/settings.json: claude hooks are read only with hooks_compat" in out.stdout
    assert "hooks_compat: [claude]" in out.stdout
    user = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    _write(user, f"hooks_compat: [claude]\ntrusted_folders: [{workspace}]\n")
    out = smoke("hooks", cwd=workspace, env=env)
    assert 'PreToolUse matcher "Bash": `./check.py`' in out.stdout
    assert f"from {workspace}/.claude/settings.json PreToolUse[0].hooks[0] (project)" in out.stdout


def test_smoke_hooks_test_runs_the_hooks_once(workspace, tmp_path):
    import json

    env = smoke_env(tmp_path, HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
                    XDG_STATE_HOME=str(tmp_path / "home" / ".state"),
                    SMOKE_MANAGED_SETTINGS=str(tmp_path / "no-managed.yaml"))
    check = _write(workspace / "check.py", dedent(f"""
        #!{sys.executable}
        import json, sys
        call = json.load(sys.stdin)
        if call["tool_input"]["command"].startswith("grep"):
            print("use rg", file=sys.stderr)
            sys.exit(2)
    """))
    check.chmod(0o755)
    _write(Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml", yaml_hooks(check))
    out = smoke("hooks", "test", "PreToolUse", "--tool", "Bash", "--input", json.dumps({"command": "grep x"}),
                cwd=workspace, env=env)
    assert out.returncode == 0, out.stderr
    assert "exit 2" in out.stdout and "decision: block" in out.stdout and "reason: use rg" in out.stdout
    out = smoke("hooks", "test", "PreToolUs", cwd=workspace, env=env)
    assert out.returncode == 2 and "unknown event 'PreToolUs' (did you mean PreToolUse?)" in out.stderr
    out = smoke("hooks", "test", "PreToolUse", "--tool", "Bash", "--input", "{no", cwd=workspace, env=env)
    assert out.returncode == 2 and "--input is not valid JSON" in out.stderr


def yaml_hooks(command: Path) -> str:
    return f'hooks:\n  PreToolUse:\n    - matcher: "Bash|run_command"\n      hooks:\n        - {{type: command, command: "{command}"}}\n'
