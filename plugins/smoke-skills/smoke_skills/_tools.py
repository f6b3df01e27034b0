"""The ``list_skills`` and ``use_skill`` tools over one agent's skills."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._loader import Skill, slugify

if TYPE_CHECKING:
    from smoke_core import ToolContext, ToolDefinition

GROUP = "skills"
_DESCRIPTION_CHARS = 160
_IDS_IN_DESCRIPTION = 40


def instructions_for(skill: Skill) -> str:
    """The text ``use_skill`` adds to the conversation (``ctx.add_instructions``)."""
    return f"## Skill: {skill.name}\n\n{skill.body.strip()}"


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _catalogue(skills: list[Skill]) -> str:
    if not skills:
        return "No skills are available."
    return "\n".join(
        f"- {s.id}: {_truncate(s.description, _DESCRIPTION_CHARS) or '(no description)'}"
        for s in skills
    )


def _find(skills: list[Skill], wanted: str) -> Skill | None:
    by_id = {s.id: s for s in skills}
    if wanted in by_id:
        return by_id[wanted]
    slug = slugify(wanted)
    if slug in by_id:
        return by_id[slug]
    # A model may pass the display name ("PDF Tools") instead of the id.
    for s in skills:
        if s.name.strip().lower() == wanted.strip().lower():
            return s
    return None


def _closest(wanted: str, ids: list[str]) -> list[str]:
    key = slugify(wanted) or wanted.lower()
    close = difflib.get_close_matches(key, ids, n=5, cutoff=0.5)
    for i in ids:
        if len(close) >= 5:
            break
        if i not in close and key and (key in i or i in key):
            close.append(i)
    return close


def _open_for_reading(ctx: ToolContext, skill: Skill, target: Path) -> str | None:
    """Let the file tools read ``target`` (the skill's folder or file); None
    when that is done or not needed (it is inside the workspace), else the
    reason it was not opened. Only a skill from a trusted location (the
    person's own folders or settings, or code) opens a folder outside the
    workspace, and never one as broad as ``/``, the home folder or a folder
    holding the workspace."""
    real = Path(os.path.realpath(target))
    root = ctx.workspace.root
    if real == root or root in real.parents:
        return None
    if not skill.trusted:
        return (
            f"The skill's folder {target} is outside the workspace and comes from an untrusted location; "
            f"its supporting files are not readable."
        )
    home = Path(os.path.realpath(Path.home())) if _has_home() else None
    if real == Path(real.anchor) or real in root.parents or (home is not None and (real == home or real in home.parents)):
        return (
            f"The skill's folder {target} is too broad to open for reading (it is /, your home folder or "
            f"holds the workspace); move the skill into a folder of its own to use its supporting files."
        )
    ctx.workspace.allow_read(real)
    return None


def _has_home() -> bool:
    try:
        Path.home()
    except RuntimeError:
        return False
    return True


def build_tools(skills: list[Skill]) -> list[ToolDefinition]:
    """The two tools; ``skills`` is the agent's whole list (hidden ones included)."""
    from smoke_core import ToolAnnotations, ToolDefinition, ToolError, ToolPresentation, ToolResult

    visible = sorted((s for s in skills if s.model_invocable), key=lambda s: s.id)
    hidden = {s.id: s for s in skills if not s.model_invocable}

    def list_skills(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        text = _catalogue(visible)
        if visible:
            text += "\n\nCall use_skill with one of these ids to load its instructions."
        return ToolResult.text(text, data={"skills": [s.id for s in visible]})

    def use_skill(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        wanted = str(input.get("skill_id", "")).strip()
        if not wanted:
            raise ToolError(
                "skill_id is empty; call list_skills to see the skill ids",
                code="tool_invalid_input",
            )
        if wanted in hidden or slugify(wanted) in hidden:
            raise ToolError(
                f"skill {wanted!r} is marked disable-model-invocation: only a person can invoke it. "
                f"Call list_skills for the skills you can use."
            )
        skill = _find(visible, wanted)
        if skill is None:
            ids = [s.id for s in visible]
            if not ids:
                raise ToolError(
                    f"unknown skill {wanted!r}: no skills are available in this workspace"
                )
            close = _closest(wanted, ids)
            if close:
                hint = f"closest ids: {', '.join(close)}"
            else:
                shown = ids[:20]
                more = (
                    f" (and {len(ids) - len(shown)} more; call list_skills)"
                    if len(ids) > len(shown)
                    else ""
                )
                hint = f"available ids: {', '.join(shown)}{more}"
            raise ToolError(
                f"unknown skill {wanted!r}; {hint}. Call use_skill again with one of them."
            )

        added = ctx.add_instructions(instructions_for(skill))
        lines: list[str] = []
        if added:
            lines.append(
                f"Skill {skill.id!r} ({skill.name}) is loaded: its instructions are now part of your "
                f"conversation (the next message) for the rest of this run. Follow them."
            )
        else:
            lines.append(
                f"Skill {skill.id!r} ({skill.name}) was already loaded; its instructions are already in the conversation."
            )
        files: list[str] = []
        if skill.folder is not None:
            refusal = _open_for_reading(ctx, skill, skill.folder)
            if refusal:
                lines.append(refusal)
            else:
                files = skill.supporting_files()
                lines.append(f"Skill folder (read-only): {skill.folder}")
                if files:
                    lines.append(
                        "Supporting files (read them by absolute path when the instructions refer to them):"
                    )
                    lines.extend(f"- {skill.folder / f}" for f in files)
                else:
                    lines.append("The skill has no supporting files.")
        else:
            _open_for_reading(ctx, skill, skill.path)
            lines.append(f"The skill is a single file ({skill.path}); it has no supporting files.")
        if skill.allowed_tools:
            lines.append(f"Tools the skill expects: {', '.join(skill.allowed_tools)}")
        return ToolResult.text(
            "\n".join(lines),
            data={
                "skill_id": skill.id,
                "name": skill.name,
                "folder": str(skill.folder) if skill.folder else None,
                "path": str(skill.path),
                "files": files,
                "added": added,
            },
        )

    ids = [s.id for s in visible]
    listed = ", ".join(ids[:_IDS_IN_DESCRIPTION]) + (
        ", …" if len(ids) > _IDS_IN_DESCRIPTION else ""
    )
    use_description = (
        "Load a skill matching the task: its instructions join the conversation from the next turn and its "
        "files become readable by absolute path."
    )
    if listed:
        use_description += f" Available ids: {listed}."
    return [
        ToolDefinition(
            name="list_skills",
            description=(
                "List the available skills with their descriptions."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            annotations=ToolAnnotations(title="List skills", read_only_hint=True, kind="read"),
            presentation=ToolPresentation(label="List skills", icon="📚", tone="info", group=GROUP),
            execute=list_skills,
            group=GROUP,
            blocking=False,
        ),
        ToolDefinition(
            name="use_skill",
            description=use_description,
            input_schema={
                "type": "object",
                "properties": {
                    "skill_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Id as shown by list_skills.",
                    }
                },
                "required": ["skill_id"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(title="Use skill", read_only_hint=True, kind="read"),
            permission_key="skill_id",
            presentation=ToolPresentation(label="Use skill", icon="🎓", tone="info", group=GROUP),
            execute=use_skill,
            group=GROUP,
        ),
    ]
