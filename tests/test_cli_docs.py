"""The command line's documentation cannot drift: every core command and
option is in docs/cli.md, every core slash command too, and the READMEs link
only to files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from smoke_core.cli import builtins as _builtins
from smoke_core.cli import commands as _commands
from smoke_core.run.slash import BUILTIN_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
CORE_COMMANDS = [
    _commands.run_command, _commands.chat_command, _commands.demo_command, _commands.sessions_group,
    _commands.rewind_command,
    _commands.plugins_command, _commands.providers_command, _commands.tools_command, _commands.trust_command,
    _commands.permissions_command, _commands.doctor_command, _commands.batch_command,
    _commands.install_command, _commands.uninstall_command, _commands.plugin_group,
]


def test_core_registers_exactly_the_documented_commands():
    group = click.Group("smoke")
    _builtins.register_commands(group)
    assert sorted(group.commands) == sorted(c.name for c in CORE_COMMANDS)


@pytest.mark.parametrize("command", CORE_COMMANDS, ids=lambda c: c.name)
def test_every_core_command_and_option_is_documented(command):
    assert f"`smoke {command.name}" in CLI_DOC, f"smoke {command.name} is missing from docs/cli.md"
    for param in command.params:
        if isinstance(param, click.Option):
            longest = max(param.opts, key=len)
            assert longest in CLI_DOC, f"smoke {command.name} {longest} is missing from docs/cli.md"


def test_every_core_slash_command_is_documented():
    for command in BUILTIN_COMMANDS:
        assert f"`/{command.name}" in CLI_DOC, f"/{command.name} is missing from docs/cli.md"


def test_readmes_link_only_to_files_that_exist():
    readmes = [ROOT / "README.md", *sorted((ROOT / "plugins").glob("*/README.md"))]
    for readme in readmes:
        text = readme.read_text(encoding="utf-8")
        assert "DESIGN" not in text, f"{readme.relative_to(ROOT)} refers to a DESIGN document that is not in the repo"
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            assert (readme.parent / target).exists(), f"{readme.relative_to(ROOT)} links to a missing {target}"
