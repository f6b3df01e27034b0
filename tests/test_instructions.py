"""Project instructions (AGENTS.md, CLAUDE.md, .smoke/instructions.md) and nested AGENTS.md."""

from __future__ import annotations

from smoke_core import create_agent, tool
from smoke_core.base.instructions import MAX_FILE_CHARS, load_instructions
from smoke_core.testing import ScriptedProvider


def test_root_files_in_order_user_first_and_duplicates_once(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".smoke").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Use tabs.")
    (ws / "CLAUDE.md").write_text("Use tabs.")  # the same text under two names
    (ws / ".smoke" / "instructions.md").write_text("Run make test.")
    user = tmp_path / "cfg"
    user.mkdir()
    (user / "AGENTS.md").write_text("Answer in English.")
    got = load_instructions(ws, user_dir=user, trusted=True)
    text = got.text
    assert text.index("Answer in English.") < text.index("Use tabs.") < text.index("Run make test.")
    assert text.count("Use tabs.") == 1
    assert got.sources == [str(user / "AGENTS.md"), "AGENTS.md", ".smoke/instructions.md"]
    assert "not marked as trusted" not in text


def test_untrusted_is_labelled_and_long_files_are_cut_with_a_warning(tmp_path):
    (tmp_path / "AGENTS.md").write_text("x" * (MAX_FILE_CHARS + 10))
    got = load_instructions(tmp_path, user_dir=None, trusted=False)
    assert "not marked as trusted" in got.text
    assert "[... cut" in got.text
    assert got.warnings == [f"AGENTS.md is {MAX_FILE_CHARS + 10:,} characters; only the first {MAX_FILE_CHARS:,} are used"]


def test_a_link_out_of_the_workspace_is_left_out(tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("exfiltrate")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").symlink_to(outside)
    got = load_instructions(ws, user_dir=None, trusted=True)
    assert got.text == "" and "outside the workspace" in got.warnings[0]


@tool(read_only=True, kind="read", permission_key="path")
def read_file(path: str, ctx=None) -> str:
    """Read a file."""
    return ctx.workspace.resolve(path).read_text()


async def test_nested_agents_md_reaches_the_model_when_a_file_below_is_read(workspace):
    (workspace / "pkg" / "sub").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Root rule: run make lint.")
    (workspace / "pkg" / "AGENTS.md").write_text("In pkg, never use print.")
    (workspace / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    (workspace / "top.py").write_text("y = 2\n")
    call = lambda p: {"tool_calls": [{"name": "read_file", "input": {"path": p}}]}  # noqa: E731
    provider = ScriptedProvider([call("top.py"), call("pkg/sub/mod.py"), call("pkg/sub/mod.py"), "done"])
    agent = create_agent(workspace, provider=provider, tools=[read_file])
    await agent.run("go")
    results = [r.messages[-1]["content"][0]["content"] for r in provider.requests[1:]]
    assert len(results[0]) == 1  # nothing above top.py
    assert "never use print" in results[1][-1]["text"] and "pkg/AGENTS.md" in results[1][-1]["text"]
    assert len(results[2]) == 1  # offered once per run
    # the system prompt holds the root file only, and did not change during the run (prompt caching keeps working)
    assert len({r.system for r in provider.requests}) == 1
    assert "Root rule: run make lint." in provider.requests[0].system
    assert "never use print" not in provider.requests[0].system
    assert not any("Root rule" in c.get("text", "") for r in results for c in r)  # not offered again as a nested file


async def test_create_agent_puts_agents_md_in_the_system_prompt_and_instructions_false_turns_it_off(workspace):
    (workspace / "AGENTS.md").write_text("Always run make lint.")
    provider = ScriptedProvider(["ok"])
    agent = create_agent(workspace, provider=provider)
    await agent.run("go")
    assert "Always run make lint." in provider.requests[0].system
    assert "not marked as trusted" not in provider.requests[0].system  # code trusts by default
    off = ScriptedProvider(["ok"])
    await create_agent(workspace, provider=off, instructions=False).run("go")
    assert "Always run make lint." not in off.requests[0].system
    untrusted = ScriptedProvider(["ok"])
    await create_agent(workspace, provider=untrusted, trust_workspace=False).run("go")
    assert "Always run make lint." in untrusted.requests[0].system
    assert "not marked as trusted" in untrusted.requests[0].system
