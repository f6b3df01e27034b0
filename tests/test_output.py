"""Typed output: ``run(task, output_type=...)`` (issue 15)."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider


class Verdict(BaseModel):
    ok: bool
    score: int = Field(ge=0, le=10)
    notes: list[str] = []


def final(**input):
    return {"tool_calls": [{"name": "final_result", "input": input}]}


async def test_a_validated_object_after_one_invalid_attempt(workspace):
    provider = ScriptedProvider([final(ok=True, score=42), final(ok=True, score=7, notes=["fine"])])
    agent = create_agent(workspace, provider=provider)
    result = await agent.run("judge", output_type=Verdict)
    assert result.status == "completed", result.error
    assert result.output == Verdict(ok=True, score=7, notes=["fine"])
    # the first attempt went back to the model with the errors
    first = provider.requests[1].messages[-1]["content"][0]
    assert first["is_error"] is True
    assert "score" in first["content"][0]["text"] and "10" in first["content"][0]["text"]
    # the tool the model saw is the type's schema, without titles
    tool = next(t for t in provider.requests[0].tools if t["name"] == "final_result")
    assert tool["input_schema"]["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert result.text == '{"ok":true,"score":7,"notes":["fine"]}'


async def test_exhausting_the_retries_fails_with_output_invalid(workspace):
    provider = ScriptedProvider([final(ok="nope", score=1), "I think it is fine", final(score=3), "never"])
    agent = create_agent(workspace, provider=provider)
    result = await agent.run("judge", output_type=Verdict, output_retries=2)
    assert result.status == "failed"
    assert result.error.code == "output_invalid"
    assert result.error.details["attempts"] == 3
    assert result.output is None
    # the text answer was answered with a reminder to call final_result
    assert "final_result" in provider.requests[2].messages[-1]["content"][0]["text"]


async def test_simple_types_are_wrapped_and_dataclasses_and_typeddicts_work(workspace):
    agent = create_agent(workspace, provider=ScriptedProvider([final(response=[1, 2, 3])]))
    assert (await agent.run("count", output_type=list[int])).output == [1, 2, 3]

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    agent = create_agent(workspace, provider=ScriptedProvider([final(x=1, y=2)]))
    assert (await agent.run("where", output_type=Point)).output == Point(1, 2)

    class Row(TypedDict):
        name: str

    agent = create_agent(workspace, provider=ScriptedProvider([final(name="a")]))
    assert (await agent.run("row", output_type=Row)).output == {"name": "a"}


async def test_a_type_pydantic_cannot_express_is_refused_before_the_run(workspace):
    class Opaque:
        pass

    agent = create_agent(workspace, provider=ScriptedProvider(["x"]))
    with pytest.raises(TypeError, match="cannot be described as JSON Schema"):
        await agent.run("go", output_type=Opaque)
