"""Slash commands of interactive chats: what the ``register_slash_commands``
hook registers (:class:`SlashCommand`), what a handler gets
(:class:`ChatHost`), how the commands of an agent are collected, and core's
own commands (``/help``, ``/clear``, ``/compact``, ``/model``, ``/tools``,
``/cost``, ``/plan``, ``/rewind``, ``/undo``, ``/exit``), registered through the same hook by core's built-in
plugin."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..wire.pricing import usage_summary

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
#: core's own commands: a plugin cannot take these names
RESERVED = frozenset({"help", "clear", "compact", "model", "tools", "cost", "plan", "rewind", "undo", "exit",
                      "quit"})


# ---------------------------------------------------------------- slash commands


@dataclass(frozen=True)
class SlashCommand:
    """One ``/name`` of a chat. ``handler(args, chat)`` may be async; it
    returns None, or text (or a list of text and images) sent to the model
    as the person's next message."""

    name: str
    handler: Callable[[str, ChatHost], Any]
    description: str = ""
    usage: str = ""
    source: str = ""


class ChatHost(Protocol):
    """What a slash command's handler gets as ``chat``."""

    @property
    def agent(self) -> Any:
        """The chat's current :class:`~smoke_core.Agent`."""

    @property
    def session_id(self) -> str:
        """The session the chat's turns are stored in."""

    @property
    def usage(self) -> dict[str, Any]:
        """Tokens (and ``cost_usd`` when known) spent since the chat started."""

    @property
    def commands(self) -> dict[str, SlashCommand]:
        """Every command of the chat, by name."""

    def say(self, text: str) -> None:
        """Show ``text`` to the person (it is not sent to the model)."""

    def new_session(self) -> str:
        """Start a new, empty session (``/clear``); its id."""

    async def compact(self, instructions: str = "") -> None:
        """Summarise the conversation and go on from the summary (``/compact``;
        ``instructions`` are what the person typed after it, for ``before_compaction``)."""

    def set_model(self, spec: str) -> None:
        """Go on with another model (``model`` or ``provider:model``), same session."""

    def end(self) -> None:
        """Leave the chat after this command."""


class ChatHostBase:
    """The part of a :class:`ChatHost` every front end has alike: the agent,
    the session and the commands, kept in ``_agent``, ``_session_id`` and
    ``_commands``; ``usage`` is empty unless a front end counts it. A front
    end subclasses it and adds ``say``, ``new_session``, ``compact``,
    ``set_model`` and ``end``."""

    _agent: Any
    _session_id: str
    _commands: dict[str, SlashCommand]

    @property
    def agent(self) -> Any:
        return self._agent

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def usage(self) -> dict[str, Any]:
        return {}

    @property
    def commands(self) -> dict[str, SlashCommand]:
        return dict(self._commands)


class UnknownSlashCommand(LookupError):
    """``/name`` is no command of the chat; the message names close matches."""


class SlashCommandFailed(RuntimeError):
    """A command's handler raised; the message says which command, whose, and
    what (``__cause__`` is the handler's exception)."""


async def run_slash_command(commands: dict[str, SlashCommand], line: str, chat: ChatHost) -> Any:
    """Run ``/name args`` (``line``) with ``chat`` as the handler's host and
    return what the handler returned (awaited). Raises
    :class:`UnknownSlashCommand` or :class:`SlashCommandFailed` -- every
    front end (terminal, web page, editor) reports them in its own way."""
    import difflib

    name, _, args = line[1:].partition(" ")
    command = commands.get(name)
    if command is None:
        close = difflib.get_close_matches(name, list(commands), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join('/' + c for c in close)}?" if close else ""
        raise UnknownSlashCommand(f"unknown command /{name}{hint}")
    try:
        result = command.handler(args, chat)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # a plugin's command must not end the chat
        raise SlashCommandFailed(f"/{name} failed ({command.source}): {type(exc).__name__}: {exc}") from exc
    return result


def collect_slash_commands(agent: Any) -> tuple[dict[str, SlashCommand], list[str]]:
    """Every plugin's slash commands for ``agent`` (core's through the same
    hook) and the problems to tell the person: a plugin that raised, a name
    taken twice or reserved by core."""
    from ..hooks.runner import HookRunner

    commands: dict[str, SlashCommand] = {}
    problems: list[str] = []

    def make_kwargs(label: str) -> dict[str, Any]:
        core = label.startswith("smoke-core:")

        def register(name: str, handler: Callable[..., Any], *, description: str = "", usage: str = "") -> None:
            name = str(name).lstrip("/")
            if not _NAME.match(name):
                raise ValueError(f"slash command name {name!r} from plugin {label}: use letters, digits, _ - . :")
            if not callable(handler):
                raise TypeError(f"slash command /{name} from plugin {label}: handler must be callable")
            if name in RESERVED and not core:
                problems.append(f"/{name} from {label} is not offered: /{name} is one of core's commands")
                return
            if name in commands:
                problems.append(f"/{name} from {label} is not offered: {commands[name].source} already offers it")
                return
            commands[name] = SlashCommand(name, handler, " ".join(str(description).split()),
                                          str(usage or f"/{name}"), label)

        return {"register": register, "agent": agent}

    def failed(label: str, exc: BaseException) -> None:
        problems.append(f"plugin {label} could not add its slash commands ({type(exc).__name__}: {exc}); skipped")

    HookRunner(agent.plugin_manager).collect("register_slash_commands", make_kwargs, failed)
    return commands, problems


# ---------------------------------------------------------------- core's own commands


def _help(args: str, chat: ChatHost) -> None:
    lines = ["commands:"]
    ordered = sorted(chat.commands.values(), key=lambda c: (not c.source.startswith("smoke-core:"), c.name))
    width = min(28, max((len(c.usage) for c in ordered), default=0))
    for c in ordered:
        source = "" if c.source.startswith("smoke-core:") else f"  ({c.source.split(':', 1)[0]})"
        lines.append(f"  {c.usage.ljust(width)}  {c.description}{source}")
    lines.append("Anything else is sent to the model; start a line with // to send one beginning with /. "
                 "Ctrl-C stops the current turn; Ctrl-D or /exit leaves.")
    chat.say("\n".join(lines))


def _clear(args: str, chat: ChatHost) -> None:
    old = chat.session_id
    new = chat.new_session()
    chat.say(f"new session {new}: the model starts from nothing (session {old} is kept; `smoke sessions` lists them)")


async def _compact(args: str, chat: ChatHost) -> None:
    await chat.compact(args.strip())


def _model(args: str, chat: ChatHost) -> None:
    spec = args.strip()
    agent = chat.agent
    if not spec:
        chat.say(f"model: {agent.options.provider_name} · {agent.provider.model} "
                 f"(change it with /model NAME or /model PROVIDER:NAME)")
        return
    chat.set_model(spec)


def _tools(args: str, chat: ChatHost) -> None:
    groups: dict[str, list[str]] = {}
    for t in sorted(chat.agent.tools.values(), key=lambda t: t.name):
        groups.setdefault(t.group or "other", []).append(t.name if t.read_only else f"{t.name}*")
    lines = [f"  {group}: {', '.join(names)}" for group, names in sorted(groups.items())]
    chat.say("tools (* asks before it runs, unless a rule allows it):\n" + "\n".join(lines))


def _cost(args: str, chat: ChatHost) -> None:
    from .budget import budget_line

    text = f"cost of this chat so far: {usage_summary(chat.usage)}"
    options = getattr(chat.agent, "options", None)
    budget = getattr(options, "budget", None)
    line = budget_line(budget, getattr(chat.agent, "last_usage", None)) if budget is not None else None
    chat.say(f"{text}\n{line}" if line else text)


def _plan(args: str, chat: ChatHost) -> str | None:
    """``/plan``: plan mode on; ``/plan off``: back to the mode before; ``/plan TASK``: on, and TASK is sent."""
    from .plan import MODE_WORDS

    agent = chat.agent
    words = args.strip()
    mode = agent.permission_mode
    try:
        if words.lower() == "off":
            if mode != "plan":
                chat.say(f"plan mode is not on (the permission mode is {mode if isinstance(mode, str) else 'callable'})")
                return None
            back = getattr(agent, "_mode_before_plan", "ask-default")
            agent.set_permission_mode(back)
            chat.say(f"plan mode off: the permission mode is {back} ({MODE_WORDS.get(back, back)})")
            return None
        if mode != "plan":
            agent.set_permission_mode("plan")
            chat.say(f"plan mode on: {MODE_WORDS['plan']}; the agent shows you its plan to approve, edit or reject "
                     f"(/plan off leaves it)")
        elif not words:
            chat.say("plan mode is already on (/plan off leaves it)")
    except ValueError as exc:
        chat.say(f"the permission mode stays {mode}: {exc}")
        return None
    return words or None


def _rewind(args: str, chat: ChatHost) -> None:
    """``/rewind`` lists the session's checkpoints; ``/rewind N`` puts the
    files and the conversation back to checkpoint N."""
    from .checkpoints import describe

    found = chat.agent.checkpoints()
    if not args.strip():
        chat.say("\n".join(["checkpoints (`/rewind N` puts the files and the conversation back):",
                            *(describe(c) for c in found)]) if found else "no checkpoints in this session yet")
        return
    target = next((c for c in found if str(c.number) == args.strip()), None)
    if target is None:
        chat.say(f"no checkpoint {args.strip()!r} in this session; /rewind lists them")
        return
    _rewind_to(chat, target)


def _undo(args: str, chat: ChatHost) -> None:
    """``/undo``: files and conversation back to before the last turn."""
    turns = [c for c in chat.agent.checkpoints() if c.reason == "turn"]
    if not turns:
        chat.say("nothing to undo yet: no turn has been recorded in this session")
        return
    _rewind_to(chat, turns[-1])


def _rewind_to(chat: ChatHost, target: Any) -> None:
    from .checkpoints import CheckpointError

    agent = chat.agent
    try:
        before = agent.rewind(target, conversation=True)
    except CheckpointError as exc:
        chat.say(f"cannot rewind: {exc}")
        return
    switch = getattr(chat, "switch_session", None)
    if switch is not None:
        switch(agent.session_id)
    chat.say(f"rewound to checkpoint {target.number} (files and conversation); going on in session "
             f"{agent.session_id}. The state before is checkpoint {before.number} of session {before.session_id} "
             f"(`smoke rewind --undo --session {before.session_id}` puts it back)")


def _exit(args: str, chat: ChatHost) -> None:
    chat.end()


BUILTIN_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", _help, "list the commands", "/help"),
    SlashCommand("clear", _clear, "start a new session (the model forgets this conversation)", "/clear"),
    SlashCommand("compact", _compact, "summarise the conversation so far and go on from the summary", "/compact"),
    SlashCommand("model", _model, "show the model, or switch to another one", "/model [[PROVIDER:]NAME]"),
    SlashCommand("tools", _tools, "list the tools the model can use", "/tools"),
    SlashCommand("cost", _cost, "tokens and price of this chat so far", "/cost"),
    SlashCommand("plan", _plan, "plan mode: only read-only tools run until you approve the agent's plan",
                 "/plan [off | TASK]"),
    SlashCommand("rewind", _rewind, "list checkpoints, or put files and conversation back to one", "/rewind [N]"),
    SlashCommand("undo", _undo, "put files and conversation back to before the last turn", "/undo"),
    SlashCommand("exit", _exit, "leave the chat", "/exit"),
    SlashCommand("quit", _exit, "leave the chat", "/quit"),
)
