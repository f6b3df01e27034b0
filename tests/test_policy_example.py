"""The enterprise policy example of docs/security.md (docs/examples/smoke-policy-no-force-push):
a ``before_tool_call`` plugin that matches the parse's argv lists, not the
command's text, so a force-push to main is blocked in every spelling of
issue 28's item 2, and ordinary pushes still run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "smoke-policy-no-force-push"
SOURCE = EXAMPLE / "smoke_policy_no_force_push" / "__init__.py"


def _load():
    spec = importlib.util.spec_from_file_location("smoke_policy_no_force_push", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


policy = _load()

FORCE_PUSHES = [
    "git push --force origin main",
    "git  push -f origin main",
    "\\git push -f origin main",
    "'git' push -f origin main",
    "/usr/bin/git push -f origin main",
    "env git push -f origin main",
    "command git push -f origin main",
    "time git push -f origin main",
    "{ git push -f origin main; }",
    "if true; then git push -f origin main; fi",
    "sh -c 'git push -f origin main'",
    "bash -lc \"cd . && git push --force-with-lease origin main\"",
    "git -C . push -f origin main",
    "git -c color.ui=never --no-pager push origin main --force",
    "git push origin +main",
    "git push origin +HEAD:refs/heads/main",
    "git push -fu origin main",
    "git push --force origin",
    "git push --mirror origin",
    "git push -f origin HEAD",
    "true && g\\it pu\\sh -f origin main",
    "timeout 60 nohup git push -f origin main",
    "git push -f origin $BRANCH",
    "$GIT push -f origin main",
]
ALLOWED = ["git push origin main", "git push -f origin feature/x", "git push origin +feature", "git status",
           "echo git push -f origin main", "git commit -m 'git push -f origin main'"]


@pytest.mark.parametrize("command", FORCE_PUSHES)
def test_every_spelling_of_a_force_push_to_main_is_blocked(command):
    reply = policy.before_tool_call("run_command", {"command": command})
    assert reply is not None and reply["block"] is True, command
    assert reply["reason"]


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_pushes_and_look_alikes_are_left_to_the_rules(command):
    assert policy.before_tool_call("run_command", {"command": command}) is None


def test_other_tools_and_a_broken_command_naming_push(tmp_path):
    assert policy.before_tool_call("write_file", {"path": "x", "content": "git push -f origin main"}) is None
    reply = policy.before_tool_call("run_command", {"command": "git push -f origin 'main"})
    assert reply is not None and "cannot read" in reply["reason"]


async def test_the_plugin_blocks_in_a_real_run_before_anyone_is_asked(tmp_path):
    ran: list[str] = []

    @tool
    def run_command(command: str) -> str:
        """Run a command (records it)."""
        ran.append(command)
        return "ok"

    turns = [{"tool_calls": [{"name": "run_command", "input": {"command": "env \\git -C . push -f origin main"}}]},
             {"tool_calls": [{"name": "run_command", "input": {"command": "git push origin main"}}]}, "done"]
    provider = ScriptedProvider(turns)
    agent = create_agent(tmp_path, provider=provider, tools=[run_command], plugins=[policy], auto_approve=True)
    asked: list[str] = []
    agent.on("permission.required", lambda e: asked.append(e.data["input"]["command"]))
    result = await agent.run("push")
    assert result.status == "completed"
    first = provider.requests[1].messages[-1]["content"][0]
    assert first["is_error"] is True and "force-pushing to main is not allowed" in first["content"][0]["text"]
    assert ran == ["git push origin main"] and asked == []


def test_security_page_quotes_the_example_whole():
    doc = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    body = SOURCE.read_text(encoding="utf-8").split('"""\n\n', 1)[1].rstrip()
    assert f"```python\n{body}\n```" in doc
