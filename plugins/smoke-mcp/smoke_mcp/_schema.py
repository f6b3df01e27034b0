"""Making MCP tool names and input schemas acceptable to model providers."""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

MAX_TOOL_NAME = 64
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def sanitize_server_name(server: str) -> str:
    """The server part of a tool name: only ``[A-Za-z0-9_-]`` and no ``__``
    (core splits ``<server>__<tool>`` on the first ``__`` to find the
    permission scope ``mcp:<server>``)."""
    name = _BAD_CHARS.sub("_", server)
    name = re.sub(r"_{2,}", "_", name).strip("_")
    return name or "server"


def tool_name_for(server: str, tool: str) -> str:
    """``<server>__<tool>``, sanitised and capped at 64 characters."""
    tool_part = _BAD_CHARS.sub("_", tool) or "tool"
    return f"{sanitize_server_name(server)}__{tool_part}"[:MAX_TOOL_NAME]


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... (kept within 64 characters) if taken."""
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"_{n}"
        candidate = base[: MAX_TOOL_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1


# ---------------------------------------------------------------- schemas

_NULL = {"type": "null"}


def _is_null(s: Any) -> bool:
    return isinstance(s, dict) and s.get("type") == "null" and len(s) <= 2


def _resolve_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """Inline local ``#/$defs/X`` / ``#/definitions/X`` refs (recursive refs are left alone)."""
    if isinstance(node, list):
        return [_resolve_refs(x, defs, seen) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        m = re.fullmatch(r"#/(?:\$defs|definitions)/(.+)", ref)
        if m and m.group(1) in defs and m.group(1) not in seen:
            target = _resolve_refs(defs[m.group(1)], defs, (*seen, m.group(1)))
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**target, **_resolve_refs(rest, defs, seen)} if isinstance(target, dict) else target
    return {k: _resolve_refs(v, defs, seen) for k, v in node.items()}


def _simplify(node: Any) -> Any:
    if isinstance(node, list):
        return [_simplify(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _simplify(v) for k, v in node.items() if k != "$schema"}
    # anyOf/oneOf [X, null] -> X (sibling keys such as description/default/title are kept)
    for key in ("anyOf", "oneOf"):
        options = out.get(key)
        if isinstance(options, list) and any(_is_null(o) for o in options):
            rest = [o for o in options if not _is_null(o)]
            if len(rest) == 1 and isinstance(rest[0], dict):
                del out[key]
                merged = {**rest[0], **{k: v for k, v in out.items() if k not in rest[0]}}
                if merged.get("default", 0) is None:
                    merged.pop("default")
                out = merged
            elif rest:
                out[key] = rest
    # type: [X, "null"] -> X
    t = out.get("type")
    if isinstance(t, list) and "null" in t:
        rest_types = [x for x in t if x != "null"]
        out["type"] = rest_types[0] if len(rest_types) == 1 else rest_types
        if out.get("default", 0) is None:
            out.pop("default")
    return out


def provider_schema(raw: Any) -> dict[str, Any]:
    """An MCP ``inputSchema`` made acceptable to providers: a top-level
    ``{"type": "object", "properties": {...}}``, no ``$schema``, local refs
    inlined, ``anyOf [X, null]`` and ``type: [X, "null"]`` reduced to X.
    A schema that is still not valid JSON Schema becomes a permissive object."""
    if not isinstance(raw, dict):
        return {"type": "object", "properties": {}}
    schema = copy.deepcopy(raw)
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    if defs:
        schema = _resolve_refs(schema, defs)
        if not _has_ref(schema):
            schema.pop("$defs", None)
            schema.pop("definitions", None)
    schema = _simplify(schema)
    if schema.get("type") != "object":
        # providers require an object at the top; keep what describes its members
        schema = {k: v for k, v in schema.items() if k not in ("type", "anyOf", "oneOf", "allOf")}
        schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    req = schema.get("required")
    if req is not None and (not isinstance(req, list) or not req):
        schema.pop("required")
    try:
        import jsonschema

        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except Exception:
        return {"type": "object", "properties": {}, "additionalProperties": True}
    return schema


#: providers that take a tool's JSON Schema as the server wrote it ($schema,
#: $defs and $ref, allOf/anyOf, if/then/else kept); every other provider gets
#: :func:`provider_schema`'s inlined form. A provider may say so itself with an
#: attribute ``tool_schemas = "full"`` (or ``"inline"``).
FULL_SCHEMA_PROVIDERS = frozenset({"anthropic", "scripted"})


def takes_full_schemas(provider: Any) -> bool:
    declared = getattr(provider, "tool_schemas", None)
    if declared in ("full", "inline"):
        return bool(declared == "full")
    return getattr(provider, "name", None) in FULL_SCHEMA_PROVIDERS


def schema_for_provider(raw: Any, provider: Any) -> dict[str, Any]:
    """An MCP tool's ``inputSchema`` as ``provider`` can take it: whole (only
    made an object at the top when it is not one) for providers that accept
    full JSON Schema, else :func:`provider_schema`. A schema that is not
    valid JSON Schema becomes a permissive object either way."""
    if not takes_full_schemas(provider):
        return provider_schema(raw)
    if not isinstance(raw, dict) or raw.get("type", "object") != "object":
        return provider_schema(raw)
    schema = copy.deepcopy(raw)
    schema.setdefault("type", "object")
    if not isinstance(schema.get("properties", {}), dict):
        return provider_schema(raw)
    try:
        import jsonschema

        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except Exception:
        return {"type": "object", "properties": {}, "additionalProperties": True}
    return schema


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def _allows_null(node: Any) -> bool:
    if not isinstance(node, dict):
        return True
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if kind is None and not any(k in node for k in ("enum", "const", "$ref", "anyOf", "oneOf", "allOf")):
        return True  # no type: anything goes, null included
    return any(_allows_null(o) for key in ("anyOf", "oneOf") for o in node.get(key) or [])


def drop_null_optionals(schema: dict[str, Any], arguments: Any) -> None:
    """Remove, in place, the arguments a model gave as ``null`` for optional
    properties whose schema does not take null: for an MCP tool "null" and
    "not given" are the same (SEP-2243 treats them alike), and models send
    null for what they leave out."""
    if not isinstance(arguments, dict):
        return
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return
    required = set(schema.get("required") or [])
    for key in [k for k, v in arguments.items() if v is None and k not in required and k in props]:
        if not _allows_null(props[key]):
            del arguments[key]


@functools.cache
def mcp_tool_class() -> type:
    """The ``ToolDefinition`` of an MCP tool: arguments are checked as core
    checks them, after :func:`drop_null_optionals`."""
    from smoke_core.plugin import ToolDefinition

    class MCPToolDefinition(ToolDefinition):
        def validate_input(self, arguments: Any) -> str | None:
            drop_null_optionals(self.input_schema, arguments)
            return super().validate_input(arguments)

    return MCPToolDefinition
