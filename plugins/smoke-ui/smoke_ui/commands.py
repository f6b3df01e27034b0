"""Slash commands in the web UI: a task that starts with ``/name`` runs the
command a plugin registered (``register_slash_commands``: core's, skills',
MCP prompts', smoke-hooks' command files) instead of going to the model; the
text it returns is the task that runs. ``//text`` sends ``/text`` as it is.

What a handler may ask of the chat (:class:`WebChat`): ``say`` (shown on the
page), ``new_session``; ``compact``, ``set_model`` and ``end`` belong to the
terminal chat and say so here.
"""

from __future__ import annotations

from typing import Any

from smoke_core.plugin import ChatHostBase


class WebChat(ChatHostBase):
    """The page as a slash command's ``chat`` (:class:`smoke_core.plugin.ChatHost`)."""

    def __init__(self, state: Any, agent: Any, session_id: str, commands: dict[str, Any]) -> None:
        self._state = state
        self._agent = agent
        self._session_id = session_id
        self._commands = commands
        self.said: list[str] = []

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self._state.usage or {})

    def say(self, text: str) -> None:
        self.said.append(str(text))

    def new_session(self) -> str:
        self._session_id = self._state.new_session()
        return self._session_id

    async def compact(self, instructions: str = "") -> None:
        self.say("/compact is for smoke chat; here the conversation is compacted by itself when it grows long")

    def set_model(self, spec: str) -> None:
        self.say("/model is for smoke chat; start smoke serve with --model to use another model")

    def end(self) -> None:
        self.say("close the tab to leave")


def commands_of(agent: Any) -> dict[str, Any]:
    from smoke_core.plugin import collect_slash_commands

    commands, _problems = collect_slash_commands(agent)
    return dict(commands)


def describe(commands: dict[str, Any]) -> list[dict[str, str]]:
    """What the page lists while a task starts with ``/``."""
    return [{"name": c.name, "usage": c.usage, "description": c.description}
            for c in sorted(commands.values(), key=lambda c: c.name)]


async def run_command(state: Any, agent: Any, session_id: str, line: str) -> tuple[Any, WebChat]:
    """Run ``/name args``; ``(what to send to the model or None, the chat with what it said)``.
    Raises ``LookupError`` (unknown command) or ``RuntimeError`` (the handler failed)."""
    from smoke_core.plugin import UnknownSlashCommand, run_slash_command

    commands = commands_of(agent)
    chat = WebChat(state, agent, session_id, commands)
    try:
        result = await run_slash_command(commands, line, chat)
    except UnknownSlashCommand as exc:
        raise LookupError(f"{exc} (/help lists them)") from None
    if result in (None, "", []):
        return None, chat
    return result, chat
