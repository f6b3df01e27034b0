"""The ``smoke`` command. Sub-commands come from plugins (``register_commands``),
including core's own built-in plugin; heavy imports happen inside commands.

This package is the only place that imports click, rich or prompt_toolkit;
it may import every other part, and nothing but the ``smoke`` entry point
imports it.
"""

from __future__ import annotations

import os
import sys

import click

from ..base.version import __version__


class SmokeGroup(click.Group):
    """Loads plugin commands once, on first use."""

    _loaded = False
    broken: list[str]

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        self.broken = []
        from ..hooks.manager import create_plugin_manager
        from ..hooks.runner import HookRunner

        before: dict[str, click.Command] = {}

        def kwargs(label: str) -> dict[str, object]:
            before.clear()
            before.update(self.commands)
            return {"cli": self}

        def failed(label: str, exc: BaseException) -> None:
            self.commands = dict(before)
            self.broken.append(f"{label}: {type(exc).__name__}: {exc}")
            click.echo(f"smoke: plugin {label} could not add its commands ({exc}); skipped", err=True)

        HookRunner(create_plugin_manager()).collect("register_commands", kwargs, failed)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load()
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        import logging  # only when a command runs, not for --help

        from ..hooks.manager import provider_env_vars
        from ..policy.secrets import set_provider_vars_loader

        logging.basicConfig(level=logging.DEBUG if _debug() else logging.WARNING, format="%(message)s")
        # children a command starts never see a key variable an installed provider declares
        set_provider_vars_loader(provider_env_vars)
        return super().invoke(ctx)


def _debug() -> bool:
    return os.environ.get("SMOKE_DEBUG", "") not in ("", "0")


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        os.environ["SMOKE_DEBUG"] = "1"


@click.group(cls=SmokeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="smoke")
@click.option("--debug", is_flag=True, expose_value=False, is_eager=True, callback=_set_debug,
              help="Show the Python traceback of an error (also SMOKE_DEBUG=1).")
def cli() -> None:
    """Smoke: an AI agent harness for code workspaces.

    Plugins add tools, providers and commands; `smoke plugins` lists them.
    """


def main(argv: list[str] | None = None) -> None:
    """The ``smoke`` command. A person's mistake is one message and exit
    status 2; an unexpected error is one line and a crash report (:mod:`smoke_core.cli.crash`)."""
    args = argv if argv is not None else sys.argv[1:]
    try:
        cli.main(args=args, prog_name="smoke")
    except Exception as exc:  # click handled its own errors; this is what the commands let through
        from .crash import report

        sys.exit(report(exc, args, debug=_debug()))


if __name__ == "__main__":
    main()
