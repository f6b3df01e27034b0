"""Issue 28's reproductions against real bash, written as an attacker would
try them: ``env`` that runs a hidden command (``BASH_ENV``), a denied command
spelled so a text glob misses it, and the prompt and "always" rule that left
``env`` out. Each fails on the code before issue 28 and passes after."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_terminal

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider

HIDDEN = "$(rm -f victim.txt; echo /dev/null)"


def _agent(ws: Path, turns: list[Any], **kw: Any) -> Any:
    return create_agent(ws, provider=ScriptedProvider([*turns, "done"]), autoload_plugins=False,
                        plugins=[smoke_tools_terminal], **kw)


def _call(command: str, call_id: str = "c1", **inputs: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "run_command", "input": {"command": command, **inputs}}]}


def _results(agent_events: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    return [(e["is_error"], "".join(b.get("text", "") for b in e["content"])) for e in agent_events]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "victim.txt").write_text("keep me\n")
    return root


@pytest.fixture
def managed_deny_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "managed.yaml"
    path.write_text("permissions:\n  deny: ['run_command(rm *)']\n")
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(path))
    return path


@pytest.mark.parametrize("mode", ["off", "auto"])
async def test_bash_env_cannot_run_a_hidden_command_under_an_allow_rule(ws: Path, managed_deny_rm: Path,
                                                                         mode: str) -> None:
    """Reproduction 1: allow pytest *, managed deny rm *; BASH_ENV deleted the file with no prompt."""
    agent = _agent(ws, [_call("pytest --version", env={"BASH_ENV": HIDDEN})],
                   permissions={"allow": ["run_command(pytest *)"]}, sandbox={"mode": mode})
    asked: list[Any] = []
    done: list[dict[str, Any]] = []
    agent.on("permission.required", lambda e: (asked.append(e.data), agent.resolve_permission(
        e.data["tool_call_id"], "allow")))
    agent.on("tool.completed", lambda e: done.append(e.data))
    result = await agent.run("run the tests")
    await agent.aclose()
    assert result.status == "completed"
    assert (ws / "victim.txt").read_text() == "keep me\n"  # nothing ran
    assert asked == []  # refused before anyone is asked
    [(is_error, text)] = _results(done)
    assert is_error and "env BASH_ENV refused" in text and "run_command(BASH_ENV=… pytest *)" in text
    assert done[0]["error"]["code"] == "tool_invalid_input"


async def test_the_prompt_shows_the_env_and_always_remembers_it(ws: Path) -> None:
    """Reproduction 1 at a terminal: the prompt showed `$ ls -la` only, and "always"
    wrote run_command(ls -la), which then allowed any env."""
    turns = [_call("ls -la", "c1", env={"GREETING": "hello"}), _call("ls -la", "c2", env={"GREETING": "hello"}),
             _call("ls -la", "c3", env={"GREETING": HIDDEN})]
    agent = _agent(ws, turns, sandbox={"mode": "off"})
    asked: list[dict[str, Any]] = []

    def answer(e: Any) -> None:
        asked.append(e.data)
        agent.resolve_permission(e.data["tool_call_id"], "allow_always" if len(asked) == 1 else "deny")

    agent.on("permission.required", answer)
    await agent.run("look around")
    await agent.aclose()
    first = asked[0]
    assert first["input"]["env"] == {"GREETING": "hello"}  # the whole env is in what the person sees
    assert first["suggested_rules"] == ["run_command(GREETING=hello ls -la)"]
    local = (ws / ".smoke" / "config.local.yaml").read_text()
    assert "run_command(GREETING=hello ls -la)" in local
    # c2 (the same env) ran under the rule without asking; c3 (another value) asked again
    assert [a["tool_call_id"] for a in asked] == ["c1", "c3"]
    assert (ws / "victim.txt").exists()


@pytest.mark.parametrize("command", ["{ rm victim.txt; }", "\\rm victim.txt", "'rm' victim.txt",
                                     "/bin/rm victim.txt", "env rm victim.txt", "command rm victim.txt",
                                     "time rm victim.txt", "if true; then rm victim.txt; fi",
                                     "sh -c 'rm victim.txt'"])
async def test_a_deny_rule_holds_for_every_spelling_with_real_bash(ws: Path, managed_deny_rm: Path,
                                                                   command: str) -> None:
    """Reproduction 2: deny run_command(rm *) stopped `rm v` but not these."""
    agent = _agent(ws, [_call(command), _call("ls", "c2")], permission="allow-all", auto_approve=True,
                   sandbox={"mode": "off"})
    done: list[dict[str, Any]] = []
    agent.on("tool.completed", lambda e: done.append(e.data))
    await agent.run("clean up")
    await agent.aclose()
    assert (ws / "victim.txt").exists(), command
    assert done[0]["error"]["code"] == "permission_denied" and "managed" in _results(done)[0][1]
    assert done[1]["is_error"] is False  # the control: an ordinary command still runs


async def test_a_workdir_outside_the_workspace_never_reaches_the_shell(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / "out").symlink_to(outside)
    agent = _agent(ws, [_call("touch planted", workdir="out")], permission="allow-all", sandbox={"mode": "off"})
    done: list[dict[str, Any]] = []
    agent.on("tool.completed", lambda e: done.append(e.data))
    await agent.run("go")
    await agent.aclose()
    assert not (outside / "planted").exists()
    assert done[0]["error"]["code"] == "tool_invalid_input" and "outside the workspace" in _results(done)[0][1]


async def test_a_background_command_is_asked_as_one(ws: Path) -> None:
    agent = _agent(ws, [_call("sleep 30", background=True)], permissions={"allow": ["run_command(sleep *)"]},
                   sandbox={"mode": "off"})
    asked: list[dict[str, Any]] = []
    agent.on("permission.required", lambda e: (asked.append(e.data), agent.resolve_permission(
        e.data["tool_call_id"], "deny")))
    await agent.run("serve")
    await agent.aclose()
    assert [a["reason"] for a in asked] and "in the background" in asked[0]["reason"]
    assert asked[0]["suggested_rules"] == ["run_command(sleep 30 &)"]


def test_the_bash_env_attack_is_real_without_the_gate(ws: Path) -> None:
    """The control for reproduction 1: bash does run BASH_ENV's substitution,
    so the tests above would see the file go if the gate let it through."""
    import subprocess

    env = {**os.environ, "BASH_ENV": HIDDEN}
    subprocess.run(["bash", "-c", "true"], cwd=ws, env=env, check=True)
    assert not (ws / "victim.txt").exists()
