"""The public API: `smoke_core.__all__` is exactly the intended surface."""

from __future__ import annotations

import smoke_core

EXPECTED = {
    "COMMAND_TOOLS", "ERROR_CODES", "EVENT_TYPES", "FILE_MUTATING_TOOLS", "PHASES", "PHASE_TOOLS", "PLUGIN_API_VERSION",
    "READ_ONLY_TOOLS", "SEARCH_FAMILY_TOOLS", "TOOL_GROUPS", "Agent", "AgentError", "AgentErrorInfo",
    "AgentOptions", "Event", "Finished", "Guards", "Image", "MemoryStore", "ModelRequest", "PermissionGate",
    "PermissionRequest", "Provider", "RetryPolicy", "RunHandle", "RunResult", "Store", "TextDelta",
    "ThoughtDelta", "ToolAnnotations", "ToolCallRequest", "ToolContext", "ToolDefinition", "ToolError",
    "ToolPresentation", "ToolRegistry", "ToolResult", "Usage", "UsageReport", "Workspace", "WorkspaceError",
    "__version__", "create_agent", "hookimpl", "hookspec", "tool",
}


def test_all_is_exactly_the_public_api():
    assert set(smoke_core.__all__) == EXPECTED


def test_every_public_name_resolves():
    for name in smoke_core.__all__:
        assert getattr(smoke_core, name) is not None, name


def test_constants():
    from smoke_core import FILE_MUTATING_TOOLS, PHASE_TOOLS, READ_ONLY_TOOLS, TOOL_GROUPS

    assert set(TOOL_GROUPS) >= {"filesystem", "terminal", "search", "git", "agent", "mcp", "skills", "core"}
    assert not (READ_ONLY_TOOLS & FILE_MUTATING_TOOLS)
    assert list(PHASE_TOOLS) == ["understand", "explore", "plan", "edit", "verify", "recover", "complete"]


def test_tool_decorator_schema():
    from typing import Literal

    from smoke_core import tool

    @tool(read_only=True)
    async def search(pattern: str, limit: int = 10, mode: Literal["a", "b"] = "a", tags: list[str] | None = None, ctx=None) -> str:
        """Search for a pattern."""
        return ""

    assert search.name == "search" and search.description == "Search for a pattern."
    assert search.read_only and not search.blocking
    schema = search.input_schema
    assert schema["required"] == ["pattern"]
    assert schema["properties"]["limit"] == {"type": "integer", "default": 10}
    assert schema["properties"]["mode"]["enum"] == ["a", "b"]
    assert {"type": "array", "items": {"type": "string"}} in schema["properties"]["tags"]["anyOf"]  # Optional: pydantic's anyOf
    assert "ctx" not in schema["properties"]
    assert search.validate_input({"pattern": 3}) is not None
    assert search.validate_input({"pattern": "x"}) is None


def test_pydantic_model_schema_and_family_alias():
    from pydantic import BaseModel

    from smoke_core import ToolDefinition

    class Args(BaseModel):
        path: str

    t = ToolDefinition(name="x", description="d", input_schema=Args, execute=lambda i, c: "",
                       presentation={"family": "files", "label": "X"})
    assert t.input_schema["properties"]["path"]["type"] == "string"
    assert t.presentation.group == "files"


def test_error_info_from_code():
    from smoke_core import AgentErrorInfo

    info = AgentErrorInfo.from_code("provider_rate_limited", "slow down")
    assert info.layer == "provider" and info.retryable and info.severity == "warning"
    import pytest

    with pytest.raises(ValueError, match="unknown error code"):
        AgentErrorInfo.from_code("nope", "x")  # type: ignore[arg-type]


def test_retry_after_parsing():
    from smoke_core.providers import classify_http_status, parse_retry_after

    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("garbage") is None
    assert classify_http_status(401, "bad", provider="openai", env_var="OPENAI_API_KEY").info.hint == (
        "Set OPENAI_API_KEY or pass api_key=."
    )
    for status, code in [(429, "provider_rate_limited"), (408, "provider_unavailable"), (409, "provider_unavailable"),
                         (500, "provider_unavailable"), (529, "provider_unavailable"), (400, "provider_error"),
                         (403, "provider_auth")]:
        assert classify_http_status(status, "m", provider="p").info.code == code


def test_fast_validation_never_accepts_what_jsonschema_rejects():
    """The fast path for flat schemas must agree with jsonschema whenever it says "valid"."""
    import itertools

    import jsonschema

    from smoke_core import ToolDefinition

    schemas = [
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer", "default": 1}},
         "required": ["a"], "additionalProperties": False},
        {"type": "object", "properties": {"x": {"type": "number"}, "f": {"type": "boolean"}, "l": {"type": "array"},
                                          "o": {"type": "object"}, "any": {"description": "anything"}}},
        {"type": "object", "properties": {"e": {"type": "string", "enum": ["a"]}}},           # no fast path
        {"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}},          # no fast path
    ]
    values = [None, True, False, 0, 1, -3, 1.0, 2.5, float("inf"), "", "ab", [], [1], {}, {"k": 1}]
    keys = ["a", "n", "x", "f", "l", "o", "any", "e", "s", "zzz"]
    for schema in schemas:
        tool = ToolDefinition(name="t", description="d", input_schema=schema, execute=lambda i, c: "")
        validator = jsonschema.Draft202012Validator(schema)
        for k1, k2 in itertools.combinations(keys, 2):
            for v1 in values:
                for v2 in values[::3]:
                    args = {k1: v1, k2: v2}
                    assert (tool.validate_input(args) is None) == validator.is_valid(args), (schema, args)
        assert (tool.validate_input({}) is None) == validator.is_valid({})
    assert ToolDefinition(name="t", description="d", input_schema=schemas[3], execute=lambda i, c: "")._fast_check is None


def test_the_plugin_door_resolves_every_name_it_lists():
    import smoke_core.plugin as door

    for name in door.__all__:
        assert getattr(door, name) is not None, name


def test_importing_the_plugin_door_for_hookimpl_is_cheap():
    import subprocess
    import sys

    code = ("import sys; from smoke_core.plugin import hookimpl; "
            "print([m for m in ('pydantic', 'jsonschema', 'httpx', 'rich', 'yaml') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
