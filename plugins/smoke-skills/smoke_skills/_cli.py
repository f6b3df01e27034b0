"""``smoke skills``: list the skills an agent in a workspace would get."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click


@click.command("skills")
@click.option(
    "--workspace", "-w", default=".", type=click.Path(file_okay=False), help="Workspace folder."
)
@click.option(
    "--dir",
    "dirs",
    multiple=True,
    type=click.Path(),
    help="Search this skills folder instead of the defaults (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def skills_command(workspace: str, dirs: tuple[str, ...], as_json: bool) -> None:
    """List the skills an agent in a workspace would get, with their source folders.

    The folders are the ones a run uses: `skills_dir` from your settings (or
    from the workspace's own, once you trusted it with `smoke trust`), else the
    defaults (first found wins by id): the workspace's .smoke/skills,
    .claude/skills, .codex/skills, .opencode/skills, .agents/skills, the same
    under your home folder, then ~/.config/opencode/skills.
    """
    from ._loader import discover_skills

    root = Path(workspace).expanduser()
    if not root.is_dir():
        raise click.BadParameter(f"{workspace!r} is not a folder", param_hint="--workspace")
    warnings: list[str] = []
    logger = logging.getLogger("smoke.skills")
    was_disabled = logger.disabled
    logger.disabled = True  # the warnings are printed below, once
    try:
        if dirs:
            skills = discover_skills(workspace=root.resolve(), skills_dir=list(dirs), warnings=warnings)
        else:
            skills = _skills_of_an_agent(root.resolve(), warnings)
    finally:
        logger.disabled = was_disabled
    skills.sort(key=lambda s: s.id)
    if as_json:
        rows = []
        for s in skills:
            row = s.to_dict()
            row["model_invocable"] = s.model_invocable
            rows.append(row)
        click.echo(json.dumps({"skills": rows, "warnings": warnings}, indent=2, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Smoke skills ({len(skills)})")
    for col in ("id", "description", "model", "source"):
        table.add_column(col, overflow="fold")
    for s in skills:
        desc = " ".join(s.description.split())
        if len(desc) > 100:
            desc = desc[:99] + "…"
        table.add_row(
            s.id, desc, "yes" if s.model_invocable else "no", str(s.source_dir or s.path.parent)
        )
    console = Console()
    console.print(table)
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


def _skills_of_an_agent(root: Path, warnings: list[str]) -> list[Any]:
    """The skills a run in ``root`` gets: an agent is made with the settings
    layers a run reads (the offline ``demo`` provider: nothing is called), and
    its options decide. A bad setting is the person's mistake: one message,
    exit 2."""
    from smoke_core import create_agent
    from smoke_core.plugin import ConfigError

    from . import _agent_skills

    smoke = logging.getLogger("smoke")
    level = smoke.level
    smoke.setLevel(logging.ERROR)  # settings warnings: `smoke run` says them; the listing stays quiet
    try:
        agent = create_agent(root, provider="demo", trust_workspace=None)
    except (ConfigError, ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        smoke.setLevel(level)
    return _agent_skills(agent.options, warnings)
