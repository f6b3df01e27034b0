"""The default system prompt names only the tools a run exposes (issue 32,
flaw 7): a small model takes the prompt at its word and calls ``finish_task``
or ``grep`` when they are not there."""

from __future__ import annotations

from smoke_core import create_agent, tool
from smoke_core.base.prompts import DEFAULT_SYSTEM_PROMPT, system_prompt_for, tailor_system_prompt
from smoke_core.testing import ScriptedProvider

EVERY_TOOL_NAMED = {"list_directory", "glob", "grep", "read_file", "edit_file", "apply_patch", "run_command",
                    "ask_user", "finish_task"}


def test_with_every_tool_it_is_the_default_prompt_word_for_word() -> None:
    assert system_prompt_for(EVERY_TOOL_NAMED) == DEFAULT_SYSTEM_PROMPT


def test_each_line_keeps_only_the_exposed_tools() -> None:
    prompt = system_prompt_for({"read_file", "write_file", "run_command"})
    for absent in ("finish_task", "ask_user", "glob", "grep", "edit_file", "apply_patch", "list,"):
        assert absent not in prompt, absent
    assert "- Understand first: read the relevant files" in prompt
    assert "say so in a reply without a tool call" in prompt
    bare = system_prompt_for(set())
    assert "Understand first" not in bare and "Verify" not in bare and "Make the smallest" not in bare


def test_a_programmers_prompt_is_left_alone_and_instructions_after_the_default_stay() -> None:
    assert tailor_system_prompt("You are a pirate.", set()) == "You are a pirate."
    extended = DEFAULT_SYSTEM_PROMPT + "\n\nProject rules: be brief."
    assert tailor_system_prompt(extended, {"read_file"}).endswith("\n\nProject rules: be brief.")
    assert tailor_system_prompt(None, set()) is None


async def test_a_run_sends_the_prompt_of_its_tools(workspace) -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "x"

    provider = ScriptedProvider(["done"])
    agent = create_agent(workspace, provider=provider, tools=[read_file], autoload_plugins=False,
                         instructions="Always answer in English.")
    result = await agent.run("hi")
    assert result.status == "completed"
    system = provider.requests[0].system or ""
    assert "finish_task" not in system and "grep" not in system and "ask_user" not in system
    assert system.endswith("Always answer in English.")
