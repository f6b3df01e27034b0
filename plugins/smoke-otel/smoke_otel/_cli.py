"""``--trace-console`` on ``smoke run`` and ``smoke demo``.

A plugin cannot add a flag to another plugin's command, so smoke-otel
replaces core's ``run`` / ``demo`` commands with copies that carry one more
option. The option only sets what ``SMOKE_TRACE_CONSOLE=1`` sets; the
command itself is core's, unchanged. Only click is imported here.
"""

from __future__ import annotations

import copy

import click

OPTION_NAME = "trace_console"
COMMANDS = ("run", "demo")


def _enable(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from . import _setup

        _setup.console_requested = True


def _option() -> click.Option:
    return click.Option(
        ["--trace-console"], is_flag=True, expose_value=False, callback=_enable,
        help="Print each run's OpenTelemetry spans as a tree on stderr (smoke-otel; same as SMOKE_TRACE_CONSOLE=1).",
    )


def add_trace_console_option(cli: click.Group) -> None:
    for name in COMMANDS:
        command = cli.commands.get(name)
        if command is None or any(p.name == OPTION_NAME for p in command.params):
            continue
        extended = copy.copy(command)  # core's command object stays as it is
        extended.params = [*command.params, _option()]
        cli.add_command(extended, name)
