"""A GBNF grammar (llama.cpp's ``grammar`` field) for "plain text, or one
call of an exposed tool", built from the tools' JSON Schemas.

llama.cpp compiles a ``json_schema`` into a grammar itself, but a schema can
only describe JSON, so text would have to be a JSON string — which small
models rarely choose. A grammar can say what we mean: a reply that starts
with ``{`` is a call (the tool's name, then arguments that follow its
schema), any other reply is text. The part of JSON Schema tool schemas use is
translated (types, ``properties`` / ``required``, ``enum``, ``const``,
``items``, ``anyOf`` / ``oneOf``, local ``$ref``); what it does not cover
(``pattern``, ``minLength``, ``minimum``...) becomes "any value of that type",
and the tool still validates the arguments.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BASE = r'''ws ::= [ \t\n]{0,8}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ([0-9] | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"
array ::= "[" ws (value (ws "," ws value)*)? ws "]"
text ::= [^{ \t\n] [^\x00]*'''


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Builder:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.rules: dict[str, str] = {}
        self._refs: dict[str, str] = {}

    def rule(self, name: str, body: str) -> str:
        base = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "r"
        candidate, n = base, 2
        while candidate in self.rules or candidate in ("ws", "string", "char", "integer", "number", "boolean",
                                                       "null", "value", "object", "array", "text", "root", "call"):
            candidate, n = f"{base}-{n}", n + 1
        self.rules[candidate] = body
        return candidate

    def schema(self, schema: Any, name: str, depth: int = 0) -> str:
        """The name of a rule (or a base rule) matching ``schema``."""
        if depth > 12 or not isinstance(schema, dict) or not schema:
            return "value"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref, depth)
        if "const" in schema:
            return self.rule(name, _literal(json.dumps(schema["const"], ensure_ascii=False)))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.rule(name, " | ".join(_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                parts = [self.schema(s, f"{name}-{i}", depth + 1) for i, s in enumerate(schema[key])]
                return self.rule(name, " | ".join(parts))
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            return self.schema(schema["allOf"][0], name, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            parts = [self.schema({**schema, "type": k}, f"{name}-{k}", depth + 1) for k in kind]
            return self.rule(name, " | ".join(parts))
        if kind == "object" or (kind is None and "properties" in schema):
            return self._object(schema, name, depth)
        if kind == "array":
            item = self.schema(schema.get("items") or {}, f"{name}-item", depth + 1)
            return self.rule(name, f'"[" ws ({item} (ws "," ws {item})*)? ws "]"')
        return {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
                "null": "null"}.get(str(kind), "value")

    def _ref(self, ref: str, depth: int) -> str:
        if ref in self._refs:
            return self._refs[ref]
        match = re.fullmatch(r"#/(?:\$defs|definitions)/(.+)", ref)
        target = self.defs.get(match.group(1)) if match else None
        if target is None:
            return "value"
        name = f"def-{match.group(1) if match else 'ref'}"
        self._refs[ref] = "value"  # a recursive schema: its inner uses are any value
        built = self.schema(target, name, depth + 1)
        self._refs[ref] = built
        return built

    def _object(self, schema: dict[str, Any], name: str, depth: int) -> str:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        if not props:
            return "object" if schema.get("additionalProperties") is not False else self.rule(name, '"{" ws "}"')
        required = [k for k in schema.get("required") or [] if k in props]
        optional = [k for k in props if k not in required]
        pairs = {k: f"{_literal(json.dumps(k))} ws \":\" ws {self.schema(props[k], f'{name}-{k}', depth + 1)}"
                 for k in props}
        if required:
            body = ' ws "," ws '.join(pairs[k] for k in required)
            body += "".join(f' (ws "," ws {pairs[k]})?' for k in optional)
            return self.rule(name, f'"{{" ws {body} ws "}}"')
        # only optional properties, in their order: any subsequence, none at all included
        alternatives = []
        for i, first in enumerate(optional):
            rest = "".join(f' (ws "," ws {pairs[k]})?' for k in optional[i + 1 :])
            alternatives.append(f"{pairs[first]}{rest}")
        inner = self.rule(f"{name}-kv", " | ".join(alternatives))
        return self.rule(name, f'"{{" ws ({inner})? ws "}}"')


def tool_grammar(tools: list[dict[str, Any]], *, text: bool = True) -> str:
    """The GBNF of a reply: ``text`` (not starting with ``{`` or a blank) or
    ``{"name": <tool>, "arguments": <its arguments>}`` for one of ``tools``."""
    builder = _Builder({})
    calls = []
    for tool in tools:
        schema = tool.get("input_schema") or {"type": "object", "properties": {}}
        builder.defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
        builder._refs = {}
        arguments = builder.schema({**schema, "type": schema.get("type", "object")}, f"{tool['name']}-args")
        calls.append(builder.rule(f"{tool['name']}-call",
                                  f'{_literal(json.dumps(tool["name"]))} ws "," ws "\\"arguments\\"" ws ":" ws '
                                  f'{arguments}'))
    lines = [f"root ::= call{' | text' if text else ''}",
             f'call ::= "{{" ws "\\"name\\"" ws ":" ws ({" | ".join(calls)}) ws "}}"']
    lines += [f"{name} ::= {body}" for name, body in builder.rules.items()]
    lines.append(_BASE)
    return "\n".join(lines) + "\n"
