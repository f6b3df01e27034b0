"""The tool contract (DESIGN §3): definitions, results, the ``@tool``
decorator, the registry and the group constants."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

if TYPE_CHECKING:
    from .context import ToolContext

Tone = Literal["info", "success", "warning", "error"]

# ---------------------------------------------------------------- constants

#: Known tool groups. ``core`` is the default set a host gets when it asks for it.
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "filesystem": (
        "read_file", "list_directory", "write_file", "edit_file", "apply_patch",
        "delete_file", "replace_lines",
    ),
    "search": ("glob", "grep"),
    "terminal": ("run_command", "run_test"),
    "git": ("git_status", "git_diff", "git_log", "git_show", "git_add", "git_commit"),
    "agent": ("todo_write", "ask_user", "finish_task"),
    "mcp": (),
    "skills": ("list_skills", "use_skill"),
    "web": ("web_fetch", "web_search"),
}
TOOL_GROUPS["core"] = (
    TOOL_GROUPS["filesystem"] + TOOL_GROUPS["search"] + TOOL_GROUPS["terminal"] + TOOL_GROUPS["agent"]
)

#: Compatibility constants: names of the first-party tools by effect. The loop
#: grants nothing from them (effects come from each tool's annotations).
READ_ONLY_TOOLS: frozenset[str] = frozenset(
    {
        "read_file", "list_directory", "glob", "grep", "git_status", "git_diff", "git_log",
        "git_show", "todo_write", "ask_user", "finish_task", "list_skills", "use_skill",
    }
)
FILE_MUTATING_TOOLS: frozenset[str] = frozenset(
    {"write_file", "edit_file", "apply_patch", "delete_file", "replace_lines"}
)
SEARCH_FAMILY_TOOLS: frozenset[str] = frozenset({"glob", "grep", "list_directory", "read_file"})
COMMAND_TOOLS: frozenset[str] = frozenset({"run_command", "run_test"})

#: Which tool groups fit each phase, for hosts that gate exposure by phase.
PHASE_TOOLS: dict[str, tuple[str, ...]] = {
    "understand": ("filesystem", "search", "git", "agent", "skills", "mcp"),
    "explore": ("filesystem", "search", "git", "agent", "skills", "mcp"),
    "plan": ("agent", "filesystem", "search", "skills"),
    "edit": ("filesystem", "search", "agent", "terminal", "mcp"),
    "verify": ("terminal", "filesystem", "search", "git", "agent"),
    "recover": ("filesystem", "search", "terminal", "git", "agent", "mcp"),
    "complete": ("agent", "git"),
}
PHASES: tuple[str, ...] = tuple(PHASE_TOOLS)


# ---------------------------------------------------------------- models


#: What a tool does, in the Agent Client Protocol's vocabulary. Phases, guards
#: and UIs use it; permissions never infer anything from a tool's *name*.
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
TOOL_KINDS: tuple[str, ...] = typing.get_args(ToolKind)

#: MCP's camelCase annotation names and their snake_case fields here.
_MCP_HINTS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


class ClaudeDialect(BaseModel):
    """How a tool looks to hooks written for Claude Code (and Codex): the
    name they match (``Bash``, ``Write``...) and which Claude input field
    carries which of this tool's fields. A command hook configured from a
    Claude or Codex file sees this shape, and what it returns
    (``updatedInput``) is mapped back before validation.

    ``input`` maps a Claude field to this tool's field (``{"file_path":
    "path"}``); fields of the tool that are not mapped are not shown to
    such a hook and keep their value when it rewrites the input. ``paths``
    names the Claude fields that hold a workspace path: absolute in Claude's
    shape, relative to the workspace again on the way back. ``aliases`` are
    other names matchers may use (``Agent`` for ``Task``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    input: dict[str, str] = Field(default_factory=dict)
    paths: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)


class ToolAnnotations(BaseModel):
    """Declared effects of a tool (MCP-compatible, snake_case; MCP's camelCase
    names are accepted). Only these decide whether a call needs approval: a
    tool without ``read_only_hint=True`` is treated as mutating and asks.
    ``claude`` says how the tool looks to command hooks written for Claude
    Code (:class:`ClaudeDialect`); any tool may declare it."""

    model_config = ConfigDict(extra="allow")

    title: str | None = None
    read_only_hint: bool = False
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None
    kind: ToolKind | None = None
    claude: ClaudeDialect | None = None

    @model_validator(mode="before")
    @classmethod
    def _mcp_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(k in data for k in _MCP_HINTS):
            data = dict(data)
            for camel, snake in _MCP_HINTS.items():
                if camel in data:
                    value = data.pop(camel)
                    data.setdefault(snake, value)
        return data


class ToolPresentation(BaseModel):
    """How a UI shows a tool. Never sent to a provider."""

    model_config = ConfigDict(extra="allow")

    label: str | None = None
    icon: str | None = None
    tone: Tone = "info"
    group: str | None = None
    #: a short mark UIs show beside the card (``"🔒 sandboxed"``), usually set per result
    badge: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _family_alias(cls, data: Any) -> Any:
        # `family` is the old name of `group` (Smoke Monkey); accept it.
        if isinstance(data, dict) and "family" in data:
            data = dict(data)
            family = data.pop("family")
            data.setdefault("group", family)
        return data


class ToolResult(BaseModel):
    """What a tool returns: content blocks for the model, an error flag, and
    optional structured ``data`` for hosts and guards (not sent to the model)."""

    content: list[dict[str, Any]] = Field(default_factory=list)
    is_error: bool = False
    data: dict[str, Any] | None = None
    presentation: ToolPresentation | None = None

    @classmethod
    def text(cls, text: str, *, is_error: bool = False, data: dict[str, Any] | None = None) -> ToolResult:
        if type(text) is not str:
            text = str(text)
        # built on every tool call: the fields are known to be right, skip validation
        if cls is not ToolResult:  # a subclass may add fields, defaults or private attributes
            return cls.model_construct(
                content=[{"type": "text", "text": text}], is_error=bool(is_error), data=data, presentation=None
            )
        # what model_construct does for this class (no aliases, extras or private attributes), without
        # its generic walk over the fields (about half the cost of a no-op tool call's result)
        result = _new_result(ToolResult)
        _set(result, "__dict__", {"content": [{"type": "text", "text": text}], "is_error": bool(is_error),
                                  "data": data, "presentation": None})
        _set(result, "__pydantic_fields_set__", set(_RESULT_FIELDS))
        _set(result, "__pydantic_extra__", None)
        _set(result, "__pydantic_private__", None)
        return result

    @classmethod
    def error(cls, text: str, *, data: dict[str, Any] | None = None) -> ToolResult:
        return cls.text(text, is_error=True, data=data)

    @classmethod
    def image(cls, data: str, mime_type: str, *, caption: str | None = None) -> ToolResult:
        content: list[dict[str, Any]] = []
        if caption:
            content.append({"type": "text", "text": caption})
        content.append({"type": "image", "data": data, "mime_type": mime_type})
        return cls(content=content)

    def text_content(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")


_new_result = object.__new__
_set = object.__setattr__
_RESULT_FIELDS = tuple(ToolResult.model_fields)  # what the fast path of ToolResult.text sets


ExecuteFn = Callable[[dict[str, Any], "ToolContext"], "ToolResult | Awaitable[ToolResult] | str | Awaitable[str]"]


class ToolDefinition(BaseModel):
    """A tool: a name, a description written for models, a JSON Schema for
    its input, annotations, a presentation for UIs, and ``execute``.

    ``execute(input, ctx)`` may be sync or async and may return a
    :class:`ToolResult` or a plain string. Sync functions run in a worker
    thread (``blocking=True``, the default for them) so they never stall the
    event loop.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    annotations: ToolAnnotations = Field(default_factory=ToolAnnotations)
    presentation: ToolPresentation = Field(default_factory=ToolPresentation)
    execute: Callable[..., Any]
    group: str | None = None
    blocking: bool | None = None
    #: The input field that permission rules match (``write_file(src/**)``
    #: matches ``path``, ``run_command(pytest *)`` matches ``command``);
    #: None = rules name the tool only.
    permission_key: str | None = None
    #: ``concurrent(arguments, run_tools) -> bool``: whether one call may run
    #: at the same time as the step's other such calls (``run_tools``: the
    #: run's tools by name); None = read-only tools do. (A ``task`` tool runs
    #: a read-only subagent concurrently, an editing one alone.)
    concurrent: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None

    _validator: Any = PrivateAttr(default=None)
    _fast_check: Any = PrivateAttr(default=None)
    _is_async: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _schema_from_model(cls, data: Any) -> Any:
        if isinstance(data, dict):
            schema = data.get("input_schema")
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                data = dict(data)
                data["input_schema"] = schema.model_json_schema()
        return data

    def model_post_init(self, __context: Any) -> None:
        self._is_async = inspect.iscoroutinefunction(self.execute)
        self._fast_check = _compile_fast_check(self.input_schema)
        if self.blocking is None:
            self.blocking = not self._is_async

    @property
    def read_only(self) -> bool:
        """Declared read-only (``annotations.read_only_hint``). Never inferred
        from the name: a plugin tool called ``todo_write`` without the hint asks."""
        return self.annotations.read_only_hint

    def runs_concurrently(self, arguments: dict[str, Any], run_tools: dict[str, Any] | None = None) -> bool:
        if self.concurrent is not None:
            try:
                return bool(self.concurrent(arguments, run_tools or {}))
            except Exception:  # a broken predicate means: one at a time
                return False
        return self.annotations.read_only_hint

    @property
    def kind(self) -> str:
        """The declared kind, else ``"read"`` for read-only tools and ``"other"``."""
        return self.annotations.kind or ("read" if self.annotations.read_only_hint else "other")

    def permission_value(self, arguments: dict[str, Any]) -> str | None:
        """The value permission rules match for these arguments, if the tool declares one."""
        key = self.permission_key
        if key is None:
            return None
        value = arguments.get(key)
        return value if isinstance(value, str) else None

    def validate_input(self, arguments: Any) -> str | None:
        """Return None when ``arguments`` match the schema, else a message naming the bad field."""
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        # private attributes are read from their dict: pydantic's __getattr__ for them costs ~1 µs a read
        private = self.__pydantic_private__
        fast = private.get("_fast_check") if private else None
        if fast is not None and fast(arguments):
            return None  # the fast check only ever accepts what jsonschema accepts
        validator = private.get("_validator") if private else None
        if validator is None:
            import jsonschema  # heavy: imported on first validation, not at start-up

            cls = jsonschema.validators.validator_for(self.input_schema, default=jsonschema.Draft202012Validator)
            validator = self._validator = cls(self.input_schema)
        if validator.is_valid(arguments):
            return None
        best = _best_error(validator, arguments) or next(iter(validator.iter_errors(arguments)))
        where = "/".join(str(p) for p in best.absolute_path)
        if best.validator == "required":
            return f"invalid arguments for {self.name}: {best.message}"
        if best.validator == "additionalProperties":
            return f"invalid arguments for {self.name}: {best.message}"
        field = f"field '{where}'" if where else "arguments"
        return f"invalid arguments for {self.name}: {field}: {best.message}"

    def provider_schema(self) -> dict[str, Any]:
        """The tool as a provider sees it: name, description, input_schema. Never the presentation."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def presentation_dict(self) -> dict[str, Any]:
        data = self.presentation.model_dump(exclude_none=True)
        data.setdefault("group", self.group)
        if data.get("label") is None:
            data["label"] = self.annotations.title or self.name
        return data


_FAST_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}
_FAST_TOP_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_FAST_PROP_KEYS = frozenset({"type", "description", "title", "default", "examples"})


def _compile_fast_check(schema: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A quick acceptance test for flat object schemas (typed properties,
    ``required``, boolean ``additionalProperties``) — most tool schemas.

    It says True only when jsonschema would accept too; False (or a schema
    outside that subset, which gets no fast check) goes to jsonschema, which
    decides and words the error. Validation runs on every tool call, and
    jsonschema costs ~9 µs even for an empty schema.
    """
    if not isinstance(schema, dict) or set(schema) - _FAST_TOP_KEYS or schema.get("type", "object") != "object":
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list) or not isinstance(additional, bool):
        return None
    checks: dict[str, Callable[[Any], bool] | None] = {}
    for name, prop in props.items():
        if not isinstance(prop, dict) or set(prop) - _FAST_PROP_KEYS:
            return None
        kind = prop.get("type")
        if kind is None:
            checks[name] = None
        elif isinstance(kind, str) and kind in _FAST_TYPE_CHECKS:
            checks[name] = _FAST_TYPE_CHECKS[kind]
        else:
            return None
    required_names = tuple(required)

    def check(arguments: dict[str, Any]) -> bool:
        for name in required_names:
            if name not in arguments:
                return False
        for key, value in arguments.items():
            if key in checks:
                test = checks[key]
                if test is not None and not test(value):
                    return False
            elif not additional:
                return False
        return True

    return check


def _best_error(validator: Any, arguments: Any) -> Any:
    import jsonschema.exceptions

    return jsonschema.exceptions.best_match(validator.iter_errors(arguments))


# ---------------------------------------------------------------- registry


class DuplicateToolError(ValueError):
    pass


class ToolRegistry:
    """Tools by name, with the source (plugin) that registered each.

    Registering a second tool with a name already taken is an error that
    names both sources; a host that means to replace a tool calls
    ``register(tool, replace=True)``.
    """

    def __init__(self) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._sources: dict[str, str] = {}

    def register(
        self,
        tool: ToolDefinition,
        *,
        group: str | None = None,
        source: str = "<unknown>",
        replace: bool = False,
    ) -> ToolDefinition:
        if not isinstance(tool, ToolDefinition):
            raise TypeError(
                f"register() takes a ToolDefinition (use @tool on a function), got {type(tool).__name__} from {source}"
            )
        if group is not None and tool.group != group:
            tool = tool.model_copy(update={"group": group})
        if tool.group is None:
            tool = tool.model_copy(update={"group": _group_of(tool.name)})
        if tool.name in self._tools and not replace:
            raise DuplicateToolError(
                f"cannot register tool {tool.name!r} twice: already provided by {self._sources[tool.name]}, "
                f"registered again by {source}. Rename one of them or leave one plugin out "
                f"(SMOKE_LOAD_PLUGINS)."
            )
        self._tools[tool.name] = tool
        self._sources[tool.name] = source
        return tool

    def unregister(self, name: str) -> ToolDefinition | None:
        """Remove a tool (e.g. when its MCP server goes away); returns it, or None."""
        self._sources.pop(name, None)
        return self._tools.pop(name, None)

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def source(self, name: str) -> str | None:
        return self._sources.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> typing.Iterator[ToolDefinition]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)



def _group_of(name: str) -> str | None:
    for group, names in TOOL_GROUPS.items():
        if group != "core" and name in names:
            return group
    if "__" in name:
        return "mcp"
    return None


# ``@tool`` lives in tools.decorator (imported here last: it builds ToolDefinitions)
