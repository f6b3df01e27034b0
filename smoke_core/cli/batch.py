"""``smoke batch TASKS.jsonl``: the click command. Only click is imported
here (``smoke --help`` loads this module); the work is in :mod:`smoke_core.batch.main`.

Engines add their own options (``--ray-address``...): :class:`BatchCommand`
asks each installed engine for them when the command's parameters are read
(``smoke batch --help`` or a run), not when ``smoke --help`` lists commands.
"""

from __future__ import annotations

import sys
from typing import Any

import click


class BatchCommand(click.Command):
    """``smoke batch`` with the options of every installed engine."""

    _engine_params: dict[str, str] | None = None  # option name -> engine name

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        extra: list[click.Parameter] = []
        owners: dict[str, str] = {}
        from ..batch.engine import engine_classes

        known = {p.name for p in params}
        for name, cls in sorted(engine_classes().items()):
            for option in getattr(cls, "cli_options", list)():
                if not isinstance(option, click.Option) or option.name in known:
                    continue  # an engine may not shadow a batch option
                known.add(option.name)
                owners[str(option.name)] = name
                extra.append(option)
        self._engine_params = owners
        help_option = params[-1:] if params and params[-1].name == "help" else []
        return [*params[: len(params) - len(help_option)], *extra, *help_option]


@click.command("batch", cls=BatchCommand)
@click.argument("tasks_file", metavar="TASKS.jsonl", type=click.Path(dir_okay=False))
@click.option("--out", "-o", default=None, type=click.Path(dir_okay=False),
              help="Results file (JSON Lines; default: TASKS.results.jsonl). Re-running skips the ids it holds.")
@click.option("--engine", "-e", default="local", show_default=True,
              help="Where tasks run: local (this process) or an installed engine such as ray.")
@click.option("--concurrency", "-c", default=8, show_default=True, type=int, help="Tasks running at once.")
@click.option("--provider", "-p", default=None, help="Provider for every task (a task's model may name its own).")
@click.option("--model", "-m", default=None, help="Model for tasks that do not name one.")
@click.option("--base-url", default=None, help="Base URL for OpenAI-compatible servers.")
@click.option("--allow", multiple=True, metavar="RULE", help="Allow rule for every task, e.g. 'edit_file' or "
              "'run_command(pytest *)' (repeatable). What no rule allows is denied.")
@click.option("--deny", multiple=True, metavar="RULE", help="Deny rule for every task (repeatable).")
@click.option("--yes", "-y", "allow_all", is_flag=True,
              help="Allow every call a person would be asked about (deny rules still apply).")
@click.option("--max-steps", type=int, default=None, help="Step limit for tasks that do not set max_steps.")
@click.option("--in-place", is_flag=True, help="Run each task in its workspace itself, not in a copy.")
@click.option("--work-dir", default=None, type=click.Path(file_okay=False),
              help="Where task copies and the default session database go (default: OUT with .batch).")
@click.option("--batch-id", default=None, help="Name of the batch in session ids (default: made on the first run).")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Session store (default: $SMOKE_STORE_URL, else a SQLite file in the work folder).")
@click.option("--setup-timeout", default=600.0, show_default=True, type=float,
              help="Seconds a task's setup command may take.")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
              help="Import MODULE as a plugin for every task (tools, providers); it must be importable by workers.")
@click.option("--json", "as_json", is_flag=True, help="Print plain progress lines even on a terminal.")
@click.pass_context
def batch_command(ctx: click.Context, /, **kwargs: Any) -> None:
    """Run every task of TASKS.jsonl (one JSON object a line: id, task,
    workspace; optional setup, model, output_schema, max_steps, permissions)
    with one result line each in --out. Each task runs in its own copy of its
    workspace, without waiting for a person: calls no rule allows are denied
    and reported. Interrupted? Run the same command again to resume."""
    from .batch_run import EXIT_USAGE, batch_impl

    owners = getattr(ctx.command, "_engine_params", None) or {}
    engine_options = {name: kwargs.pop(name) for name in list(kwargs) if name in owners}
    chosen = kwargs["engine"]
    for name, owner in owners.items():
        if owner != chosen and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
            flag = "--" + name.replace("_", "-")
            click.echo(f"smoke batch: {flag} is an option of --engine {owner}, not of --engine {chosen}", err=True)
            sys.exit(EXIT_USAGE)
    mine = {k: v for k, v in engine_options.items() if owners.get(k) == chosen}
    batch_impl(engine_options=mine, **kwargs)
