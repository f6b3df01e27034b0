"""The default system prompt. Kept short on purpose: every token of it is
paid on every step (bench/ measures it).

It names tools, so a run builds it from the tools it exposes
(:func:`system_prompt_for`): a run with only ``filesystem`` and ``terminal``
is never told to call ``grep``, ``ask_user`` or ``finish_task`` (a small
model takes the prompt at its word and calls them). With every default tool
exposed it is :data:`DEFAULT_SYSTEM_PROMPT`, word for word.
"""

from __future__ import annotations

from collections.abc import Collection

_HEAD = """\
You are Smoke, a coding agent in the user's workspace. You act through tools; \
your text replies are shown to the user.

How to work:
"""

DEFAULT_SYSTEM_PROMPT = _HEAD + """\
- Understand first: list, glob, grep and read the relevant files before changing anything.
- Make the smallest edit that does the job (edit_file for exact replacements, \
apply_patch for several hunks); never rewrite a whole file to change a few lines.
- Verify: run the tests or a command that shows the change works; read failures closely.
- After a tool error, change your approach; do not repeat the failing call.
- Some calls need the user's approval; after a denial, do something else or ask with ask_user.
- Do not invent files, APIs or results; if unsure, look.
- When the task is done, or you are blocked, call finish_task.
"""

#: the words of the "understand first" line, and the tool each stands for
_LOOK = (("list", "list_directory"), ("glob", "glob"), ("grep", "grep"), ("read", "read_file"))
_RUN_TOOLS = ("run_command", "run_test")


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def system_prompt_for(tools: Collection[str]) -> str:
    """The default system prompt for a run exposing ``tools`` (names): each
    line that names a tool keeps only the exposed ones, and goes when none
    is; the way to end the task is ``finish_task`` only when it is exposed."""
    lines: list[str] = []
    look = [word for word, name in _LOOK if name in tools]
    if look:
        lines.append(f"- Understand first: {_words(look)} the relevant files before changing anything.")
    edits = [f"{name} for {what}" for name, what in (("edit_file", "exact replacements"),
                                                     ("apply_patch", "several hunks")) if name in tools]
    if edits:
        lines.append(f"- Make the smallest edit that does the job ({', '.join(edits)}); never rewrite a whole "
                     f"file to change a few lines.")
    elif "write_file" in tools:
        lines.append("- Make the smallest change that does the job.")
    if any(name in tools for name in _RUN_TOOLS):
        lines.append("- Verify: run the tests or a command that shows the change works; read failures closely.")
    lines.append("- After a tool error, change your approach; do not repeat the failing call.")
    ask = " or ask with ask_user" if "ask_user" in tools else ""
    lines.append(f"- Some calls need the user's approval; after a denial, do something else{ask}.")
    lines.append("- Do not invent files, APIs or results; if unsure, look.")
    if "finish_task" in tools:
        lines.append("- When the task is done, or you are blocked, call finish_task.")
    else:
        lines.append("- When the task is done, or you are blocked, say so in a reply without a tool call.")
    return _HEAD + "\n".join(lines) + "\n"


def tailor_system_prompt(prompt: str | None, tools: Collection[str]) -> str | None:
    """``prompt`` for a run exposing ``tools``: when it begins with the
    default prompt (the default, with project instructions after it), that
    part is :func:`system_prompt_for` the tools; any other prompt is the
    programmer's and stays as it is."""
    if prompt is None or not prompt.startswith(DEFAULT_SYSTEM_PROMPT):
        return prompt
    return system_prompt_for(tools) + prompt[len(DEFAULT_SYSTEM_PROMPT):]
