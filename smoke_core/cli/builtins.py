"""Core's own plugin: the core commands (``run``, ``chat``, ``demo``,
``sessions``, ``plugins``, ``providers``, ``tools``, ``trust``,
``permissions``, ``doctor``), the chat's slash commands (``/help``,
``/clear``, ``/compact``, ``/model``, ``/tools``, ``/cost``, ``/exit``) and
the ``demo`` provider are added through the same hooks as any third-party
plugin's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base.markers import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def register_commands(cli: click.Group) -> None:
    from . import commands as _commands

    for command in (
        _commands.run_command, _commands.chat_command, _commands.demo_command, _commands.sessions_group,
        _commands.rewind_command,
        _commands.plugins_command, _commands.providers_command, _commands.tools_command,
        _commands.trust_command, _commands.permissions_command, _commands.doctor_command,
        _commands.batch_command,
        _commands.install_command, _commands.uninstall_command, _commands.plugin_group,
    ):
        cli.add_command(command)


@hookimpl
def register_providers(register: Any) -> None:
    def demo_factory(**kwargs: Any) -> Any:
        from ..demo import DemoProvider

        return DemoProvider(model=kwargs.get("model"))

    register("demo", demo_factory, description="offline simulated model used by `smoke demo`",
             default_model="smoke-demo-simulated")


@hookimpl
def register_slash_commands(register: Any) -> None:
    from ..run.slash import BUILTIN_COMMANDS

    for command in BUILTIN_COMMANDS:
        register(command.name, command.handler, description=command.description, usage=command.usage)
