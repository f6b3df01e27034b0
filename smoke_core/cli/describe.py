"""What a person reads before approving: a call's summary, the command or the
diff whole with invisible characters marked, warnings, and library messages
in the command line's words.
"""

from __future__ import annotations

import json
from typing import Any

from ..base.display import DEFAULT_SPACE_RUN, hidden_characters, length_note, visible


def not_found_hints(provider: Any) -> list[str]:
    """What to say about an HTTP 404 from the provider: the URL requested and,
    for an endpoint without ``/v1``, the likely fix."""
    from urllib.parse import urlsplit

    try:
        url = str(provider.url)
    except Exception:  # an adapter without a URL (or one that cannot say)
        return []
    hints = [f"the server answered 404 Not Found for POST {url}"]
    base = str(getattr(provider, "base_url", "") or "")
    if base and "/v1" not in urlsplit(base).path:
        hints.append(f"OpenAI-compatible servers usually serve under /v1: try --base-url {base.rstrip('/')}/v1")
    return hints


def cli_words(text: Any) -> str:
    """A library message in the words of the command line: ``base_url=`` is
    ``--base-url``, ``model=`` is ``--model``; "pass api_key=" is dropped (the
    CLI takes keys from the environment)."""
    import re

    out = re.sub(r"\s*or pass api_key=(\.?)", r"\1", str(text))
    out = out.replace("Pass a valid api_key=.", "Check the API key in the provider's key variable "
                                                "(`smoke providers` lists them).")
    out = out.replace(", or a provider object", "").replace(" or pass a provider object", "")
    out = re.sub(r"\b(provider|model)='([^']*)'", r"--\1 \2", out)
    for name in ("base_url", "model", "provider", "max_steps"):
        flag = "--" + name.replace("_", "-")
        out = re.sub(rf"(?<![\w.-]){name}=(?=\s|$|[.,;:)])", flag, out)
        out = re.sub(rf"(?<![\w.-]){name}=", flag + " ", out)
    return out


def plain(text: Any) -> str:
    """Model or tool text for the terminal: control characters shown, never obeyed."""
    return visible(str(text), space_run=0, keep_tabs=True)


def show(text: Any) -> str:
    return esc(plain(text))


def esc(text: Any) -> str:
    from rich.markup import escape

    return escape(str(text))


def call_summary(tool_name: str, input: dict[str, Any]) -> str:
    for key in ("command", "path", "pattern", "question", "rev", "message", "skill_id", "summary"):
        value = input.get(key)
        if isinstance(value, str):
            value = value.replace("\n", " ")
            return value[:100] + ("…" if len(value) > 100 else "")
    text = json.dumps(input, ensure_ascii=False)
    return text[:100] + ("…" if len(text) > 100 else "")


def approval_warnings(d: dict[str, Any]) -> list[str]:
    """Warnings shown above an approval: hidden characters, long inputs."""
    out: list[str] = []
    inp = d.get("input") or {}
    texts = [str(v) for v in inp.values() if isinstance(v, str)] if isinstance(inp, dict) else [str(inp)]
    env = inp.get("env") if isinstance(inp, dict) else None
    if isinstance(env, dict):  # a command's env is approved with it: its hidden characters count too
        texts += [f"{k}={v}" for k, v in env.items()]
    hidden = sum(hidden_characters(t) for t in texts) + hidden_characters(str(d.get("tool_name", "")))
    if hidden:
        out.append(f"the input holds {hidden} control or invisible character(s), shown marked (␛ = ESC, ␍ = CR, "
                   f"⟨…⟩ = invisible): what runs is exactly what is shown")
    spaces = [t for t in texts if " " * DEFAULT_SPACE_RUN in t]
    if spaces:
        out.append("the input holds long runs of spaces, shown as ⟨N spaces⟩")
    for t in texts:
        note = length_note(t)
        if note:
            out.append(note)
            break
    return out


def describe_request(d: dict[str, Any]) -> str:
    """What a person needs to see to decide: the command, or the diff —
    whole, with control characters made visible (nothing is cut)."""
    import difflib

    inp = d.get("input") or {}
    name = d.get("tool_name", "")
    if "command" in inp:
        command = str(inp["command"])
        lines = [f"  [bold]$ {esc(visible(command))}[/bold]", f"  [dim]({len(command):,} characters)[/dim]"]
        lines += command_context(inp)
        return "\n".join(lines)
    if name == "edit_file" and "old_string" in inp:
        diff = difflib.unified_diff(
            str(inp.get("old_string", "")).splitlines(), str(inp.get("new_string", "")).splitlines(),
            fromfile=f"a/{inp.get('path')}", tofile=f"b/{inp.get('path')}", lineterm="",
        )
        return "\n".join(_color_diff_line(line) for line in diff)
    if name == "apply_patch" and "patch" in inp:
        return "\n".join(_color_diff_line(line) for line in str(inp["patch"]).splitlines())
    if name == "write_file":
        content = str(inp.get("content", ""))
        lines = content.splitlines()
        body = "\n".join(f"[green]+{esc(visible(line, space_run=_CONTENT_SPACE_RUN))}[/green]" for line in lines)
        return f"  write {esc(visible(str(inp.get('path'))))} ({len(content):,} characters)\n{body}"
    if inp:
        return "  " + esc(visible(json.dumps(inp, ensure_ascii=False)))
    return ""


def command_context(inp: dict[str, Any]) -> list[str]:
    """What a command runs with besides its text — every ``env`` entry whole
    and marked (it is approved with the command), the folder it starts in, and
    whether it keeps running in the background."""
    lines: list[str] = []
    env = inp.get("env")
    if isinstance(env, dict) and env:
        lines.append(f"  [bold yellow]with env ({len(env)} variable{'s' if len(env) != 1 else ''}, "
                     f"approved with the command):[/bold yellow]")
        for name, value in env.items():
            lines.append(f"    [bold]{esc(visible(str(name)))}={esc(visible(str(value)))}[/bold]")
    workdir = inp.get("workdir") or inp.get("cwd")
    if isinstance(workdir, str) and workdir.strip() not in ("", "."):
        lines.append(f"  in folder [bold]{esc(visible(workdir))}[/bold]")
    if inp.get("background") is True:
        lines.append("  [bold yellow]in the background[/bold yellow] (it keeps running until the run ends)")
    return lines


#: in file contents indentation is normal: only very long space runs are marked
_CONTENT_SPACE_RUN = 80


def _color_diff_line(line: str) -> str:
    line = visible(line, space_run=_CONTENT_SPACE_RUN)
    if line.startswith("+") and not line.startswith("+++"):
        return f"[green]{esc(line)}[/green]"
    if line.startswith("-") and not line.startswith("---"):
        return f"[red]{esc(line)}[/red]"
    return esc(line)
