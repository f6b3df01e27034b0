"""The list_skills / use_skill tools, in a real agent run and called directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import smoke_skills

from smoke_core import ToolContext, ToolResult, create_agent, hookimpl, tool
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
PDF_BODY = (
    (FIXTURES / "pdf_processing" / "SKILL.md")
    .read_text(encoding="utf-8")
    .split("---\n", 2)[2]
    .strip("\n")
)
PDF_INSTRUCTIONS = f"## Skill: PDF Processing Tools\n\n{PDF_BODY}"


@tool(name="read_text", read_only=True)
def read_text(path: str, ctx: ToolContext) -> str:
    """Read a text file (test helper; goes through the workspace sandbox)."""
    return ctx.workspace.resolve(path).read_text(encoding="utf-8")


class ReadTextPlugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(read_text, group="filesystem")


def tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m["role"] == "tool":
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    text = "".join(
                        c.get("text", "") for c in block["content"] if c.get("type") == "text"
                    )
                    out[block["tool_call_id"]] = {"text": text, "is_error": block["is_error"]}
    return out


def make_agent(workspace: Path, provider: ScriptedProvider, **options: Any) -> Any:
    options.setdefault("skills_dir", FIXTURES)
    return create_agent(
        workspace,
        provider=provider,
        autoload_plugins=False,
        plugins=[smoke_skills, ReadTextPlugin()],
        **options,
    )


async def test_list_then_use_skill_injects_the_body_once_and_opens_its_folder(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the model")
    reference = FIXTURES / "pdf_processing" / "reference.md"
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"id": "list", "name": "list_skills", "input": {}},
                    {"id": "early_read", "name": "read_text", "input": {"path": str(reference)}},
                ]
            },
            {
                "tool_calls": [
                    {"id": "use", "name": "use_skill", "input": {"skill_id": "pdf_processing"}}
                ]
            },
            {
                "tool_calls": [
                    {"id": "read_ref", "name": "read_text", "input": {"path": str(reference)}},
                    {"id": "read_secret", "name": "read_text", "input": {"path": str(secret)}},
                ]
            },
            {
                "tool_calls": [
                    {
                        "id": "use_again",
                        "name": "use_skill",
                        "input": {"skill_id": "PDF Processing Tools"},
                    }
                ]
            },
            "done",
        ]
    )
    agent = make_agent(ws, provider)
    result = await agent.run("fill the PDF form")
    assert result.status == "completed", result.error
    assert result.text == "done"
    assert len(provider.requests) == 5

    # The system prompt never changes (what a provider caches stays valid) ...
    assert len({request.system for request in provider.requests}) == 1
    # ... before use_skill the body is nowhere in the conversation ...
    for request in provider.requests[:2]:
        assert PDF_BODY not in str(request.messages)
    # ... from the next request on it is there exactly once, as a message, for the rest of the run.
    for request in provider.requests[2:]:
        text = "\n".join(b.get("text", "") for m in request.messages for b in m["content"])
        assert text.count(PDF_INSTRUCTIONS) == 1
        assert text.count("## Skill: PDF Processing Tools") == 1

    results = tool_results(result.messages)
    listing = results["list"]["text"]
    assert not results["list"]["is_error"]
    assert "- pdf_processing: Extract text and tables from PDF files" in listing
    assert "- curated-skill: A skill inside a dot-folder." in listing
    assert "user-only" not in listing  # disable-model-invocation hides it
    assert "broken-yaml" not in listing

    # The skill folder is closed until the skill is used.
    assert results["early_read"]["is_error"]
    assert "outside the workspace" in results["early_read"]["text"]

    used = results["use"]["text"]
    assert not results["use"]["is_error"]
    assert "is loaded" in used
    assert f"Skill folder (read-only): {FIXTURES / 'pdf_processing'}" in used
    assert str(reference) in used
    assert str(FIXTURES / "pdf_processing" / "scripts" / "fill_form.py") in used
    assert "Read, Bash(python:*), Write" in used

    assert not results["read_ref"]["is_error"]
    assert results["read_ref"]["text"] == reference.read_text(encoding="utf-8")
    assert results["read_secret"]["is_error"]
    assert "outside the workspace" in results["read_secret"]["text"]
    assert "not for the model" not in results["read_secret"]["text"]

    assert not results["use_again"]["is_error"]
    assert "already loaded" in results["use_again"]["text"]


async def test_unknown_and_hidden_skills_are_tool_errors(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"id": "typo", "name": "use_skill", "input": {"skill_id": "pdf-procesing"}},
                    {"id": "nothing_close", "name": "use_skill", "input": {"skill_id": "zzzz"}},
                    {"id": "hidden", "name": "use_skill", "input": {"skill_id": "user-only"}},
                ]
            },
            "ok",
        ]
    )
    agent = make_agent(tmp_path, provider)
    result = await agent.run("go")
    assert result.status == "completed"
    results = tool_results(result.messages)
    assert results["typo"]["is_error"]
    assert "unknown skill 'pdf-procesing'; closest ids: pdf_processing" in results["typo"]["text"]
    assert results["nothing_close"]["is_error"]
    assert "available ids:" in results["nothing_close"]["text"]
    assert "user-only" not in results["nothing_close"]["text"]
    assert results["hidden"]["is_error"]
    assert "disable-model-invocation" in results["hidden"]["text"]
    # Nothing was injected.
    assert "## Skill:" not in str(provider.requests[-1].messages)


def test_tools_are_registered_read_only_in_the_skills_group(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, ScriptedProvider())
    for name in ("list_skills", "use_skill"):
        definition = agent.tools[name]
        assert definition.group == "skills"
        assert definition.annotations.read_only_hint is True
        presentation = agent.get_tool_presentations()[name]
        assert presentation["group"] == "skills"
        assert presentation["icon"] and presentation["label"] and presentation["tone"] == "info"
    description = agent.tools["use_skill"].description
    assert "pdf_processing" in description and "user-only" not in description
    assert agent.tools["use_skill"].validate_input({}) is not None  # skill_id is required


def call(agent: Any, name: str, ctx: ToolContext, **input: Any) -> ToolResult:
    result = agent.tools[name].execute(input, ctx)
    assert isinstance(result, ToolResult)
    return result


def test_flat_file_skill_opens_only_its_own_file(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, ScriptedProvider())
    ctx = make_tool_context(tmp_path, tool_name="use_skill")
    result = call(agent, "use_skill", ctx, skill_id="flat-skill")
    assert "single file" in result.text_content()
    assert ctx.test_instructions == ["## Skill: Flat Skill\n\nFlat body."]  # type: ignore[attr-defined]
    assert (
        ctx.workspace.resolve(FIXTURES / "flat-skill.md") == (FIXTURES / "flat-skill.md").resolve()
    )
    with pytest.raises(ToolError, match="outside the workspace"):
        ctx.workspace.resolve(FIXTURES / "user-only" / "SKILL.md")
    assert result.data is not None and result.data["folder"] is None


def test_no_skills_found(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    agent = make_agent(tmp_path, ScriptedProvider(), skills_dir=[empty])
    ctx = make_tool_context(tmp_path, tool_name="list_skills")
    assert call(agent, "list_skills", ctx).text_content() == "No skills are available."
    with pytest.raises(ToolError, match="no skills are available"):
        call(agent, "use_skill", ctx, skill_id="anything")


def test_skills_option_takes_loaded_skills(tmp_path: Path) -> None:
    loaded = smoke_skills.load_skills_from_dirs(FIXTURES / "crlf-skill")
    agent = create_agent(
        tmp_path,
        provider=ScriptedProvider(),
        autoload_plugins=False,
        plugins=[smoke_skills],
        skills=loaded,
    )
    ctx = make_tool_context(tmp_path, tool_name="list_skills")
    assert call(agent, "list_skills", ctx).text_content().splitlines()[0] == (
        "- crlf-skill: A skill saved with Windows line ends."
    )


def test_bad_skills_option_stops_create_agent_with_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"skills= takes smoke_skills\.Skill"):
        create_agent(
            tmp_path,
            provider=ScriptedProvider(),
            autoload_plugins=False,
            plugins=[smoke_skills],
            skills=["pdf"],
        )
