"""``todo_write``, ``ask_user`` and ``finish_task``."""

from __future__ import annotations

from typing import Any

from smoke_core.plugin import (
    ClaudeDialect,
    ToolAnnotations,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolPresentation,
    ToolResult,
)

STATUSES = ("pending", "in_progress", "completed", "cancelled")
#: ``ctx.state`` key holding the run's current todo list.
TODOS_KEY = "smoke_tools_agent.todos"
_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}


# ---------------------------------------------------------------- todo_write


def validate_todos(todos: Any) -> list[dict[str, str]]:
    """Check a todo list; return it normalised or raise :class:`ToolError` saying what to fix."""
    if not isinstance(todos, list):
        raise ToolError("todos must be a list of {content, status} items")
    clean: list[dict[str, str]] = []
    for i, item in enumerate(todos, 1):
        if not isinstance(item, dict):
            raise ToolError(f"todo {i} must be an object with content and status")
        content = item.get("content")
        status = item.get("status")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"todo {i} has empty content; describe the step in a few words")
        if status not in STATUSES:
            raise ToolError(
                f"todo {i} ({content.strip()!r}) has status {status!r}; use one of {', '.join(STATUSES)}"
            )
        clean.append({"content": content.strip(), "status": status})
    active = [t["content"] for t in clean if t["status"] == "in_progress"]
    if len(active) > 1:
        raise ToolError(
            f"{len(active)} todos are in_progress ({'; '.join(active)}); at most one may be in_progress. "
            f"Keep the one you are working on and mark the others pending or completed, then call todo_write again."
        )
    return clean


def checklist(todos: list[dict[str, str]]) -> str:
    done = sum(1 for t in todos if t["status"] == "completed")
    open_ = sum(1 for t in todos if t["status"] in ("pending", "in_progress"))
    lines = [f"Todos ({done}/{len(todos)} completed, {open_} open):"]
    lines += [f"{_MARK[t['status']]} {t['content']}" for t in todos]
    return "\n".join(lines)


def todo_write(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    todos = validate_todos(input.get("todos"))
    ctx.state[TODOS_KEY] = todos
    ctx.emit("todo.updated", {"tool_call_id": ctx.tool_call_id, "todos": [dict(t) for t in todos]})
    text = checklist(todos) if todos else "Todo list cleared."
    return ToolResult.text(text, data={"todos": todos})


# ---------------------------------------------------------------- ask_user


async def ask_user(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    question = input.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ToolError("question is empty; write the question for the user")
    options = input.get("options")
    if options is not None:
        options = [str(o).strip() for o in options if str(o).strip()]
        if not options:
            options = None
    multiple = bool(input.get("multiple")) and options is not None
    answer = await ctx.ask_user(question.strip(), options=options, multiple=multiple)
    answer = "" if answer is None else str(answer)
    if not answer.strip():
        return ToolResult.text("The user gave no answer (empty reply).", data={"answer": ""})
    return ToolResult.text(f"The user answered: {answer}", data={"answer": answer})


# ---------------------------------------------------------------- finish_task


def finish_task(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    summary = input.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ToolError(
            "summary is empty; say what was done (and anything left open) in a few sentences"
        )
    summary = summary.strip()
    ctx.finish(summary)
    text = "Task finished: the run ends after this step with your summary."
    todos = ctx.state.get(TODOS_KEY) or []
    open_items = [t["content"] for t in todos if t["status"] in ("pending", "in_progress")]
    if open_items:
        text += f" Note: {len(open_items)} todo(s) were still open: {'; '.join(open_items)}."
    return ToolResult.text(text, data={"summary": summary})


# ---------------------------------------------------------------- definitions

TODO_DESCRIPTION = """\
Replace the whole todo list; use it for tasks of 3+ steps. At most one todo in_progress; mark each completed as \
soon as it is done."""

ASK_DESCRIPTION = """\
Ask the user and wait for the answer, only when you cannot go on without their decision or information (not for \
permission or progress)."""

FINISH_DESCRIPTION = """\
End the run when the task is done or blocked. `summary` is the final answer: what was done, how it was checked, \
what is left open."""


def build_tools() -> list[ToolDefinition]:
    todo_item = {
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "minLength": 1,
            },
            "status": {"type": "string", "enum": list(STATUSES)},
        },
        "required": ["content", "status"],
        "additionalProperties": False,
    }
    return [
        ToolDefinition(
            name="todo_write",
            description=TODO_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": todo_item,
                    }
                },
                "required": ["todos"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(title="Todo list", read_only_hint=True, kind="think",
                                        claude=ClaudeDialect(name="TodoWrite", input={"todos": "todos"})),
            presentation=ToolPresentation(label="Todo list", icon="📝", tone="info", group="agent"),
            execute=todo_write,
            blocking=False,
            group="agent",
        ),
        ToolDefinition(
            name="ask_user",
            description=ASK_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "minLength": 1,
                    },
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Suggested answers.",
                    },
                    "multiple": {
                        "type": "boolean",
                        "description": "Allow several options.",
                    },
                },
                "required": ["question"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(title="Ask the user", read_only_hint=True, kind="other"),
            presentation=ToolPresentation(
                label="Ask the user", icon="❓", tone="info", group="agent"
            ),
            execute=ask_user,
            group="agent",
        ),
        ToolDefinition(
            name="finish_task",
            description=FINISH_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "summary": {
                        "type": "string",
                        "minLength": 1,
                    }
                },
                "required": ["summary"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(title="Finish task", read_only_hint=True, kind="other"),
            presentation=ToolPresentation(
                label="Finish task", icon="🏁", tone="success", group="agent"
            ),
            execute=finish_task,
            blocking=False,
            group="agent",
        ),
    ]
