"""Finding and parsing skills: ``SKILL.md`` files with YAML frontmatter.

Pure functions over the file system; no agent, no tools. PyYAML is imported
on first parse, not when the plugin is loaded.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("smoke.skills")

#: Folders under the workspace (and then under the home directory) searched
#: for skills, in precedence order.
SKILL_SUBDIRS: tuple[str, ...] = (
    ".smoke/skills",
    ".claude/skills",
    ".codex/skills",
    ".opencode/skills",
    ".agents/skills",
)

#: Searched last, after the home folders.
EXTRA_HOME_DIRS: tuple[str, ...] = (".config/opencode/skills",)

# Markdown files next to skills that are documentation, not skills.
_NOT_SKILLS = frozenset(
    {"readme.md", "license.md", "changelog.md", "contributing.md", "agents.md", "claude.md"}
)
# Folders never worth walking into.
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".hg", ".svn"})
_MAX_SUPPORTING_FILES = 200

#: How deep below a skills folder a ``SKILL.md`` is looked for (``<dir>/<skill>/SKILL.md`` is 1).
MAX_SKILL_DEPTH = 4
#: Folders visited at most per skills folder (and per skill's supporting files).
MAX_DIRS_SCANNED = 2000
#: Skills loaded at most from one skills folder.
MAX_SKILLS_PER_DIR = 500


@dataclass(slots=True)
class Skill:
    """One skill, as loaded from its markdown file.

    ``id`` is what a model passes to ``use_skill`` (see :func:`skill_id_for`);
    ``name`` is the display name from the frontmatter (the id when absent).
    ``metadata`` keeps every frontmatter key except ``name`` and
    ``description`` (license, version, a nested ``metadata`` map, ...).
    ``folder`` is the skill's own folder for ``<dir>/<skill>/SKILL.md`` and
    None for a single-file skill ``<dir>/<skill>.md``. ``source_dir`` is the
    skills folder it was found under.
    """

    id: str
    name: str
    description: str
    body: str
    path: Path
    folder: Path | None
    source_dir: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    allowed_tools: list[str] = field(default_factory=list)
    user_invocable: bool = True
    disable_model_invocation: bool = False
    argument_hint: str | None = None
    #: False for a skill found in the workspace (a repository's text): its
    #: folder is not opened for reading beyond the workspace.
    trusted: bool = True

    @property
    def model_invocable(self) -> bool:
        """False when the frontmatter says ``disable-model-invocation: true``."""
        return not self.disable_model_invocation

    def supporting_files(self, *, limit: int = _MAX_SUPPORTING_FILES) -> list[str]:
        """Files of the skill's folder other than its ``SKILL.md``, relative
        to the folder, sorted (at most ``limit``). Empty for single-file skills."""
        if self.folder is None or not self.folder.is_dir():
            return []
        out: list[str] = []
        visited = 0
        for root, dirs, files in os.walk(self.folder):
            visited += 1
            depth = len(Path(root).relative_to(self.folder).parts)
            if visited >= MAX_DIRS_SCANNED or depth >= MAX_SKILL_DEPTH:
                dirs[:] = []
            else:
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(files):
                full = Path(root) / name
                if full == self.path:
                    continue
                out.append(full.relative_to(self.folder).as_posix())
                if len(out) >= limit:
                    return out
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (paths as strings)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "folder": str(self.folder) if self.folder else None,
            "source_dir": str(self.source_dir) if self.source_dir else None,
            "metadata": self.metadata,
            "allowed_tools": list(self.allowed_tools),
            "user_invocable": self.user_invocable,
            "disable_model_invocation": self.disable_model_invocation,
            "argument_hint": self.argument_hint,
            "trusted": self.trusted,
        }


class SkillParseError(ValueError):
    """A skill file could not be used; the message names the file and the reason."""


# ---------------------------------------------------------------- ids


def slugify(text: str) -> str:
    """Lower-case; runs of anything but ``a-z 0-9 _ -`` become one ``-``."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", slug).strip("-")


def skill_id_for(path: Path) -> str:
    """The id of the skill in ``path``: the folder name for
    ``<dir>/<skill>/SKILL.md``, the file stem for ``<dir>/<skill>.md``,
    slugified (``PDF Tools`` -> ``pdf-tools``)."""
    base = path.parent.name if path.name.lower() == "skill.md" else path.stem
    return slugify(base)


# ---------------------------------------------------------------- parsing


def parse_skill_file(
    path: str | os.PathLike[str], *, source_dir: str | os.PathLike[str] | None = None
) -> Skill:
    """Load one skill file. Raises :class:`SkillParseError` naming the file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SkillParseError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")  # drops a BOM
    except UnicodeDecodeError as exc:
        raise SkillParseError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_skill_text(
        text, path=p, source_dir=Path(source_dir) if source_dir is not None else None
    )


def parse_skill_text(text: str, *, path: Path, source_dir: Path | None = None) -> Skill:
    """Parse the text of a skill file (frontmatter + markdown body)."""
    import yaml

    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    front, body = _split_frontmatter(text, path)
    try:
        data = yaml.safe_load(front) if front.strip() else {}
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 2}"  # +1 for 1-based, +1 for the opening '---'
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillParseError(
            f"{path}: the YAML frontmatter is broken{where} ({problem}); "
            f"quote values that contain ': ' or start with a special character"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillParseError(
            f"{path}: the frontmatter must be a YAML mapping of keys, got {type(data).__name__}"
        )
    data = {str(k): v for k, v in data.items()}

    skill_id = skill_id_for(path)
    if not skill_id:
        raise SkillParseError(
            f"{path}: no usable skill id can be made from the file or folder name"
        )
    body = body.strip("\n")
    name = _text(data.get("name")) or skill_id
    description = _text(data.get("description"))
    if not description:
        description = _first_paragraph(body)

    tools_value = None
    for key in ("allowed-tools", "allowed_tools", "allowedTools", "tools"):
        if data.get(key) is not None:
            tools_value = data[key]
            break

    hint = data.get("argument-hint", data.get("argument_hint"))
    return Skill(
        id=skill_id,
        name=name,
        description=description,
        body=body,
        path=path,
        folder=path.parent if path.name.lower() == "skill.md" else None,
        source_dir=source_dir,
        metadata={k: v for k, v in data.items() if k not in ("name", "description")},
        allowed_tools=_tool_list(tools_value),
        user_invocable=_flag(data.get("user-invocable", data.get("user_invocable")), default=True),
        disable_model_invocation=_flag(
            data.get("disable-model-invocation", data.get("disable_model_invocation")),
            default=False,
        ),
        argument_hint=_hint(hint),
    )


def _split_frontmatter(text: str, path: Path) -> tuple[str, str]:
    lines = text.split("\n")
    # Leading blank lines before the opening fence are tolerated.
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or lines[start].rstrip() != "---":
        raise SkillParseError(
            f"{path}: no YAML frontmatter; a skill file starts with '---', then at least "
            f"'name:' and 'description:', then '---'"
        )
    for end in range(start + 1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            return "\n".join(lines[start + 1 : end]), "\n".join(lines[end + 1 :])
    raise SkillParseError(
        f"{path}: the YAML frontmatter is never closed; add a line '---' after it"
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    return str(value).strip()


def _first_paragraph(body: str) -> str:
    """The first paragraph of prose in ``body`` (headings and fences skipped), on one line."""
    para: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            if para:
                break
            continue
        if in_fence:
            continue
        if not stripped or stripped.startswith("#"):
            if para:
                break
            continue
        para.append(stripped)
    return " ".join(" ".join(para).split())


def _flag(value: Any, *, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        return default
    return bool(value)


def _hint(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        # `argument-hint: [issue-number]` is a YAML flow list; show it as written.
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value).strip() or None


def _tool_list(value: Any) -> list[str]:
    """``allowed-tools`` as a list: a YAML list, a comma string or a space string
    (``Bash(git add:*) Read`` keeps the parenthesised part whole)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value)
    sep_is_comma = "," in text
    out: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        is_sep = ch == "," if sep_is_comma else ch.isspace()
        if is_sep and depth == 0:
            out.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    out.append("".join(current).strip())
    return [t for t in out if t]


# ---------------------------------------------------------------- discovery


def find_skill_files(
    directory: str | os.PathLike[str],
    *,
    confine_to: str | os.PathLike[str] | None = None,
    warnings: list[str] | None = None,
) -> list[Path]:
    """Skill files under ``directory``, in the order they take precedence:
    ``<dir>/<skill>.md`` files first, then ``SKILL.md`` files found
    recursively (dot-folders such as ``.curated`` included), shallower before
    deeper, then by path. A folder holding a ``SKILL.md`` is not searched
    further (its other files are the skill's supporting files); when
    ``directory`` itself holds a ``SKILL.md`` it is that one skill.

    The search is bounded: :data:`MAX_SKILL_DEPTH` folders deep,
    :data:`MAX_DIRS_SCANNED` folders and :data:`MAX_SKILLS_PER_DIR` skills
    (a warning says when a bound cut it short). Symlinks are followed, except,
    with ``confine_to``, those that lead outside that folder: a skill file or
    folder whose real path is not inside it is skipped with a warning."""
    root = Path(directory)
    if not root.is_dir():
        return []
    fence = Path(os.path.realpath(confine_to)) if confine_to is not None else None

    def allowed(path: Path) -> bool:
        if fence is None:
            return True
        real = os.path.realpath(path)
        if _inside(real, fence):
            return True
        _warn(
            f"skipped {path}: it is a symlink to {real}, outside the workspace {fence} "
            f"(skills found in the workspace do not follow links out of it)",
            warnings,
        )
        return False

    if not allowed(root):
        return []
    own = next(
        (p for p in sorted(root.glob("*")) if p.name.lower() == "skill.md" and p.is_file()), None
    )
    if own is not None:
        return [own] if allowed(own) else []  # the folder given is itself one skill
    flat: list[Path] = []
    nested: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        if (
            entry.suffix.lower() == ".md"
            and entry.is_file()
            and entry.name.lower() not in _NOT_SKILLS
            and allowed(entry)
        ):
            flat.append(entry)
    seen: set[str] = set()
    visited = 0
    cut: str | None = None
    for current, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(current)
        if real in seen:  # symlink loop
            dirs[:] = []
            continue
        seen.add(real)
        here = Path(current)
        visited += 1
        if here != root:
            marker = next((f for f in sorted(files) if f.lower() == "skill.md"), None)
            if marker is not None:
                if allowed(here / marker):
                    nested.append(here / marker)
                dirs[:] = []
                if len(flat) + len(nested) >= MAX_SKILLS_PER_DIR:
                    cut = f"after {MAX_SKILLS_PER_DIR} skills"
                    break
                continue
        if visited >= MAX_DIRS_SCANNED:
            cut = f"after {MAX_DIRS_SCANNED} folders"
            break
        if len(here.relative_to(root).parts) >= MAX_SKILL_DEPTH:
            dirs[:] = []
            continue
        # a link out of the fence is dropped before os.walk lists what it points at
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and allowed(here / d))
    if cut is not None:
        _warn(f"stopped looking for skills in {root} {cut}; skills beyond that were not loaded", warnings)
    nested.sort(key=lambda p: (len(p.relative_to(root).parts), p.as_posix()))
    return (flat + nested)[:MAX_SKILLS_PER_DIR]


def load_skills_from_dirs(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    warnings: list[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
) -> list[Skill]:
    """Load every skill under ``paths`` (searched in order; the first skill
    with a given id wins). A file that cannot be used is skipped: the reason
    is logged on ``smoke.skills`` and appended to ``warnings`` when given.
    A missing folder is skipped silently. Never raises for bad skill files.

    With ``workspace``, a folder inside it is a repository's: its symlinks
    are not followed out of the workspace (unless ``follow_symlinks``) and
    its skills are marked ``trusted=False``."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: dict[str, Skill] = {}
    seen_dirs: set[Path] = set()
    ws = Path(os.path.abspath(workspace)) if workspace is not None else None
    for entry in paths:
        directory = Path(entry).expanduser()
        try:
            key = directory.resolve()
        except OSError:
            key = directory
        if key in seen_dirs:
            continue
        seen_dirs.add(key)
        in_workspace = ws is not None and _inside(os.path.abspath(directory), ws)
        confine = ws if in_workspace and not follow_symlinks else None
        for file in find_skill_files(directory, confine_to=confine, warnings=warnings):
            try:
                skill = parse_skill_file(file, source_dir=directory)
            except SkillParseError as exc:
                _warn(f"skipped skill {exc}", warnings)
                continue
            if skill.id in found:
                log.debug("skill %s in %s is shadowed by %s", skill.id, file, found[skill.id].path)
                continue
            skill.trusted = not in_workspace or follow_symlinks
            found[skill.id] = skill
    return list(found.values())


def _inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    p, r = os.fspath(path), os.fspath(root).rstrip(os.sep)
    return p == r or p.startswith(r + os.sep)


def default_skill_dirs(
    workspace: str | os.PathLike[str] | None, *, home: Path | None = None
) -> list[Path]:
    """The default folders, in precedence order: the workspace's
    ``.smoke/skills``, ``.claude/skills``, ``.codex/skills``,
    ``.opencode/skills``, ``.agents/skills``; the same under the home
    directory; then ``~/.config/opencode/skills``."""
    dirs: list[Path] = []
    if workspace is not None:
        dirs.extend(Path(workspace) / sub for sub in SKILL_SUBDIRS)
    try:
        home = home if home is not None else Path.home()
    except RuntimeError:  # no home directory can be determined
        home = None
    if home is not None:
        dirs.extend(home / sub for sub in SKILL_SUBDIRS)
        dirs.extend(home / sub for sub in EXTRA_HOME_DIRS)
    return dirs


def resolve_skill_dirs(
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    workspace: str | os.PathLike[str] | None,
) -> list[Path]:
    """The folders to search: ``skills_dir`` (one path or a list; relative
    paths are taken from the workspace) when given, else :func:`default_skill_dirs`."""
    if skills_dir is None:
        return default_skill_dirs(workspace)
    items = [skills_dir] if isinstance(skills_dir, (str, os.PathLike)) else list(skills_dir)
    out: list[Path] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                f"skills_dir takes a path or a list of paths, got {type(item).__name__}"
            )
        p = Path(item).expanduser()
        if not p.is_absolute() and workspace is not None:
            p = Path(workspace) / p
        out.append(p)
    return out


def discover_skills(
    *,
    workspace: str | os.PathLike[str] | None,
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    skills: Iterable[Skill] | None = None,
    warnings: list[str] | None = None,
    workspace_trusted: bool = True,
    follow_symlinks: bool = False,
    skills_dir_trusted: bool | None = None,
) -> list[Skill]:
    """The skills an agent gets. ``skills`` (already loaded) come first and
    win on an id clash; folders are searched when ``skills_dir`` is given, or
    when ``skills`` is not given (the defaults). A ``skills_dir`` that does
    not exist is reported as a warning.

    Skill folders inside the workspace never lead out of it through a
    symlink, unless ``follow_symlinks`` and ``workspace_trusted`` are both
    true. A ``skills_dir`` outside the workspace is refused with a warning
    unless ``skills_dir_trusted`` (default: ``workspace_trusted``) — false when
    the value came from an untrusted repository's own settings."""
    if skills_dir_trusted is None:
        skills_dir_trusted = workspace_trusted
    out: dict[str, Skill] = {}
    if skills is not None:
        for s in skills:
            if not isinstance(s, Skill):
                raise TypeError(
                    f"skills= takes smoke_skills.Skill objects (from load_skills_from_dirs), got {type(s).__name__}"
                )
            out.setdefault(s.id, s)
    if skills_dir is not None or skills is None:
        dirs = resolve_skill_dirs(skills_dir, workspace)
        if skills_dir is not None:
            kept: list[Path] = []
            for d in dirs:
                if not skills_dir_trusted and workspace is not None and not _inside(
                    os.path.realpath(d), os.path.realpath(workspace)
                ):
                    _warn(
                        f"skills_dir {str(d)!r} is outside the workspace and was set by the workspace's own "
                        f"settings, which are not trusted; no skills loaded from it (trust the workspace folder, "
                        f"or set skills_dir in your own settings)",
                        warnings,
                    )
                    continue
                if not d.is_dir():
                    _warn(
                        f"skills_dir {str(d)!r} is not a folder; no skills loaded from it", warnings
                    )
                kept.append(d)
            dirs = kept
        loaded = load_skills_from_dirs(
            dirs, warnings=warnings, workspace=workspace,
            follow_symlinks=follow_symlinks and workspace_trusted,
        )
        for s in loaded:
            out.setdefault(s.id, s)
    return list(out.values())


def _warn(message: str, warnings: list[str] | None) -> None:
    log.warning("%s", message)
    if warnings is not None:
        warnings.append(message)
