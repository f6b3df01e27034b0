"""smoke-skills: SKILL.md discovery and just-in-time skills for Smoke.

Registers ``list_skills`` and ``use_skill`` (group ``skills``), the
``smoke skills`` command and, in ``smoke chat``, one ``/skill-id`` slash
command per skill a person may invoke. Skills are found once per agent, when its tools are
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
    from ._tools import GROUP, build_tools

    for definition in build_tools(_agent_skills(options)):
        register(definition, group=GROUP)


def _agent_skills(options: AgentOptions, warnings: list[str] | None = None) -> list[Skill]:
    """The skills of an agent with these options (``warnings`` collects what
    discovery would log)."""
    from ._loader import discover_skills

    trusted = bool(getattr(options, "workspace_trusted", True))
    return discover_skills(
        workspace=options.workspace.root,
        skills_dir=options.get("skills_dir"),
        skills=options.get("skills"),
        warnings=warnings,
        workspace_trusted=trusted,
        skills_dir_trusted=trusted or not _set_by_the_workspace(options, "skills_dir"),
        follow_symlinks=options.get("skills_follow_symlinks") is True,
    )


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
def register_slash_commands(register: Any, agent: Any) -> None:
    """Each skill a person may invoke is ``/skill-id [what to do]`` in a chat.
    The command asks the model to load it with ``use_skill``; a skill marked
    ``disable-model-invocation`` (which ``use_skill`` refuses) is given to
    the model inline instead, since the person chose it."""
    from ._tools import instructions_for

    for skill in _agent_skills(agent.options):
        if not skill.user_invocable:
            continue

        def invoke(args: str, chat: Any, skill: Any = skill) -> str:
            task = args.strip()
            if skill.model_invocable:
                text = f"Use the skill {skill.id!r}: load it with use_skill (skill_id {skill.id!r}) and follow it."
            else:
                text = f"Follow this skill, which I chose for this task:\n\n{instructions_for(skill)}"
            return f"{text}\n\n{task}" if task else text

        register(skill.id, invoke, description=skill.description or f"use the skill {skill.name}",
                 usage=f"/{skill.id} {skill.argument_hint or '[what to do]'}")


@hookimpl
def register_commands(cli: click.Group) -> None:
    from ._cli import skills_command

    cli.add_command(skills_command)
