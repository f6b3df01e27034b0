"""The six git tools. How git is run lives in :mod:`._session` and
:mod:`._safe_git`; how revisions are read, in :mod:`._revisions`."""

from __future__ import annotations

from typing import Any

from smoke_core.plugin import (
    ToolAnnotations,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolPresentation,
    ToolResult,
    looks_secret,
)

from ._revisions import (
    BlobSpec,
    RevisionError,
    inside_prefix,
    repository_path,
    split_path,
    split_range,
)
from ._session import GIT_TIMEOUT_S, GitOutput, GitSession, exclude_top, git_error, literal, option

__all__ = ["GIT_TIMEOUT_S", "GitOutput", "build_tools", "git_add", "git_commit", "git_diff", "git_log",
           "git_show", "git_status"]

#: Characters of git output shown to the model before it is truncated.
OUTPUT_LIMIT = 20_000
DEFAULT_LOG_COUNT = 20
MAX_LOG_COUNT = 500
FALLBACK_NAME = "Smoke"
FALLBACK_EMAIL = "smoke@localhost"

#: Options every diff-producing command gets: no external diff program, no
#: textconv driver (both would run commands the repository names), no colour,
#: no descent into submodules (other repositories with their own config).
_DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all")


def truncate(text: str, limit: int, hint: str) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters at a line end, with a note saying how much is hidden."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    cut = head.rfind("\n")
    if cut > limit // 2:
        head = head[: cut + 1]
    shown = head.count("\n")
    total = text.count("\n") + (0 if text.endswith("\n") else 1)
    note = f"[output truncated: showing {shown} of {total} lines ({len(head)} of {len(text)} characters). {hint}]"
    return f"{head.rstrip(chr(10))}\n{note}", True


def _limit(ctx: ToolContext) -> int:
    return int(option(ctx, "git_output_limit", OUTPUT_LIMIT))


def _rev(value: Any, field: str = "rev") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{field} is empty; give a commit, branch, tag or range such as HEAD~1")
    rev = value.strip()
    if rev.startswith("-"):
        raise ToolError(
            f"{field} {value!r} starts with '-'; give a revision (e.g. HEAD~1, main, a1b2c3d), not an option"
        )
    if "\x00" in rev or any(ch.isspace() for ch in rev):
        raise ToolError(
            f"{field} {value!r} contains spaces or control characters; give a single revision"
        )
    return rev


def _pathspec(ctx: ToolContext, value: Any, *, write: bool = False) -> str:
    """A model path → a workspace-relative path for git (refused if it leaves the workspace)."""
    if not isinstance(value, str) or not value.strip():
        raise ToolError("path is empty; give a path inside the workspace")
    resolved = ctx.workspace.resolve(value, write=write)
    try:
        rel = resolved.relative_to(ctx.workspace.root)
    except ValueError:
        raise ToolError(
            f"path {value!r} is outside the workspace {ctx.workspace.root}; git tools only take paths inside it"
        ) from None
    text = rel.as_posix()
    return text if text else "."


async def _commit_or_range(git: GitSession, rev: str, field: str) -> None:
    """Refuse anything but a commit or a range of commits (``A..B``, ``A...B``)."""
    if split_path(rev)[1] is not None:
        raise ToolError(
            f"{field} {rev!r} names a file (<rev>:<path>); give a commit or a range such as HEAD~3..HEAD, "
            f"and the file as path="
        )
    for end in split_range(rev) or [rev]:
        if not await git.is_commit(end):
            await _not_a_commit(git, end, rev, field)


async def _not_a_commit(git: GitSession, end: str, rev: str, field: str) -> None:
    kind = await git.object_type(end)
    if kind is None:
        raise ToolError(
            f"unknown revision {end!r}: not a branch, tag, commit or HEAD~N of this repository "
            f"(see git_log for commits)"
        )
    raise ToolError(
        f"{field} {rev!r} names a {kind}, not a commit; to see a file at a revision give <commit>:<path> "
        f"(e.g. HEAD:src/app.py)"
    )


def _secret_note(hidden: list[str]) -> str:
    shown = ", ".join(hidden[:10]) + (f" and {len(hidden) - 10} more" if len(hidden) > 10 else "")
    return (
        f"[left out: {shown} — secret-looking files are not printed by the git tools; "
        f"read one with read_file, which asks the person first]"
    )


async def _secret_exclusions(git: GitSession, listing: list[str], requested: str | None) -> tuple[list[str], list[str]]:
    """Pathspecs that leave secret-looking files (``.env``, keys...) out of a
    diff, and their names. ``listing`` is the same command with
    ``--name-only --no-renames -z`` (so a renamed ``.env`` is listed under
    both names). A path the model asked for by name that looks secret has
    already been through the permission gate (which asks), so it is kept."""
    if requested is not None and looks_secret(requested):
        return [], []
    res = await git.run(*listing)
    names = [n.decode("utf-8", "replace") for n in res.raw.split(b"\0") if n.strip()]
    hidden = sorted({n for n in names if looks_secret(n)})
    return [exclude_top(n) for n in hidden], hidden


# ---------------------------------------------------------------- tools


async def git_status(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    git = await GitSession.open(ctx)
    res = await git.run("status", "--short", "--branch", "--untracked-files=all", "--ignore-submodules=all",
                        "--", literal("."))
    lines = res.stdout.rstrip("\n").splitlines()
    changes = [line for line in lines if not line.startswith("##")]
    branch = lines[0][3:] if lines and lines[0].startswith("##") else None
    text = res.stdout.rstrip("\n")
    if not changes:
        text += "\nnothing to commit, working tree clean"
    else:
        text += "\n(XY codes: X = staged, Y = unstaged; ?? = untracked, M = modified, A = added, D = deleted, R = renamed)"
    text, truncated = truncate(text, _limit(ctx), "Narrow it with git_diff{path}.")
    return ToolResult.text(
        text, data={"branch": branch, "changes": len(changes), "truncated": truncated}
    )


async def git_diff(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    git = await GitSession.open(ctx)
    options = ["diff", *_DIFF_OPTIONS]
    staged = bool(input.get("staged"))
    if staged:
        options.append("--cached")
    revs: list[str] = []
    rev = input.get("rev")
    if rev is not None:
        checked = _rev(rev)
        await _commit_or_range(git, checked, "rev")
        revs = ["--end-of-options", checked]
    path = input.get("path")
    specs = [literal(_pathspec(ctx, path))] if path is not None else [literal(".")]
    excludes, hidden = await _secret_exclusions(
        git, [*options, "--name-only", "--no-renames", "-z", *revs, "--", *specs], path
    )
    res = await git.run(*options, *revs, "--", *specs, *excludes)
    note = f"\n{_secret_note(hidden)}" if hidden else ""
    if not res.stdout.strip():
        if rev is not None:
            what = f"no differences against {rev}"
        elif staged:
            what = "no staged changes (stage files with git_add)"
        else:
            what = "no unstaged changes to tracked files (untracked files are not diffed; see git_status, or staged=true for staged changes)"
        if path is not None:
            what += f" in {path}"
        return ToolResult.text(what.capitalize() + note,
                               data={"empty": True, "truncated": False, "secret_files_left_out": hidden})
    text, truncated = truncate(
        res.stdout, _limit(ctx), "Narrow it with path=, or use git_status for the list of files."
    )
    return ToolResult.text(text + note,
                           data={"empty": False, "truncated": truncated, "secret_files_left_out": hidden})


async def git_log(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    count = int(input.get("count") or DEFAULT_LOG_COUNT)
    count = max(1, min(count, MAX_LOG_COUNT))
    git = await GitSession.open(ctx)
    args = [
        "log",
        f"--max-count={count}",
        "--date=short",
        "--pretty=format:%h %ad %an: %s",
        "--no-color",
        "--",
    ]
    path = input.get("path")
    if path is not None:
        args.append(literal(_pathspec(ctx, path)))
    elif git.prefix:
        args.append(literal("."))  # a sub-folder of a larger repository: its own history only
    res = await git.run(*args, check=False)
    if res.code != 0:
        low = res.stderr.lower()
        if "does not have any commits yet" in low or "bad default revision" in low:
            return ToolResult.text(
                "No commits yet in this repository.", data={"commits": 0, "truncated": False}
            )
        raise git_error(ctx, "log", res)
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    if not lines:
        where = f" touching {path}" if path is not None else ""
        return ToolResult.text(f"No commits{where}.", data={"commits": 0, "truncated": False})
    text, truncated = truncate("\n".join(lines), _limit(ctx), "Lower count= or give a path=.")
    if len(lines) == count:
        text += f"\n(showing the latest {count}; raise count= for more, at most {MAX_LOG_COUNT})"
    return ToolResult.text(text, data={"commits": len(lines), "truncated": truncated})


async def _blob_spec(git: GitSession, left: str, path: str, rev: str) -> BlobSpec:
    """Check ``<left>:<path>`` (or an index form): a commit, a path inside the
    workspace, not a secret-looking file."""
    if left.startswith(":"):
        commit, stage = None, left[1:]
    else:
        if not left or not await git.is_commit(left):
            raise ToolError(
                f"{left!r} in {rev!r} is not a commit; give <commit>:<path> with a branch, tag, commit id "
                f"or HEAD~N before the ':' (e.g. HEAD:src/app.py)"
            )
        commit, stage = left, "0"
    try:
        repo_path = repository_path(path, git.prefix)
    except RevisionError as exc:
        raise ToolError(f"rev {rev!r}: {exc}") from None
    if not inside_prefix(repo_path, git.prefix):
        raise ToolError(
            f"rev {rev!r} names {repo_path or 'the repository root'!r}, which is outside the workspace "
            f"(the workspace is the folder {git.prefix.rstrip('/')!r} of the repository at {git.toplevel}); "
            f"the git tools only show files inside it. A path after ':' is taken from the repository root "
            f"unless it starts with ./ (e.g. HEAD:./src/app.py)"
        )
    if looks_secret(repo_path):
        raise ToolError(
            f"git_show does not print {repo_path!r}: it looks like a secret file, and reading secrets needs "
            f"the person's approval, which git_show cannot ask for. Read the current file with read_file "
            f"(it asks the person first), or ask the person to look at this revision themselves"
        )
    return BlobSpec(commit, stage, repo_path)


async def git_show(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    rev = _rev(input.get("rev"))
    git = await GitSession.open(ctx)
    left, path = split_path(rev)
    if path is not None:
        spec = await _blob_spec(git, left, path, rev)
        res = await git.run("show", "--no-color", "--no-textconv", "--end-of-options", spec.spec())
        text, truncated = truncate(res.stdout, _limit(ctx), "Read the current file with read_file and a line range.")
        return ToolResult.text(text, data={"truncated": truncated, "path": spec.path})
    await _commit_or_range(git, rev, "rev")
    options = ["show", *_DIFF_OPTIONS]
    specs = [literal(".")]
    excludes, hidden = await _secret_exclusions(
        git, [*options, "--format=", "--name-only", "--no-renames", "-z", "--end-of-options", rev, "--", *specs],
        None,
    )
    # --sparse: a commit that changes nothing inside the workspace still shows its message
    res = await git.run(*options, "--stat", "--patch", "--sparse", "--end-of-options", rev, "--", *specs,
                        *excludes)
    text, truncated = truncate(
        res.stdout, _limit(ctx), "Use git_diff with rev= and path= to see one file."
    )
    if hidden:
        text += f"\n{_secret_note(hidden)}"
    return ToolResult.text(text, data={"truncated": truncated, "secret_files_left_out": hidden})


async def git_add(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    paths = input.get("paths")
    if not isinstance(paths, list) or not paths:
        raise ToolError(
            'paths is empty; list the files or folders to stage (e.g. ["src/app.py"] or ["."])'
        )
    specs = [_pathspec(ctx, p, write=True) for p in paths]
    git = await GitSession.open(ctx)
    await git.run("add", "--", *(literal(s) for s in specs))
    res = await git.run("status", "--short", "--ignore-submodules=all", "--", literal("."))
    staged = [line for line in res.stdout.splitlines() if line[:1] not in (" ", "?", "")]
    text = f"Staged {', '.join(specs)}.\n" + (res.stdout.rstrip("\n") or "(nothing changed)")
    return ToolResult.text(text, data={"paths": specs, "staged": len(staged)})


async def git_commit(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    message = input.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolError("message is empty; give a commit message (a short summary line)")
    if "\x00" in message:
        raise ToolError("message contains a NUL byte; remove it")
    git = await GitSession.open(ctx)
    if git.prefix:
        # a sub-folder of a larger repository: the commit must not carry changes staged outside it
        staged = await git.run("diff", "--cached", "--name-only", "--no-renames", "-z", "--ignore-submodules=all")
        names = [n.decode("utf-8", "replace") for n in staged.raw.split(b"\0") if n]
        outside = [n for n in names if not inside_prefix(n, git.prefix)]
        if outside:
            listed = ", ".join(outside[:10]) + (" ..." if len(outside) > 10 else "")
            raise ToolError(
                f"not committed: changes outside the workspace are staged ({listed}), and the commit would "
                f"include them. The workspace is the folder {git.prefix.rstrip('/')!r} of the repository at "
                f"{git.toplevel}; ask the person to commit or unstage those changes first"
            )
    config: list[str] = []
    notes: list[str] = []
    for key, fallback in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
        got = await git.run("config", "--get", key, check=False)
        if got.code == 128 or "not a git repository" in got.stderr.lower():
            raise git_error(ctx, "commit", got)
        if not got.stdout.strip():
            config.append(f"{key}={fallback}")
            notes.append(f"{key}={fallback}")
    # hooks do not run (core.hooksPath=/dev/null, --no-verify) and the commit is not signed
    res = await git.run("commit", "--no-verify", "--no-gpg-sign", "-m", message, config=tuple(config),
                        check=False)
    if res.code != 0:
        both = (res.stdout + res.stderr).lower()
        if (
            "nothing to commit" in both
            or "no changes added to commit" in both
            or "nothing added to commit" in both
        ):
            raise ToolError(
                "nothing to commit: no changes are staged. Stage files with git_add first, then commit."
            )
        raise git_error(ctx, "commit", res)
    head = await git.run("rev-parse", "HEAD")
    commit = head.stdout.strip()
    summary = res.stdout.strip().splitlines()
    text = "Committed " + commit[:12] + ("\n" + "\n".join(summary[:20]) if summary else "")
    if notes:
        text += (
            f"\nNote: no git identity is configured, so the commit was made as {' and '.join(notes)} "
            f"(set user.name / user.email in the repository to use another)."
        )
    return ToolResult.text(text, data={"commit": commit, "identity_fallback": bool(notes)})


# ---------------------------------------------------------------- definitions

_PATH = {
    "type": "string",
    "description": "Workspace-relative file or folder.",
}
_REV = {"type": "string", "minLength": 1}


def build_tools() -> list[ToolDefinition]:
    def make(
        name: str,
        description: str,
        schema: dict[str, Any],
        execute: Any,
        *,
        read_only: bool,
        label: str,
        icon: str,
        idempotent: bool = True,
        permission_key: str | None = None,
    ) -> ToolDefinition:
        schema = {"type": "object", "additionalProperties": False, **schema}
        schema.setdefault("properties", {})
        return ToolDefinition(
            name=name,
            description=description,
            input_schema=schema,
            # git_add / git_commit change the index and history, not files: "other", so the
            # loop's phases and guards do not count them as code edits.
            annotations=ToolAnnotations(
                title=label, read_only_hint=read_only, destructive_hint=False, idempotent_hint=idempotent,
                open_world_hint=False, kind="read" if read_only else "other",
            ),
            permission_key=permission_key,
            presentation=ToolPresentation(
                label=label, icon=icon, tone="info" if read_only else "warning", group="git"
            ),
            execute=execute,
            group="git",
        )

    return [
        make(
            "git_status",
            "Show the branch and changed, staged and untracked files.",
            {"properties": {}},
            git_status,
            read_only=True,
            label="Git status",
            icon="🌿",
        ),
        make(
            "git_diff",
            "Show unstaged changes as a diff; with `staged` the staged ones, with `rev` changes against a "
            "revision or range.",
            {
                "properties": {
                    "path": _PATH,
                    "staged": {"type": "boolean"},
                    "rev": _REV,
                }
            },
            git_diff,
            read_only=True,
            label="Git diff",
            icon="🔀",
            permission_key="path",
        ),
        make(
            "git_log",
            f"List recent commits, newest first; `count` defaults to {DEFAULT_LOG_COUNT}.",
            {
                "properties": {
                    "count": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LOG_COUNT,
                    },
                    "path": _PATH,
                }
            },
            git_log,
            read_only=True,
            label="Git log",
            icon="📜",
            permission_key="path",
        ),
        make(
            "git_show",
            "Show a commit (message, changed files and diff), or a file at a revision with "
            "`<commit>:<path>`.",
            {
                "properties": {
                    "rev": _REV
                },
                "required": ["rev"],
            },
            git_show,
            read_only=True,
            label="Git show",
            icon="🔎",
            permission_key="rev",
        ),
        make(
            "git_add",
            'Stage paths for the next commit; no globs, "." stages everything.',
            {
                "properties": {
                    "paths": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "description": "Workspace-relative.",
                    }
                },
                "required": ["paths"],
            },
            git_add,
            read_only=False,
            label="Git add",
            icon="📥",
        ),
        make(
            "git_commit",
            "Commit the staged changes (stage them with git_add first).",
            {
                "properties": {
                    "message": {
                        "type": "string",
                        "minLength": 1,
                    }
                },
                "required": ["message"],
            },
            git_commit,
            read_only=False,
            idempotent=False,
            label="Git commit",
            icon="✅",
        ),
    ]
