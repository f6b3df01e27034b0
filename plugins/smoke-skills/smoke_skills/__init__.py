"""smoke-skills: SKILL.md discovery and just-in-time skills for Smoke.

Registers ``list_skills`` and ``use_skill`` (group ``skills``) and the
``smoke skills`` command. Skills are found once per agent, when its tools are
registered. Settings (``register_settings``): ``skills_dir`` (a path or a
list; replaces the default folders) and ``skills_follow_symlinks`` (trusted
settings only). ``create_agent(skills=...)`` takes already loaded
:class:`Skill` objects.

Skill folders inside the workspace are a repository's text: their symlinks
never lead out of the workspace (unless the workspace is trusted and
``skills_follow_symlinks`` is set), and an untrusted workspace's
``skills_dir`` may not point outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    import click

    from smoke_core import AgentOptions

    from ._loader import (
        Skill,
        SkillParseError,
        default_skill_dirs,
        discover_skills,
        load_skills_from_dirs,
        parse_skill_file,
    )

__all__ = [
    "Skill",
    "SkillParseError",
    "default_skill_dirs",
    "discover_skills",
    "load_skills_from_dirs",
    "parse_skill_file",
]


def __getattr__(name: str) -> Any:
    # The public helpers load on first use: `smoke --help` imports this module.
    if name in __all__:
        from . import _loader

        return getattr(_loader, name)
    raise AttributeError(f"module 'smoke_skills' has no attribute {name!r}")


@hookimpl
def register_settings(register: Any) -> None:
    """The settings keys this plugin reads."""
    from pathlib import Path

    register(
        "skills_dir",
        Path | list[Path] | None,
        default=None,
        trusted_only=False,
        description=(
            "Skills folder or list of folders searched instead of the defaults (relative paths are taken from "
            "the workspace). An untrusted workspace's folders must be inside it."
        ),
    )
    register(
        "skills",
        Any,
        default=None,
        trusted_only=True,
        code_only=True,
        description="Skill objects already loaded (create_agent only); they win on an id clash.",
    )
    register(
        "skills_follow_symlinks",
        bool,
        default=False,
        trusted_only=True,
        description=(
            "Follow symlinks in the workspace's skills folders that lead outside the workspace "
            "(only in a trusted workspace)."
        ),
    )


@hookimpl
def register_tools(register: Any, options: AgentOptions) -> None:
    from ._loader import discover_skills
    from ._tools import GROUP, build_tools

    trusted = bool(getattr(options, "workspace_trusted", True))
    skills = discover_skills(
        workspace=options.workspace.root,
        skills_dir=options.get("skills_dir"),
        skills=options.get("skills"),
        workspace_trusted=trusted,
        skills_dir_trusted=trusted or not _set_by_the_workspace(options, "skills_dir"),
        follow_symlinks=options.get("skills_follow_symlinks") is True,
    )
    for definition in build_tools(skills):
        register(definition, group=GROUP)


def _set_by_the_workspace(options: AgentOptions, key: str) -> bool:
    """True when ``key`` came from a settings file inside the workspace (the
    repository's own ``.smoke/config.yaml``), or when its origin is not known.
    The person's own settings, flags and code are not the workspace's."""
    import os

    origins = options.get("settings_origin")
    origin = origins.get(key) if isinstance(origins, dict) else None
    if not isinstance(origin, str):
        return True
    if origin in ("create_agent", "flag", "default"):
        return False
    root = os.path.realpath(options.workspace.root)
    real = os.path.realpath(origin)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import skills_command

    cli.add_command(skills_command)
