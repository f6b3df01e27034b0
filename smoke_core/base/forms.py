"""Forms a person fills in: a flat JSON Schema object (the shape MCP's
``elicitation/create`` uses) turned into fields every front end can render,
and the answer checked against it (defaults applied).

A form asks only for what a person can type or pick: text (``minLength``,
``maxLength``, ``format`` email / uri / date / date-time), numbers and
integers (``minimum``, ``maximum``), yes/no, one choice (``enum``, or
``oneOf`` of ``{const, title}``) and several choices (``type: array`` whose
``items`` are an ``enum`` or ``anyOf`` of ``{const, title}``). Anything
else — nested objects, ``$ref``, free arrays — is a :class:`FormError`
saying which field cannot be shown.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

FIELD_KINDS = ("text", "number", "integer", "boolean", "choice", "choices")
_FORMATS = ("email", "uri", "date", "date-time")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


class FormError(ValueError):
    """A form that cannot be shown, or an answer that does not fit it. The
    message names the field and says what is wrong."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of a form. ``kind`` is one of :data:`FIELD_KINDS`;
    ``choices`` are ``(value, label)`` pairs for ``choice`` / ``choices``."""

    name: str
    kind: str
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    has_default: bool = False
    choices: tuple[tuple[Any, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The field as plain data (what a web page or an editor renders)."""
        return {
            "name": self.name, "kind": self.kind, "title": self.title, "description": self.description,
            "required": self.required, "default": self.default if self.has_default else None,
            "has_default": self.has_default, "choices": [{"value": v, "label": label} for v, label in self.choices],
            "minimum": self.minimum, "maximum": self.maximum, "min_length": self.min_length,
            "max_length": self.max_length, "format": self.format,
        }


def _choices_of(node: dict[str, Any], where: str) -> tuple[tuple[Any, str], ...] | None:
    """``enum`` (+ legacy ``enumNames``) or ``oneOf``/``anyOf`` of ``{const, title}``; None if neither."""
    if isinstance(node.get("enum"), list):
        values = node["enum"]
        names = node.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else [str(v) for v in values]
        if not values:
            raise FormError(f"{where} offers no choices (an empty enum)")
        return tuple((v, str(label)) for v, label in zip(values, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        options = node.get(key)
        if isinstance(options, list):
            out = []
            for option in options:
                if not isinstance(option, dict) or "const" not in option:
                    raise FormError(f"{where}: each of its {key} options must be {{const, title}}")
                out.append((option["const"], str(option.get("title", option["const"]))))
            if not out:
                raise FormError(f"{where} offers no choices")
            return tuple(out)
    return None


def _number(value: Any, where: str, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormError(f"{where}: '{key}' must be a number, got {value!r}")
    return float(value)


def form_fields(schema: Any) -> list[FormField]:
    """The fields of ``schema``, in its order. Raises :class:`FormError` when
    the schema is not a flat object of fields a form can show."""
    if not isinstance(schema, dict):
        raise FormError(f"the form must be a JSON Schema object, got {type(schema).__name__}")
    if schema.get("type", "object") != "object":
        raise FormError(f"the form must be of type object, got {schema.get('type')!r}")
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise FormError("the form's 'properties' must be an object of fields")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise FormError("the form's 'required' must be a list of field names")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise FormError(f"the form requires {', '.join(map(repr, unknown))}, which it does not define")
    fields: list[FormField] = []
    for name, node in props.items():
        where = f"field {name!r}"
        if not isinstance(node, dict):
            raise FormError(f"{where} must be a JSON Schema object")
        if "$ref" in node:
            raise FormError(f"{where} uses $ref; a form shows only fields defined in place")
        kind_of = node.get("type")
        common: dict[str, Any] = {
            "name": name, "title": str(node.get("title") or name), "description": str(node.get("description") or ""),
            "required": name in required, "has_default": "default" in node, "default": node.get("default"),
        }
        if kind_of == "array":
            items = node.get("items")
            choices = _choices_of(items, where) if isinstance(items, dict) else None
            if choices is None:
                raise FormError(f"{where} is a list; a form can only offer a list of choices (items with an enum)")
            min_items = node.get("minItems")
            max_items = node.get("maxItems")
            fields.append(FormField(kind="choices", choices=choices, minimum=_number(min_items, where, "minItems"),
                                    maximum=_number(max_items, where, "maxItems"), **common))
            continue
        choices = _choices_of(node, where)
        if choices is not None and kind_of in (None, "string", "number", "integer"):
            fields.append(FormField(kind="choice", choices=choices, **common))
            continue
        if kind_of == "string":
            fmt = node.get("format")
            if fmt is not None and fmt not in _FORMATS:
                raise FormError(f"{where} has the format {fmt!r}; a form knows {', '.join(_FORMATS)}")
            fields.append(FormField(
                kind="text", format=fmt,
                min_length=int(node["minLength"]) if isinstance(node.get("minLength"), int) else None,
                max_length=int(node["maxLength"]) if isinstance(node.get("maxLength"), int) else None,
                **common,
            ))
        elif kind_of in ("number", "integer"):
            fields.append(FormField(kind=kind_of, minimum=_number(node.get("minimum"), where, "minimum"),
                                    maximum=_number(node.get("maximum"), where, "maximum"), **common))
        elif kind_of == "boolean":
            fields.append(FormField(kind="boolean", **common))
        else:
            raise FormError(f"{where} is of type {kind_of!r}; a form can ask for text, numbers, yes/no and choices")
    return fields


def _field_problem(f: FormField, value: Any) -> str | None:
    label = f"{f.title!r}" if f.title == f.name else f"{f.title!r} ({f.name})"
    if f.kind == "text":
        if not isinstance(value, str):
            return f"{label} must be text"
        if f.min_length is not None and len(value) < f.min_length:
            return f"{label} needs at least {f.min_length} characters"
        if f.max_length is not None and len(value) > f.max_length:
            return f"{label} takes at most {f.max_length} characters"
        if f.format == "email" and not _EMAIL.fullmatch(value):
            return f"{label} must be an email address"
        if f.format == "uri" and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:\S+$", value):
            return f"{label} must be a URI (such as https://example.com)"
        if f.format == "date" and not _DATE.fullmatch(value):
            return f"{label} must be a date (YYYY-MM-DD)"
        if f.format == "date-time" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
                                                         r"(Z|[+-]\d{2}:?\d{2})?", value):
            return f"{label} must be a date and time (YYYY-MM-DDTHH:MM:SSZ)"
        return None
    if f.kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{label} must be a number"
        if f.kind == "integer" and value != int(value):
            return f"{label} must be a whole number"
        if f.minimum is not None and value < f.minimum:
            return f"{label} must be at least {f.minimum:g}"
        if f.maximum is not None and value > f.maximum:
            return f"{label} must be at most {f.maximum:g}"
        return None
    if f.kind == "boolean":
        return None if isinstance(value, bool) else f"{label} must be true or false"
    values = [v for v, _ in f.choices]
    if f.kind == "choice":
        return None if value in values else f"{label} must be one of {', '.join(map(repr, values))}"
    if not isinstance(value, list) or any(v not in values for v in value):
        return f"{label} must be a list of {', '.join(map(repr, values))}"
    if f.minimum is not None and len(value) < f.minimum:
        return f"{label} needs at least {f.minimum:g} choices"
    if f.maximum is not None and len(value) > f.maximum:
        return f"{label} takes at most {f.maximum:g} choices"
    return None


def check_form(schema: Any, values: Any) -> dict[str, Any]:
    """The answer to ``schema``: ``values`` with the defaults of the fields it
    leaves out filled in, checked field by field (an integer given as 3.0
    becomes 3). Raises :class:`FormError` naming every field that is wrong or
    missing, or for a field the form does not have."""
    fields = form_fields(schema)
    if not isinstance(values, dict):
        raise FormError(f"the answer to a form must be an object of field values, got {type(values).__name__}")
    by_name = {f.name: f for f in fields}
    problems = [f"the form has no field {k!r}" for k in values if k not in by_name]
    out: dict[str, Any] = {}
    for f in fields:
        if f.name in values and values[f.name] is not None:
            value = values[f.name]
        elif f.has_default:
            value = f.default
        elif f.required:
            problems.append(f"{f.title!r} is required")
            continue
        else:
            continue
        if f.kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        problem = _field_problem(f, value)
        if problem:
            problems.append(problem)
        else:
            out[f.name] = value
    if problems:
        raise FormError("; ".join(problems))
    return out


def parse_field(f: FormField, text: str) -> Any:
    """What a person typed for ``f`` as a value (None: left empty, so the
    default or nothing). Choices are picked by number or by value; several
    choices are separated by commas. Raises :class:`FormError`."""
    text = text.strip()
    if not text:
        return None
    if f.kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1", "on"):
            return True
        if low in ("n", "no", "false", "0", "off"):
            return False
        raise FormError(f"{f.title!r}: answer yes or no")
    if f.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise FormError(f"{f.title!r} must be a number") from None
        if f.kind == "integer":
            if not number.is_integer():
                raise FormError(f"{f.title!r} must be a whole number")
            return int(number)
        return number

    def pick(part: str) -> Any:
        part = part.strip()
        if part.isdigit() and 1 <= int(part) <= len(f.choices):
            return f.choices[int(part) - 1][0]
        for value, label in f.choices:
            if part == str(value) or part == label:
                return value
        raise FormError(f"{f.title!r}: {part!r} is not one of the choices")

    if f.kind == "choice":
        return pick(text)
    if f.kind == "choices":
        return [pick(p) for p in text.split(",") if p.strip()]
    return text
