"""``@tool`` on pydantic: the schema is pydantic's, arguments arrive converted."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider
from smoke_core.tools.decorator import tool_input_schema


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Box(BaseModel):
    width: int
    height: int = 1


@dataclasses.dataclass
class Point:
    x: float
    y: float


received: dict[str, object] = {}


@tool(read_only=True)
def paint(
    path: Path,
    colour: Colour,
    mode: Literal["fill", "stroke"],
    box: Box,
    point: Point,
    times: Annotated[int, Field(ge=1, le=5, description="How many coats")] = 1,
    note: str | None = None,
) -> str:
    """Paint a shape.

    :param path: where the picture is
    :param mode: how to paint
    """
    received.update(path=path, colour=colour, mode=mode, box=box, point=point, times=times, note=note)
    return "painted"


def test_the_schema_is_the_one_pydantic_produces():
    model = create_model(
        "paint_input",
        __config__=ConfigDict(extra="forbid"),
        path=(Annotated[Path, Field(description="where the picture is")], ...),
        colour=(Colour, ...),
        mode=(Annotated[Literal["fill", "stroke"], Field(description="how to paint")], ...),
        box=(Box, ...),
        point=(Point, ...),
        times=(Annotated[int, Field(ge=1, le=5, description="How many coats")], 1),
        note=(str | None, None),
    )
    assert paint.input_schema == tool_input_schema(model)
    props = paint.input_schema["properties"]
    assert props["path"] == {"type": "string", "format": "path", "description": "where the picture is"}
    assert props["times"] == {"type": "integer", "minimum": 1, "maximum": 5, "default": 1, "description": "How many coats"}
    assert props["mode"]["enum"] == ["fill", "stroke"]
    assert paint.input_schema["$defs"]["Colour"]["enum"] == ["red", "blue"]
    assert set(paint.input_schema["required"]) == {"path", "colour", "mode", "box", "point"}
    assert paint.input_schema["additionalProperties"] is False
    # the docstring's parameter lines went into the schema, not the description
    assert paint.description == "Paint a shape."


async def test_arguments_are_converted_to_the_annotated_types(workspace):
    args = {"path": "pics/a.png", "colour": "blue", "mode": "fill", "box": {"width": 3},
            "point": {"x": 1, "y": 2.5}, "times": 2}
    provider = ScriptedProvider([{"tool_calls": [{"name": "paint", "input": args}]}, "done"])
    agent = create_agent(workspace, provider=provider, tools=[paint])
    result = await agent.run("go")
    assert result.status == "completed"
    assert received["path"] == Path("pics/a.png") and isinstance(received["path"], Path)
    assert received["colour"] is Colour.BLUE
    assert received["box"] == Box(width=3, height=1)
    assert received["point"] == Point(1.0, 2.5)
    assert received["times"] == 2 and received["note"] is None


async def test_bounds_are_checked_and_named_to_the_model(workspace):
    bad = {"path": "a", "colour": "green", "mode": "fill", "box": {"width": 1}, "point": {"x": 0, "y": 0},
           "times": 9}
    provider = ScriptedProvider([{"tool_calls": [{"name": "paint", "input": bad}]}, "done"])
    agent = create_agent(workspace, provider=provider, tools=[paint])
    completed = []
    agent.on("tool.completed", completed.append)
    await agent.run("go")
    (event,) = completed
    assert event.data["is_error"] and event.data["error"]["code"] == "tool_invalid_input"
    text = event.data["content"][0]["text"]
    assert "invalid arguments for paint" in text and ("times" in text or "colour" in text)


def test_google_style_args_section():
    @tool
    def move(src: str, dst: str) -> str:
        """Move a file.

        Args:
            src: the file to move
            dst: where it goes,
                relative to the workspace
        """
        return "ok"

    assert move.description == "Move a file."
    assert move.input_schema["properties"]["dst"]["description"] == "where it goes, relative to the workspace"


def test_a_type_pydantic_cannot_express_is_a_clear_error():
    class Opaque:
        pass

    with pytest.raises(TypeError, match=r"@tool bad: the parameters cannot be described as JSON Schema"):
        @tool
        def bad(thing: Opaque) -> str:
            """Nope."""
            return ""


def test_tool_result_text_is_what_model_construct_builds():
    from smoke_core import ToolResult

    fast = ToolResult.text("ok", is_error=1, data={"a": 1})  # type: ignore[arg-type]
    slow = ToolResult.model_construct(
        content=[{"type": "text", "text": "ok"}], is_error=True, data={"a": 1}, presentation=None
    )
    assert fast == slow and repr(fast) == repr(slow)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_fields_set is not ToolResult.text("x").model_fields_set
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_copy(update={"is_error": False}).is_error is False

    class Tagged(ToolResult):
        tag: str = "t"

    assert Tagged.text("ok").tag == "t"  # a subclass still gets its defaults
