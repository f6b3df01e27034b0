"""Core's own plugin: the core commands (``run``, ``demo``, ``sessions``,
``plugins``, ``tools``) and the ``demo`` provider are added through the same
hooks as any third-party plugin's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._markers import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def register_commands(cli: click.Group) -> None:
    from . import _cli_core, _cli_run

    cli.add_command(_cli_run.run_command)
    cli.add_command(_cli_run.demo_command)
    cli.add_command(_cli_run.sessions_group)
    cli.add_command(_cli_core.plugins_command)
    cli.add_command(_cli_core.tools_command)


@hookimpl
def register_providers(register: Any) -> None:
    def demo_factory(**kwargs: Any) -> Any:
        from .demo import DemoProvider

        return DemoProvider(model=kwargs.get("model"))

    register("demo", demo_factory, description="offline simulated model used by `smoke demo`",
             default_model="smoke-demo-simulated")
