"""``@tool``: a typed Python function becomes a :class:`~smoke_core.plugin.ToolDefinition`
whose input schema is pydantic's and whose arguments arrive converted."""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from ..base.errors import ToolError
from .definitions import ToolAnnotations, ToolDefinition, ToolKind, ToolPresentation

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["tool", "tool_input_schema", "tool_schema_generator"]


_PARAM_LINE = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params):\s*$")
_GOOGLE_ARG = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """``(description, {param: text})`` from a docstring: Sphinx ``:param x:``
    lines and Google-style ``Args:`` sections become parameter descriptions
    (and leave the description, which the model reads once per request)."""
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    kept: list[str] = []
    current: str | None = None
    in_section = False
    for line in lines:
        m = _PARAM_LINE.match(line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
            continue
        if _SECTION.match(line):
            in_section, current = True, None
            continue
        if in_section:
            g = _GOOGLE_ARG.match(line)
            if g:
                current = g.group(1).lstrip("*")
                params[current] = g.group(2).strip()
                continue
            if line.strip() and line.startswith((" ", "\t")) and current:
                params[current] += " " + line.strip()
                continue
            if not line.strip():
                continue
            in_section = False
        elif current and line.startswith((" ", "\t")) and line.strip():
            params[current] += " " + line.strip()
            continue
        current = None
        kept.append(line)
    return "\n".join(kept).strip(), params


def _described(annotation: Any, description: str) -> Any:
    """``annotation`` with ``description``, unless a ``Field`` in it already has one."""
    if typing.get_origin(annotation) is Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, FieldInfo) and meta.description:
                return annotation
    return Annotated[annotation, Field(description=description)]


def tool_schema_generator() -> type[Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class ToolJsonSchema(GenerateJsonSchema):
        """pydantic's schema without per-field titles (``"title": "Path"`` repeats
        the property name and costs tokens on every request), as pydantic-ai does."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return ToolJsonSchema


def tool_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The input schema ``@tool`` derives from a parameters model: pydantic's
    JSON Schema without titles."""
    schema = model.model_json_schema(schema_generator=tool_schema_generator())
    schema.pop("title", None)
    return schema


@typing.overload
def tool(fn: Callable[..., Any], /) -> ToolDefinition: ...


@typing.overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    presentation: dict[str, Any] | ToolPresentation | None = None,
    group: str | None = None,
    kind: ToolKind | None = None,
    destructive: bool | None = None,
    open_world: bool | None = None,
    permission_key: str | None = None,
) -> Callable[[Callable[..., Any]], ToolDefinition]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    presentation: dict[str, Any] | ToolPresentation | None = None,
    group: str | None = None,
    kind: ToolKind | None = None,
    destructive: bool | None = None,
    open_world: bool | None = None,
    permission_key: str | None = None,
) -> ToolDefinition | Callable[[Callable[..., Any]], ToolDefinition]:
    """Turn a typed function into a :class:`ToolDefinition`.

    The parameters become a pydantic model: its JSON Schema is the tool's
    input schema (``Path``, ``Enum``, ``Literal``, dataclasses, models,
    ``Annotated[int, Field(ge=1, description=...)]`` — whatever pydantic
    accepts), and the model's arguments are validated and **converted** to
    the annotated types before the function is called. Parameter
    descriptions come from ``Field(description=...)`` or from the docstring
    (``:param name:`` lines or a Google-style ``Args:`` section); the rest of
    the docstring is the tool's description. A parameter named ``ctx``
    receives the :class:`ToolContext`. The function may be async and may
    return a string or a :class:`ToolResult`::

        @tool(read_only=True, kind="read")
        def word_count(text: str, minimum: Annotated[int, Field(ge=1)] = 1) -> str:
            \"\"\"Count the words in text.

            :param text: the text to count in
            \"\"\"
            return str(len(text.split()))
    """

    # Annotations may name things local to the caller (string annotations
    # under `from __future__ import annotations`); resolve them there too.
    caller_locals = dict(sys._getframe(1).f_locals)

    def wrap(func: Callable[..., Any]) -> ToolDefinition:
        from pydantic import ValidationError, create_model

        sig = inspect.signature(func)
        try:
            hints = typing.get_type_hints(func, localns=caller_locals, include_extras=True)
        except NameError as exc:
            raise TypeError(f"@tool {func.__name__}: cannot resolve an annotation ({exc})") from None
        doc_text, param_docs = _split_docstring(func.__doc__ or "")
        fields: dict[str, Any] = {}
        wants_ctx = False
        for pname, param in sig.parameters.items():
            if pname == "ctx":
                wants_ctx = True
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool {func.__name__}: *args/**kwargs cannot be described to a model")
            annotation = hints.get(pname, Any)
            if pname in param_docs:
                annotation = _described(annotation, param_docs[pname])
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        tool_name = name or func.__name__
        try:
            model = create_model(
                f"{tool_name}_input", __config__=ConfigDict(extra="forbid"), **fields
            )
            schema = tool_input_schema(model)
        except Exception as exc:  # pydantic cannot express a parameter's type
            raise TypeError(
                f"@tool {func.__name__}: the parameters cannot be described as JSON Schema "
                f"({type(exc).__name__}: {exc}); use types pydantic supports"
            ) from None
        names = tuple(fields)

        def arguments(input: dict[str, Any]) -> dict[str, Any]:
            try:
                parsed = model.model_validate(input)
            except ValidationError as exc:
                problems = "; ".join(
                    f"field '{'/'.join(str(p) for p in err['loc'])}': {err['msg']}" if err["loc"] else err["msg"]
                    for err in exc.errors(include_url=False)
                )
                raise ToolError(f"invalid arguments for {tool_name}: {problems}", code="tool_invalid_input") from None
            return {n: getattr(parsed, n) for n in names}

        if inspect.iscoroutinefunction(func):
            async def execute(input: dict[str, Any], ctx: ToolContext) -> Any:
                return await func(**arguments(input), **({"ctx": ctx} if wants_ctx else {}))
        else:
            def execute(input: dict[str, Any], ctx: ToolContext) -> Any:  # type: ignore[misc]
                return func(**arguments(input), **({"ctx": ctx} if wants_ctx else {}))

        return ToolDefinition(
            name=tool_name,
            description=description or doc_text or func.__name__,
            input_schema=schema,
            annotations=ToolAnnotations(
                read_only_hint=read_only, kind=kind, destructive_hint=destructive, open_world_hint=open_world
            ),
            presentation=ToolPresentation.model_validate(presentation or {})
            if not isinstance(presentation, ToolPresentation)
            else presentation,
            execute=execute,
            group=group,
            permission_key=permission_key,
        )

    return wrap(fn) if fn is not None else wrap
