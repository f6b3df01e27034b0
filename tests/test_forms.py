"""Forms a person fills in (smoke_core.base.forms), the ask_user pause with a
form, and the plugin API that MCP's elicitation and sampling use
(RunHandle.ask_user, RunHandle.sample, request_permission(person=True))."""

from __future__ import annotations

from typing import Any

import pytest

from smoke_core import create_agent, hookimpl, tool
from smoke_core.base.forms import FormError, check_form, form_fields, parse_field
from smoke_core.batch.task import NO_ANSWER
from smoke_core.plugin import ToolContext
from smoke_core.run.handle import form_answer
from smoke_core.testing import ScriptedProvider

PIZZA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "size": {"type": "string", "enum": ["small", "large"], "default": "large"},
        "slices": {"type": "integer", "minimum": 4, "maximum": 12, "default": 8},
        "cheese": {"type": "boolean", "default": False},
        "score": {"type": "number", "default": 9.5},
        "mail": {"type": "string", "format": "email"},
        "toppings": {"type": "array", "items": {"anyOf": [{"const": "olive", "title": "Olives"},
                                                          {"const": "ham", "title": "Ham"}]}},
        "status": {"type": "string", "oneOf": [{"const": "a", "title": "Active"}, {"const": "i", "title": "Idle"}]},
    },
    "required": ["name"],
}


def test_the_fields_of_a_form() -> None:
    fields = {f.name: f for f in form_fields(PIZZA)}
    assert [f.kind for f in fields.values()] == ["text", "choice", "integer", "boolean", "number", "text", "choices",
                                                  "choice"]
    assert fields["name"].required and not fields["size"].required
    assert fields["size"].choices == (("small", "small"), ("large", "large")) and fields["size"].default == "large"
    assert fields["toppings"].choices == (("olive", "Olives"), ("ham", "Ham"))
    assert fields["status"].to_dict()["choices"] == [{"value": "a", "label": "Active"}, {"value": "i", "label": "Idle"}]
    assert (fields["slices"].minimum, fields["slices"].maximum) == (4, 12)


@pytest.mark.parametrize(("schema", "needle"), [
    ({"type": "object", "properties": {"a": {"type": "object"}}}, "field 'a' is of type 'object'"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}, "uses $ref"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}, "a list of choices"),
    ({"type": "object", "properties": {}, "required": ["b"]}, "requires 'b', which it does not define"),
    ({"type": "array"}, "must be of type object"),
    ({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}, "format 'ipv4'"),
    ("not a schema", "must be a JSON Schema object"),
])
def test_a_form_that_cannot_be_shown_says_which_field(schema: Any, needle: str) -> None:
    with pytest.raises(FormError) as exc:
        form_fields(schema)
    assert needle in str(exc.value)


def test_an_answer_gets_the_defaults_and_is_checked_field_by_field() -> None:
    assert check_form(PIZZA, {"name": "Ann"}) == {"name": "Ann", "size": "large", "slices": 8, "cheese": False,
                                                  "score": 9.5}
    assert check_form(PIZZA, {"name": "Bo", "slices": 6.0, "toppings": ["ham"]})["slices"] == 6
    with pytest.raises(FormError) as exc:
        check_form(PIZZA, {"slices": 20, "size": "huge", "mail": "nope", "extra": 1, "toppings": ["tuna"]})
    message = str(exc.value)
    for needle in ("the form has no field 'extra'", "'Name' is required", "'slices' must be at most 12",
                   "'size' must be one of 'small', 'large'", "'mail' must be an email address",
                   "'toppings' must be a list of 'olive', 'ham'"):
        assert needle in message


def test_what_a_person_types_becomes_a_value() -> None:
    fields = {f.name: f for f in form_fields(PIZZA)}
    assert parse_field(fields["cheese"], "yes") is True and parse_field(fields["cheese"], "n") is False
    assert parse_field(fields["slices"], "6") == 6 and parse_field(fields["score"], "2.5") == 2.5
    assert parse_field(fields["size"], "1") == "small" and parse_field(fields["size"], "large") == "large"
    assert parse_field(fields["toppings"], "1, Ham") == ["olive", "ham"]
    assert parse_field(fields["name"], "  ") is None  # left empty: the default, or nothing
    for f, text in ((fields["slices"], "6.5"), (fields["cheese"], "maybe"), (fields["size"], "9")):
        with pytest.raises(FormError):
            parse_field(f, text)


def test_an_answer_that_is_not_a_form_answer_declines() -> None:
    assert form_answer(PIZZA, NO_ANSWER) == (None, None)  # a batch run: nobody there
    assert form_answer(PIZZA, '{"action": "decline"}') == (None, None)
    assert form_answer(PIZZA, '{"name": "Cy"}')[0] == check_form(PIZZA, {"name": "Cy"})
    values, problem = form_answer(PIZZA, '{"action": "accept", "content": {"slices": 99}}')
    assert values is None and problem is not None and "'Name' is required" in problem


@tool(read_only=True)
async def order(ctx: ToolContext) -> str:
    """Ask the person for a pizza order."""
    values = await ctx.ask_user("Which pizza?", form=PIZZA)
    return "declined" if values is None else f"{values['name']}: {values['size']}, {values['slices']}"


async def test_a_tool_asks_with_a_form_and_gets_checked_values(tmp_path: Any) -> None:
    agent = create_agent(tmp_path, provider=ScriptedProvider([{"tool_calls": [{"name": "order", "input": {}}]}, "ok"]),
                         autoload_plugins=False, plugins=[], tools=[order])
    events: list[Any] = []
    agent.on_any(events.append)

    def answer(event: Any) -> None:
        with pytest.raises(FormError):
            agent.respond_form(event.data["tool_call_id"], {"name": "Ann", "slices": 1})
        agent.respond_form(event.data["tool_call_id"], {"name": "Ann"})

    agent.on("ask_user.required", answer)
    result = await agent.run("order")
    assert result.status == "completed"
    asked = next(e.data for e in events if e.type == "ask_user.required")
    assert asked["form"] == PIZZA and asked["options"] is None
    done = next(e.data for e in events if e.type == "tool.completed")
    assert done["content"][0]["text"] == "Ann: large, 8"
    response = next(e.data for e in events if e.type == "ask_user.response")
    assert response["action"] == "accept"

    # a batch run answers every question with NO_ANSWER: a form is declined, never filled in
    batch = create_agent(tmp_path, provider=ScriptedProvider([{"tool_calls": [{"name": "order", "input": {}}]}, "ok"]),
                         autoload_plugins=False, plugins=[], tools=[order])
    seen: list[Any] = []
    batch.on("tool.completed", seen.append)
    batch.on("ask_user.required", lambda e: batch.respond(e.data["tool_call_id"], NO_ANSWER))
    await batch.run("order")
    assert seen[0].data["content"][0]["text"] == "declined"


class PersonOnly:
    """A plugin asking for something only a person may allow, and calling the model for itself."""

    def __init__(self) -> None:
        self.allowed: list[bool] = []
        self.sampled: list[str] = []

    @hookimpl
    async def before_run(self, run: Any) -> None:
        self.allowed.append(await run.request_permission(kind="service", name="db", person=True))
        reply, _ = await run.sample([{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                                    system="be brief", settings={"max_tokens": 5})
        self.sampled.append("".join(b.get("text", "") for b in reply["content"] if b["type"] == "text"))
        answer = await run.ask_user("Proceed?", options=["yes", "no"])
        self.sampled.append(answer)


async def test_person_only_permission_a_sample_and_a_plugins_question(tmp_path: Any) -> None:
    plugin = PersonOnly()
    provider = ScriptedProvider(["sampled text", "final"])
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[plugin], permission="allow-all",
                         auto_approve=True)
    events: list[Any] = []
    agent.on_any(events.append)
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "deny"))
    agent.on("ask_user.required", lambda e: agent.respond(e.data["tool_call_id"], "yes"))
    result = await agent.run("go")
    # allow-all and --yes would allow it; person=True asked, and the person said no
    assert [e.data["kind"] for e in events if e.type == "permission.required"] == ["service"]
    assert plugin.allowed == [False]
    assert plugin.sampled == ["sampled text", "yes"]
    assert provider.requests[0].system == "be brief" and provider.requests[0].tools == []
    assert provider.requests[0].settings["max_tokens"] == 5
    assert all(e.data["text"] != "sampled text" for e in events if e.type == "text.delta")
    assert result.text == "final" and result.usage.total_tokens > 0
    asked = next(e.data for e in events if e.type == "ask_user.required")
    assert asked["tool_call_id"].startswith("ask_") and "form" not in asked
