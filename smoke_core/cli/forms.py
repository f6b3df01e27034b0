"""A form question at the terminal (``ask_user.required`` with a ``form``,
e.g. an MCP server's elicitation): one prompt per field, each answer checked
as it is typed (defaults shown and applied), then send or decline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..base.forms import FormError, FormField, check_form, form_fields, parse_field
from .describe import show

DECLINE = "-"


def _hint(f: FormField) -> str:
    if f.kind == "boolean":
        kind = "yes/no"
    elif f.kind in ("number", "integer"):
        bounds = [f"≥ {f.minimum:g}" if f.minimum is not None else "", f"≤ {f.maximum:g}" if f.maximum is not None else ""]
        kind = " ".join(["a whole number" if f.kind == "integer" else "a number", *[b for b in bounds if b]])
    elif f.kind == "choice":
        kind = "pick one by number"
    elif f.kind == "choices":
        kind = "pick any by number, separated by commas"
    else:
        kind = f.format or "text"
    if f.has_default:
        default = f.default
        if f.kind == "boolean":
            default = "yes" if default else "no"
        kind += f"; default {default}"
    elif not f.required:
        kind += "; optional"
    return kind


async def ask_form(d: dict[str, Any], *, console: Any, read: Callable[[str], Awaitable[str]]) -> dict[str, Any] | None:
    """The values the person typed for the form in ``d`` (checked, defaults
    applied), or None when they declined or the form cannot be shown."""
    form = d.get("form")
    try:
        fields = form_fields(form)
    except FormError as exc:
        console.print(f"[yellow]? {show(d.get('question', ''))}[/yellow]")
        console.print(f"  [red]this form cannot be shown at the terminal ({show(exc)}): declined[/red]")
        return None
    console.print(f"[bold cyan]? {show(d.get('question', ''))}[/bold cyan]")
    console.print(f"  [dim]fill in the form; an empty answer keeps the default; {DECLINE} declines[/dim]")
    values: dict[str, Any] = {}
    for f in fields:
        title = f.title + ("" if f.title == f.name else f" ({f.name})")
        console.print(f"  [bold]{show(title)}[/bold]{' *' if f.required else ''} [dim]{show(_hint(f))}[/dim]")
        if f.description:
            console.print(f"    [dim]{show(f.description)}[/dim]")
        for i, (_, label) in enumerate(f.choices, 1):
            console.print(f"    {i}. {show(label)}")
        while True:
            text = await read("    > ")
            if text.strip() == DECLINE:
                console.print("  [dim]→ declined[/dim]")
                return None
            try:
                value = parse_field(f, text)
                one = {"type": "object", "properties": {f.name: form["properties"][f.name]},  # type: ignore[index]
                       "required": [f.name] if f.required else []}
                checked = check_form(one, {} if value is None else {f.name: value})
            except FormError as exc:
                console.print(f"    [red]{show(exc)}[/red]")
                continue
            values.update(checked)
            break
    try:
        values = check_form(form, values)
    except FormError as exc:  # each field passed alone: nothing should be left
        console.print(f"  [red]{show(exc)}: declined[/red]")
        return None
    while True:
        answer = (await read("  send [y] / decline [n] ")).strip().lower()[:1]
        if answer in ("y", ""):
            return values
        if answer == "n":
            console.print("  [dim]→ declined[/dim]")
            return None
