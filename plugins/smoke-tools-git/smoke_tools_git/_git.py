"""Running git (argv only, never a shell) and the six git tools."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from typing import Any

from smoke_core.context import ToolContext
from smoke_core.errors import ToolError
from smoke_core.tools import ToolAnnotations, ToolDefinition, ToolPresentation, ToolResult

#: Seconds a git command may take before it is killed.
GIT_TIMEOUT_S = 120.0
#: Characters of git output shown to the model before it is truncated.
OUTPUT_LIMIT = 20_000
DEFAULT_LOG_COUNT = 20
MAX_LOG_COUNT = 500
FALLBACK_NAME = "Smoke"
FALLBACK_EMAIL = "smoke@localhost"

_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_OPTIONAL_LOCKS": "0",
    # Paths are file names, never pathspec magic (":(top)", globs) that could reach outside the workspace.
    "GIT_LITERAL_PATHSPECS": "1",
    "NO_COLOR": "1",
    "TERM": "dumb",
}


@dataclass
class GitOutput:
    code: int
    stdout: str
    stderr: str


def _option(ctx: ToolContext, name: str, default: Any) -> Any:
    getter = getattr(ctx.options, "get", None)
    value = getter(name, None) if getter is not None else None
    return default if value is None else value


async def run_git(
    ctx: ToolContext, *args: str, config: tuple[str, ...] = (), check: bool = True
) -> GitOutput:
    """Run ``git -C <workspace> <args>`` without a shell. With ``check`` a
    non-zero exit raises :class:`ToolError` with git's message."""
    git = shutil.which("git")
    if git is None:
        raise ToolError(
            "git is not installed (not found on PATH); install git or work without the git tools"
        )
    root = str(ctx.workspace.root)
    argv = [git, "-C", root, "--no-pager", "-c", "color.ui=false", "-c", "core.quotepath=false"]
    for item in config:
        argv += ["-c", item]
    argv += list(args)
    env = dict(os.environ)
    env.update(_ENV)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"could not run git: {exc}") from None
    timeout = float(_option(ctx, "git_timeout_s", GIT_TIMEOUT_S))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _stop(proc)
        raise ToolError(
            f"git {args[0]} did not finish within {timeout:g} s and was stopped"
        ) from None
    except asyncio.CancelledError:
        await _stop(proc)
        raise
    result = GitOutput(
        proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )
    if check and result.code != 0:
        raise _git_error(ctx, args[0], result)
    return result


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Kill git and anything it started (its own process group), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    await proc.wait()


def _git_error(ctx: ToolContext, sub: str, result: GitOutput) -> ToolError:
    message = result.stderr.strip() or result.stdout.strip() or f"exit code {result.code}"
    low = message.lower()
    if "not a git repository" in low:
        return ToolError(
            f"not a git repository: the workspace {ctx.workspace.root} is not inside a git repository. "
            f"Run `git init` there (with run_command) to create one, or work without the git tools."
        )
    if "dubious ownership" in low:
        return ToolError(
            f"git refused the repository at {ctx.workspace.root} because it belongs to another user: {message}"
        )
    return ToolError(f"git {sub} failed (exit code {result.code}): {message[:4000]}")


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
    return int(_option(ctx, "git_output_limit", OUTPUT_LIMIT))


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


# ---------------------------------------------------------------- tools


async def git_status(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    res = await run_git(ctx, "status", "--short", "--branch", "--untracked-files=all")
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
    args = ["diff", "--no-color", "--no-ext-diff"]
    staged = bool(input.get("staged"))
    if staged:
        args.append("--cached")
    rev = input.get("rev")
    if rev is not None:
        args += ["--end-of-options", _rev(rev)]
    args.append("--")
    path = input.get("path")
    if path is not None:
        args.append(_pathspec(ctx, path))
    res = await run_git(ctx, *args)
    if not res.stdout.strip():
        if rev is not None:
            what = f"no differences against {rev}"
        elif staged:
            what = "no staged changes (stage files with git_add)"
        else:
            what = "no unstaged changes to tracked files (untracked files are not diffed; see git_status, or staged=true for staged changes)"
        if path is not None:
            what += f" in {path}"
        return ToolResult.text(what.capitalize(), data={"empty": True, "truncated": False})
    text, truncated = truncate(
        res.stdout, _limit(ctx), "Narrow it with path=, or use git_status for the list of files."
    )
    return ToolResult.text(text, data={"empty": False, "truncated": truncated})


async def git_log(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    count = int(input.get("count") or DEFAULT_LOG_COUNT)
    count = max(1, min(count, MAX_LOG_COUNT))
    args = [
        "log",
        f"--max-count={count}",
        "--date=short",
        "--pretty=format:%h %ad %an: %s",
        "--no-color",
    ]
    path = input.get("path")
    args.append("--")
    if path is not None:
        args.append(_pathspec(ctx, path))
    res = await run_git(ctx, *args, check=False)
    if res.code != 0:
        low = res.stderr.lower()
        if "does not have any commits yet" in low or "bad default revision" in low:
            return ToolResult.text(
                "No commits yet in this repository.", data={"commits": 0, "truncated": False}
            )
        raise _git_error(ctx, "log", res)
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    if not lines:
        where = f" touching {path}" if path is not None else ""
        return ToolResult.text(f"No commits{where}.", data={"commits": 0, "truncated": False})
    text, truncated = truncate("\n".join(lines), _limit(ctx), "Lower count= or give a path=.")
    if len(lines) == count:
        text += f"\n(showing the latest {count}; raise count= for more, at most {MAX_LOG_COUNT})"
    return ToolResult.text(text, data={"commits": len(lines), "truncated": truncated})


async def git_show(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    rev = _rev(input.get("rev"))
    res = await run_git(
        ctx, "show", "--stat", "--patch", "--no-color", "--no-ext-diff", "--end-of-options", rev
    )
    text, truncated = truncate(
        res.stdout, _limit(ctx), "Use git_diff with rev= and path= to see one file."
    )
    return ToolResult.text(text, data={"truncated": truncated})


async def git_add(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    paths = input.get("paths")
    if not isinstance(paths, list) or not paths:
        raise ToolError(
            'paths is empty; list the files or folders to stage (e.g. ["src/app.py"] or ["."])'
        )
    specs = [_pathspec(ctx, p, write=True) for p in paths]
    await run_git(ctx, "add", "--", *specs)
    res = await run_git(ctx, "status", "--short")
    staged = [line for line in res.stdout.splitlines() if line[:1] not in (" ", "?", "")]
    text = f"Staged {', '.join(specs)}.\n" + (res.stdout.rstrip("\n") or "(nothing changed)")
    return ToolResult.text(text, data={"paths": specs, "staged": len(staged)})


async def git_commit(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    message = input.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolError("message is empty; give a commit message (a short summary line)")
    if "\x00" in message:
        raise ToolError("message contains a NUL byte; remove it")
    config: list[str] = []
    notes: list[str] = []
    for key, fallback in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
        got = await run_git(ctx, "config", "--get", key, check=False)
        if got.code == 128 or "not a git repository" in got.stderr.lower():
            raise _git_error(ctx, "commit", got)
        if not got.stdout.strip():
            config.append(f"{key}={fallback}")
            notes.append(f"{key}={fallback}")
    res = await run_git(ctx, "commit", "-m", message, config=tuple(config), check=False)
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
        raise _git_error(ctx, "commit", res)
    head = await run_git(ctx, "rev-parse", "HEAD")
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
        permission_key: str | None = None,
    ) -> ToolDefinition:
        schema = {"type": "object", "additionalProperties": False, **schema}
        schema.setdefault("properties", {})
        return ToolDefinition(
            name=name,
            description=description,
            input_schema=schema,
            annotations=ToolAnnotations(
                title=label, read_only_hint=read_only, destructive_hint=False if read_only else None,
                kind="read" if read_only else "edit",
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
        ),
        make(
            "git_show",
            "Show a commit: message, changed files and diff.",
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
            label="Git commit",
            icon="✅",
        ),
    ]
