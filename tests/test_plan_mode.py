"""Plan mode and accept-edits (issue 33, item 2): in ``plan`` only read-only
tools run whatever the rules say; ``exit_plan_mode`` pauses for the person
(``plan.required``), who approves (the run goes on in the mode they pick),
edits or rejects (their words reach the model; three rejections and the model
is told to stop); ``accept-edits`` lets file edits inside the workspace run.
The mode comes from the settings (tighter only from an untrusted folder,
final from managed), ``create_agent``, ``set_permission_mode`` and ``/plan``."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from smoke_core import create_agent, tool
from smoke_core.policy.gate import PermissionGate
from smoke_core.policy.rules import PermissionRequest
from smoke_core.run.plan import MAX_REJECTIONS, PLAN_TOOL
from smoke_core.run.slash import BUILTIN_COMMANDS
from smoke_core.testing import ScriptedProvider


@tool(read_only=True, kind="read", permission_key="path")
def look(path: str) -> str:
    """Read a file."""
    return "contents"


@tool(kind="edit", permission_key="path")
def write_note(path: str, text: str, ctx: Any = None) -> str:
    """Write a file in the workspace."""
    target = Path(ctx.workspace.root) / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return f"wrote {path}"


@tool(kind="execute", permission_key="command")
def run_command(command: str) -> str:
    """Run a command."""
    return "ran"


TOOLS = [look, write_note, run_command]


def call(name: str, **input: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": input}]}


def agent_for(workspace: Path, turns: list[Any], **kwargs: Any) -> tuple[Any, ScriptedProvider, list[Any]]:
    provider = ScriptedProvider(turns)
    agent = create_agent(workspace, provider=provider, tools=TOOLS, autoload_plugins=False, **kwargs)
    events: list[Any] = []
    agent.on_any(events.append)
    return agent, provider, events


def tool_results(provider: ScriptedProvider, index: int) -> list[str]:
    """The tool results the model read in request ``index``."""
    out = []
    for message in provider.requests[index].messages:
        for block in message["content"]:
            if block.get("type") == "tool_result":
                out.append(" ".join(c.get("text", "") for c in block["content"] if c.get("type") == "text"))
    return out


def answer_plans(agent: Any, answers: list[tuple[str, str | None, str | None]]) -> list[dict[str, Any]]:
    """Answer each plan.required with the next (decision, mode, text); the plans seen."""
    seen: list[dict[str, Any]] = []

    def on_plan(event: Any) -> None:
        seen.append(event.data)
        decision, mode, text = answers[len(seen) - 1]
        agent.resolve_plan(event.data["tool_call_id"], decision, mode=mode, text=text)

    agent.on("plan.required", on_plan)
    return seen


# ---------------------------------------------------------------- the gate


def request(tool_name: str, tool_kind: str, *, read_only: bool = False, **input: Any) -> PermissionRequest:
    value = input.get("path") or input.get("command")
    return PermissionRequest(tool_call_id="c", kind="tool", tool_name=tool_name, input=input, read_only=read_only,
                             tool_kind=tool_kind, permission_value=value)


async def test_plan_mode_runs_read_only_tools_and_refuses_everything_else_whatever_the_rules(workspace):
    gate = PermissionGate("plan", rules=["write_note", "run_command(ls *)"], workspace=workspace,
                          tools={t.name: t for t in TOOLS}.get, auto_approve=True)
    assert await gate.decide(request("look", "read", read_only=True, path="a.py")) == "allow"
    edit = request("write_note", "edit", path="a.py", text="x")
    assert await gate.decide(edit) == "deny"  # an allow rule, --yes: still refused
    assert "plan mode is on" in (edit.reason or "") and "exit_plan_mode" in (edit.reason or "")
    assert await gate.decide(request("run_command", "execute", command="ls -la")) == "deny"


async def test_accept_edits_allows_edits_inside_the_workspace_and_nothing_else(workspace, tmp_path):
    gate = PermissionGate("accept-edits", workspace=workspace, tools={t.name: t for t in TOOLS}.get)
    assert await gate.decide(request("write_note", "edit", path="src/a.py", text="x")) == "allow"
    assert await gate.decide(request("run_command", "execute", command="ls")) == "ask"  # commands still ask
    secret = request("write_note", "edit", path=".env", text="KEY=1")
    assert await gate.decide(secret) == "ask"  # a secret-looking file asks
    outside = tmp_path / "elsewhere.txt"
    assert await gate.decide(request("write_note", "edit", path=str(outside), text="x")) == "ask"
    (workspace / "link").symlink_to(tmp_path)
    assert await gate.decide(request("write_note", "edit", path="link/elsewhere.txt", text="x")) == "ask"
    control = request("write_note", "edit", path=".smoke/config.local.yaml", text="permission: allow-all")
    assert await gate.decide(control) == "ask" and "control file" in (control.reason or "")
    patch = PermissionRequest(tool_call_id="p", kind="tool", tool_name="apply_patch", tool_kind="edit",
                              input={"patch": "*** Update File: keys/id_rsa\n"})
    assert await gate.decide(patch) == "ask"  # a path inside a patch that looks secret still asks
    plain = PermissionRequest(tool_call_id="q", kind="tool", tool_name="apply_patch", tool_kind="edit",
                              input={"patch": "*** Update File: src/a.py\n"})
    assert await gate.decide(plain) == "allow"


# ---------------------------------------------------------------- a run in plan mode


def test_approve_switches_the_run_to_the_mode_the_person_picks(workspace):
    plan = "1. write notes.txt\n2. check it"
    agent, provider, events = agent_for(workspace, [
        call("write_note", path="notes.txt", text="early"),  # refused: plan mode
        call("look", path="README"),
        call(PLAN_TOOL, plan=plan),
        call("write_note", path="notes.txt", text="hello"),  # runs: accept-edits
        call("run_command", command="ls"),  # still asks in accept-edits
        "done",
    ], permission="plan")
    seen = answer_plans(agent, [("approve", "accept-edits", None)])
    asked: list[str] = []

    def on_permission(event: Any) -> None:
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "deny")

    agent.on("permission.required", on_permission)
    result = agent.run_sync("add notes")
    assert result.status == "completed"
    assert "plan mode is on" in tool_results(provider, 1)[0]  # the refused write, and why
    assert [p["plan"] for p in seen] == [plan] and seen[0]["modes"] == ["ask-default", "accept-edits"]
    approved = tool_results(provider, 3)[-1]
    assert "approved the plan" in approved and "accept-edits" in approved and plan in approved
    assert (workspace / "notes.txt").read_text() == "hello"
    assert asked == ["run_command"]
    assert agent.permission_mode == "accept-edits"
    types = [e.type for e in events]
    assert types.index("plan.required") < types.index("plan.resolved") < types.index("permission.mode_changed")
    changed = next(e for e in events if e.type == "permission.mode_changed")
    assert changed.data == {"mode": "accept-edits", "previous": "plan"}
    # the note on how to leave plan mode reached the model, and the tool was offered
    assert PLAN_TOOL in [t["name"] for t in provider.requests[0].tools]
    assert "Plan mode is on" in str(provider.requests[0].messages)


def test_edit_approves_the_persons_version(workspace):
    agent, provider, _ = agent_for(workspace, [call(PLAN_TOOL, plan="write a.txt"), "ok"], permission="plan")
    answer_plans(agent, [("edit", "ask-default", "write b.txt instead")])
    assert agent.run_sync("go").status == "completed"
    result = tool_results(provider, 1)[-1]
    assert "after editing it" in result and "write b.txt instead" in result and "write a.txt" not in result
    assert agent.permission_mode == "ask-default"


def test_reject_returns_the_persons_words_and_three_rejections_stop_the_planning(workspace):
    turns = [call(PLAN_TOOL, plan=f"plan {i}") for i in range(1, 5)] + ["what would you like?"]
    agent, provider, events = agent_for(workspace, turns, permission="plan")
    seen = answer_plans(agent, [("reject", None, "too big"), ("reject", None, "still too big"),
                                ("reject", None, "")])
    result = agent.run_sync("go")
    assert result.status == "completed" and result.text == "what would you like?"
    assert len(seen) == MAX_REJECTIONS  # the fourth plan was not put to the person
    assert [p["rejections"] for p in seen] == [0, 1, 2]
    first = tool_results(provider, 1)[-1]
    assert "rejected the plan: too big" in first and "still in plan mode" in first
    third = tool_results(provider, 3)[-1]
    assert "they gave no reason" in third and "do not propose another" in third
    fourth = tool_results(provider, 4)[-1]
    assert "rejected 3 plans" in fourth
    assert agent.permission_mode == "plan"
    resolved = [e.data for e in events if e.type == "plan.resolved"]
    assert [r["decision"] for r in resolved] == ["reject"] * 3 and resolved[0]["text"] == "too big"
    assert resolved[0]["mode"] is None


def test_nobody_to_approve_says_so_and_the_plan_becomes_the_answer(workspace):
    provider = ScriptedProvider([call(PLAN_TOOL, plan="the plan"), "the plan, as my answer"])
    agent = create_agent(workspace, provider=provider, tools=TOOLS, autoload_plugins=False, permission="plan")
    result = agent.run_sync("go")  # nobody listens for plan.required
    assert result.status == "completed"
    assert "Nobody can approve a plan" in tool_results(provider, 1)[-1]


def test_out_of_plan_mode_the_tool_is_not_offered_and_a_subagent_never_gets_it(workspace):
    agent, provider, _ = agent_for(workspace, ["hi"])
    agent.run_sync("go")
    assert PLAN_TOOL not in [t["name"] for t in provider.requests[0].tools]

    @tool(read_only=True)
    async def delegate(ctx: Any = None) -> str:
        """Run a subagent."""
        result = await ctx.run_subagent("look around", tools=["look"])
        return result.text or ""

    provider = ScriptedProvider([call("delegate"), "sub done", "all done"])
    agent = create_agent(workspace, provider=provider, tools=[*TOOLS, delegate], autoload_plugins=False,
                         permission="plan")
    assert agent.run_sync("go").status == "completed"
    assert PLAN_TOOL in [t["name"] for t in provider.requests[0].tools]
    assert PLAN_TOOL not in [t["name"] for t in provider.requests[1].tools]  # the subagent's call


def test_the_mode_switched_during_plan_mode_makes_the_tool_say_so(workspace):
    agent, provider, _ = agent_for(workspace, [call(PLAN_TOOL, plan="p"), "ok"], permission="plan")

    def leave(event: Any) -> None:
        if event.type == "step.started" and event.data["step"] == 1:
            agent.set_permission_mode("ask-default")  # the person's toggle, mid-run

    agent.on("step.started", leave)
    agent.run_sync("go")
    assert "Plan mode is off now" in tool_results(provider, 1)[-1]


# ---------------------------------------------------------------- bad answers and modes


def test_bad_answers_and_modes_are_one_clear_message(workspace):
    agent, _, _ = agent_for(workspace, [])
    with pytest.raises(ValueError, match="not one of approve, edit, reject"):
        agent.resolve_plan("c1", "maybe")
    with pytest.raises(ValueError, match="ask-default or accept-edits, not 'allow-all'"):
        agent.resolve_plan("c1", "approve", mode="allow-all")
    with pytest.raises(ValueError, match="needs text"):
        agent.resolve_plan("c1", "edit", text="  ")
    with pytest.raises(ValueError, match="is not a mode; use one of ask-default, accept-edits, plan"):
        agent.set_permission_mode("yolo")
    with pytest.raises(ValueError, match="permission: expected one of ask-default, accept-edits, plan, allow-all"):
        create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, permission="yolo")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_settings_choose_the_mode_an_untrusted_folder_only_tighter_managed_final(workspace, tmp_path, monkeypatch):
    write(workspace / ".smoke" / "config.yaml", "permission: plan\n")
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, trust_workspace=False)
    assert agent.permission_mode == "plan"  # tighter than ask-default: taken from an untrusted folder
    write(workspace / ".smoke" / "config.yaml", "permission: accept-edits\n")
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, trust_workspace=False)
    assert agent.permission_mode == "ask-default"  # looser: ignored until the folder is trusted
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, trust_workspace=True)
    assert agent.permission_mode == "accept-edits"
    managed = tmp_path / "managed.yaml"
    managed.write_text("permission: ask-default\n")
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, permission="plan")
    assert agent.permission_mode == "ask-default"
    with pytest.raises(ValueError, match="set by managed settings"):
        agent.set_permission_mode("plan")


# ---------------------------------------------------------------- /plan


class Chat:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.said: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(text)


def test_the_plan_command_turns_plan_mode_on_and_off(workspace):
    plan = next(c for c in BUILTIN_COMMANDS if c.name == "plan")
    agent, _, events = agent_for(workspace, [], permission="accept-edits")
    chat = Chat(agent)
    assert plan.handler("", chat) is None and agent.permission_mode == "plan"
    assert "plan mode on" in chat.said[-1]
    assert plan.handler("", chat) is None and "already on" in chat.said[-1]
    assert plan.handler("off", chat) is None and agent.permission_mode == "accept-edits"  # the mode before
    assert plan.handler("refactor the parser", chat) == "refactor the parser" and agent.permission_mode == "plan"
    assert [e.data["mode"] for e in events if e.type == "permission.mode_changed"] == ["plan", "accept-edits", "plan"]
