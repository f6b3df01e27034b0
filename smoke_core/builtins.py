"""Core's own plugin: the ``smoke plugins`` and ``smoke tools`` commands are
added through ``register_commands`` like any third-party command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._markers import hookimpl

if TYPE_CHECKING:
    import click


@hookimpl
def register_commands(cli: click.Group) -> None:
    from . import _cli_core

    cli.add_command(_cli_core.plugins_command)
    cli.add_command(_cli_core.tools_command)


@hookimpl
def register_providers(register: Any) -> None:
    def demo_factory(**kwargs: Any) -> Any:
        from .demo import DemoProvider

        return DemoProvider(model=kwargs.get("model"))

    register("demo", demo_factory, description="offline simulated model used by `smoke demo`",
             default_model="smoke-demo-simulated")
