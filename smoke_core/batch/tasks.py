"""``smoke batch``: the tasks file and the batch's settings, as plain data.

A tasks file is JSON Lines: each line ``{"id", "task", "workspace"}`` plus
optional ``setup``, ``model``, ``output_schema``, ``max_steps`` and
``permissions``. A line that cannot run (not JSON, a missing or unknown
field, a duplicate id, a workspace that does not exist, an invalid schema)
becomes an :class:`InvalidLine` whose result says why; the other lines run.
Blank lines and lines starting with ``#`` or ``//`` are skipped.

:class:`BatchTask` and :class:`BatchConfig` are what an engine ships to its
workers (``to_dict`` / ``from_dict``: JSON only, so any engine can carry them).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIELDS = ("id", "task", "workspace", "setup", "model", "output_schema", "max_steps", "permissions")
RULE_KINDS = ("allow", "ask", "deny")


@dataclass(slots=True)
class BatchTask:
    """One valid line of the tasks file. ``workspace`` is absolute."""

    id: str
    task: str
    workspace: str
    line: int = 0
    setup: str | None = None
    model: str | None = None
    output_schema: dict[str, Any] | None = None
    max_steps: int | None = None
    permissions: dict[str, list[str]] | None = None

    @property
    def key(self) -> str:
        """A file-name-safe, unique name for this task's folders."""
        return task_key(self.id)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchTask:
        return cls(**data)


@dataclass(slots=True)
class InvalidLine:
    """A line of the tasks file that cannot run, and why."""

    id: str
    line: int
    message: str


@dataclass(slots=True)
class BatchConfig:
    """What every task of a batch shares (the command line's options)."""

    batch_id: str
    work_dir: str
    store_url: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    permissions: dict[str, list[str]] = field(default_factory=dict)
    allow_all: bool = False
    max_steps: int | None = None
    in_place: bool = False
    setup_timeout: float = 600.0
    plugins: list[str] = field(default_factory=list)
    lease_ttl: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchConfig:
        return cls(**data)

    def session_id(self, task_id: str) -> str:
        return f"batch-{self.batch_id}-{task_id}"


def task_key(task_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)[:60].strip("._-") or "task"
    return f"{safe}-{hashlib.sha1(task_id.encode()).hexdigest()[:8]}"


def parse_rules(value: Any, where: str) -> dict[str, list[str]]:
    """``{"allow": [...], "ask": [...], "deny": [...]}`` checked, with every rule parsed."""
    from ..policy.rules import RuleError, parse_rule

    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object like {{\"allow\": [\"edit_file\"], \"deny\": [...]}}")
    out: dict[str, list[str]] = {}
    for kind, rules in value.items():
        if kind not in RULE_KINDS:
            raise ValueError(f"{where} has an unknown key {kind!r}; use allow, ask and deny")
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise ValueError(f"{where}.{kind} must be a list of rule strings")
        for rule in rules:
            try:
                parse_rule(rule, kind, origin=where)
            except RuleError as exc:
                raise ValueError(f"{where}.{kind}: {exc}") from None
        out[kind] = list(rules)
    return out


def _line_id(data: Any, number: int) -> str:
    if isinstance(data, dict) and isinstance(data.get("id"), (str, int)) and not isinstance(data.get("id"), bool):
        text = str(data["id"]).strip()
        if text:
            return text
    return f"line-{number}"


def parse_line(text: str, number: int, base: Path) -> BatchTask | InvalidLine:
    """One line of the tasks file (``number`` counts from 1; relative
    workspaces are resolved against ``base``, the tasks file's folder)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return InvalidLine(f"line-{number}", number, f"line {number} is not valid JSON ({exc})")
    task_id = _line_id(data, number)

    def bad(message: str) -> InvalidLine:
        return InvalidLine(task_id, number, f"line {number}: {message}")

    if not isinstance(data, dict):
        return bad(f"expected a JSON object with id, task and workspace, got {type(data).__name__}")
    unknown = [k for k in data if k not in FIELDS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], FIELDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; the fields are {', '.join(FIELDS)}"
        return bad(f"unknown field {unknown[0]!r}{hint}")
    for name in ("id", "task", "workspace"):
        if name not in data:
            return bad(f"the field {name!r} is missing (each line needs id, task and workspace)")
    if not isinstance(data["id"], (str, int)) or isinstance(data["id"], bool) or not str(data["id"]).strip():
        return bad("id must be a non-empty string (or a number)")
    if not isinstance(data["task"], str) or not data["task"].strip():
        return bad("task must be a non-empty string: what the agent should do")
    if not isinstance(data["workspace"], str) or not data["workspace"].strip():
        return bad("workspace must be a path (a folder)")
    workspace = (base / Path(data["workspace"]).expanduser()).resolve()
    if not workspace.is_dir():
        return bad(f"the workspace {data['workspace']!r} ({workspace}) is not a folder")
    setup = data.get("setup")
    if setup is not None and (not isinstance(setup, str) or not setup.strip()):
        return bad("setup must be a shell command (a string)")
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        return bad("model must be a string such as 'gpt-4o' or 'openai:gpt-4o'")
    max_steps = data.get("max_steps")
    if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
        return bad(f"max_steps must be a positive whole number, got {max_steps!r}")
    schema = data.get("output_schema")
    if schema is not None:
        problem = schema_problem(schema)
        if problem:
            return bad(f"output_schema is not a usable JSON Schema: {problem}")
    permissions = None
    if data.get("permissions") is not None:
        try:
            permissions = parse_rules(data["permissions"], "permissions")
        except ValueError as exc:
            return bad(str(exc))
    return BatchTask(
        id=task_id, task=data["task"], workspace=str(workspace), line=number, setup=setup, model=model,
        output_schema=schema, max_steps=max_steps, permissions=permissions,
    )


def read_tasks(path: Path) -> list[BatchTask | InvalidLine]:
    """Every line of the tasks file, valid or not, in order; a repeated id is invalid."""
    base = path.resolve().parent
    out: list[BatchTask | InvalidLine] = []
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, 1):
            text = raw.strip()
            if not text or text.startswith(("#", "//")):
                continue
            item = parse_line(text, number, base)
            if item.id in first_line:
                # its own id: a results file holds one line per id
                item = InvalidLine(f"line-{number}", number,
                                   f"line {number}: the id {item.id!r} is used already (line {first_line[item.id]}); "
                                   f"ids must be unique in a tasks file")
            else:
                first_line[item.id] = number
            out.append(item)
    return out


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a task's output schema (None when it can)."""
    if not isinstance(schema, dict):
        return f"expected a JSON object, got {type(schema).__name__}"
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


def output_type_for(schema: dict[str, Any]) -> Any:
    """A type for ``agent.run(output_type=...)`` whose JSON Schema is exactly
    ``schema`` and whose values are checked with jsonschema."""
    from typing import Annotated

    from jsonschema import Draft202012Validator
    from pydantic import AfterValidator, WithJsonSchema

    validator = Draft202012Validator(schema)

    def check(value: Any) -> Any:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = "/".join(str(p) for p in first.path) or "the result"
            raise ValueError(f"{where}: {first.message}")
        return value

    return Annotated[Any, WithJsonSchema(schema), AfterValidator(check)]
