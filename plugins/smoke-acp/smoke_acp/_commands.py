"""Slash commands in editors: the commands plugins register
(``register_slash_commands``: skills, MCP prompts, smoke-hooks' command
files) are offered with ``available_commands_update``; a prompt whose text
starts with ``/name`` runs that command first, and the text it returns is
the task. Core's terminal commands (``/clear``, ``/compact``, ``/model``,
``/exit``) are the editor's business here and say so.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from smoke_core.plugin import ChatHostBase

_CORE = "smoke-core:"


class EditorChat(ChatHostBase):
    """The editor as a slash command's ``chat`` (:class:`smoke_core.plugin.ChatHost`)."""

    def __init__(self, agent: Any, session_id: str, commands: dict[str, Any]) -> None:
        self._agent = agent
        self._session_id = session_id
        self._commands = commands
        self.said: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(str(text))

    def new_session(self) -> str:
        self.say("start a new thread in the editor for a new session")
        return self._session_id

    async def compact(self, instructions: str = "") -> None:
        self.say("the conversation is compacted by itself when it grows long")

    def set_model(self, spec: str) -> None:
        self.say("choose the model in the editor's model selector")

    def end(self) -> None:
        self.say("close the thread in the editor to leave")


def commands_of(agent: Any) -> dict[str, Any]:
    from smoke_core.plugin import collect_slash_commands

    commands, _problems = collect_slash_commands(agent)
    return dict(commands)


def available(agent: Any) -> AvailableCommandsUpdate:
    """Plugins' commands as the editor lists them (core's terminal commands left out)."""
    offered = []
    for command in sorted(commands_of(agent).values(), key=lambda c: c.name):
        if command.source.startswith(_CORE):
            continue
        hint = command.usage[len(command.name) + 1:].strip() if command.usage.startswith("/" + command.name) else ""
        offered.append(AvailableCommand(
            name=command.name, description=command.description or f"/{command.name}",
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
        ))
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=offered)


async def expand(agent: Any, session_id: str, parts: list[Any]) -> tuple[list[Any] | None, list[str]]:
    """``parts`` with a leading ``/name args`` replaced by what the command
    returns; ``(None, said)`` when it sends nothing. ``//text`` is ``/text``."""
    first = parts[0] if parts else None
    if not isinstance(first, str) or not first.startswith("/"):
        return parts, []
    if first.startswith("//"):
        return [first[1:], *parts[1:]], []
    from smoke_core.plugin import SlashCommandFailed, UnknownSlashCommand, run_slash_command

    commands = commands_of(agent)
    chat = EditorChat(agent, session_id, commands)
    try:
        result = await run_slash_command(commands, first.strip(), chat)
    except UnknownSlashCommand as exc:
        return None, [str(exc)]
    except SlashCommandFailed as exc:  # a plugin's command must not end the session
        return None, [*chat.said, str(exc)]
    if result in (None, "", []):
        return None, chat.said
    sent = list(result) if isinstance(result, list) else [str(result)]
    return [*sent, *parts[1:]], chat.said
