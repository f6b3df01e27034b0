"""Typed output: ``agent.run(task, output_type=T)`` (issue 15).

The way pydantic-ai does it: the run exposes one more tool, ``final_result``,
whose input schema is ``T``'s JSON Schema (wrapped as ``{"response": ...}``
when ``T`` is not an object); the run ends when the model calls it with
arguments that validate. A failed validation goes back to the model with the
errors, and so does a plain-text answer; after ``output_retries`` such
failures the run fails with ``output_invalid``.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..base.errors import AgentErrorInfo, ToolError
from ..tools.decorator import tool_schema_generator
from ..tools.definitions import ToolAnnotations, ToolDefinition, ToolPresentation

FINAL_RESULT = "final_result"


class OutputSpec:
    """How to ask for, check and keep a run's typed output."""

    def __init__(self, output_type: Any, *, retries: int = 2) -> None:
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"output_retries must be a whole number ≥ 0, got {retries!r}")
        try:
            self.adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = self.adapter.json_schema(schema_generator=tool_schema_generator())
        except Exception as exc:  # pydantic cannot express the type
            raise TypeError(
                f"output_type={output_type!r} cannot be described as JSON Schema ({type(exc).__name__}: {exc}); "
                f"use a pydantic model, a dataclass, a TypedDict or a simple type"
            ) from None
        schema.pop("title", None)
        self.output_type = output_type
        self.retries = retries
        self.wrapped = schema.get("type") != "object" or "properties" not in schema
        if self.wrapped:
            defs = schema.pop("$defs", None)
            schema = {"type": "object", "properties": {"response": schema}, "required": ["response"],
                      "additionalProperties": False, **({"$defs": defs} if defs else {})}
        self.schema = schema
        self.failures = 0
        self.value: Any = None
        self.done = False

    def tool(self) -> ToolDefinition:
        name = getattr(self.output_type, "__name__", None) or str(self.output_type)

        def final_result(input: dict[str, Any], ctx: Any) -> str:
            raw = input.get("response") if self.wrapped else input
            try:
                value = self.adapter.validate_python(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'/'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
                    for err in exc.errors(include_url=False)
                )
                raise ToolError(
                    f"the result does not match the required type {name}: {problems}. "
                    f"Call {FINAL_RESULT} again with a corrected result.",
                    code="tool_invalid_input",
                ) from None
            self.value = value
            self.done = True
            ctx.finish(self.adapter.dump_json(value).decode())
            return "result accepted"

        return ToolDefinition(
            name=FINAL_RESULT,
            description=(
                f"Give the final result of the task as {name}. Call this exactly once, when the task is done; "
                f"the run ends when the result is valid."
            ),
            input_schema=self.schema,
            annotations=ToolAnnotations(title="Final result", read_only_hint=True, kind="other"),
            presentation=ToolPresentation(label="Final result", icon="🎯", tone="success"),
            execute=final_result,
            blocking=False,
            group="agent",
        )

    def failed(self, reason: str) -> AgentErrorInfo | None:
        """Count one failed attempt; the ``output_invalid`` error once the retries are spent."""
        self.failures += 1
        if self.failures > self.retries:
            return AgentErrorInfo.from_code(
                "output_invalid",
                f"the model did not give a valid {getattr(self.output_type, '__name__', self.output_type)} "
                f"after {self.failures} attempts: {reason}",
                details={"attempts": self.failures, "last_error": reason},
            )
        return None
