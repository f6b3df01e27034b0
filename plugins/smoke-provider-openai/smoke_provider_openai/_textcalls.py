"""Which JSON in a reply's text is a tool call: it names a tool the request
exposes and its arguments validate against that tool's schema. Small local
models write their calls as plain JSON (``{"name": "read_file",
"arguments": {...}}``, bare or in a ```` ```json ```` fence) even when the
server offered the tools natively; JSON that names no exposed tool, or whose
arguments do not validate, is text (an example, a data file), never a call.
"""

from __future__ import annotations

import json
from typing import Any


class CallChecker:
    """The exposed tools' names and schemas; a validator per tool, built on first use."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.schemas: dict[str, dict[str, Any]] = {t["name"]: t.get("input_schema") or {} for t in tools}
        self._validators: dict[str, Any] = {}

    def valid(self, name: object, arguments: object) -> bool:
        """True when ``name`` is an exposed tool and ``arguments`` (an object) validate against its schema."""
        if not isinstance(name, str) or name not in self.schemas or not isinstance(arguments, dict):
            return False
        validator: Any = self._validators.get(name)
        if validator is None:
            import jsonschema

            schema = self.schemas[name]
            try:
                cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                validator = self._validators[name] = cls(schema)
            except Exception:  # a schema jsonschema cannot read: the name alone decides
                validator = self._validators[name] = False
        return True if validator is False else bool(validator.is_valid(arguments))

    def calls_in(self, data: Any) -> list[tuple[str, dict[str, Any]]] | None:
        """The calls a parsed JSON value holds — one ``{"name", "arguments"}``
        object (``parameters`` as Llama 3 writes it) or a list of them — when
        every one of them is valid; else None (the value is text)."""
        items = data if isinstance(data, list) else [data]
        calls: list[tuple[str, dict[str, Any]]] = []
        for item in items:
            if not isinstance(item, dict) or set(item) - {"name", "arguments", "parameters", "id", "type"}:
                return None
            arguments = item.get("arguments", item.get("parameters"))
            if isinstance(arguments, str):  # OpenAI-style arguments as a JSON string
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    return None
            if arguments is None and "arguments" not in item and "parameters" not in item:
                return None
            name = item.get("name")
            if not isinstance(name, str) or not isinstance(arguments, dict) or not self.valid(name, arguments):
                return None
            calls.append((name, arguments))
        return calls or None

    def calls_in_text(self, text: str) -> list[tuple[str, dict[str, Any]]] | None:
        """:meth:`calls_in` of ``text`` parsed as JSON (None when it is not JSON)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return self.calls_in(data)
