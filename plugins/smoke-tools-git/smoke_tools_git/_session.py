"""A git repository as the tools see it: found from the workspace, checked to
stay inside it, and run with the repository's program-running settings
neutralised (:mod:`._safe_git`)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smoke_core.plugin import ToolContext, ToolError

from ._safe_git import git_environment, parse_config_listing, repository_overrides

#: Seconds a git command may take before it is killed.
GIT_TIMEOUT_S = 120.0


@dataclass
class GitOutput:
    code: int
    stdout: str
    stderr: str
    raw: bytes = b""


def option(ctx: ToolContext, name: str, default: Any) -> Any:
    getter = getattr(ctx.options, "get", None)
    value = getter(name, None) if getter is not None else None
    return default if value is None else value


def workspace_trusted(ctx: ToolContext) -> bool:
    """``options.workspace_trusted`` (an ``AgentOptions`` attribute, or a key of a
    plain options dict in tests); trusted when nothing says otherwise, as in core."""
    value = getattr(ctx.options, "workspace_trusted", None)
    if value is None and isinstance(ctx.options, dict):
        value = ctx.options.get("workspace_trusted")
    return True if value is None else bool(value)


def literal(path: str) -> str:
    """A pathspec that means exactly this path, relative to the workspace (no globs, no magic)."""
    return f":(literal){path}"


def exclude_top(path: str) -> str:
    """A pathspec leaving out this path, given relative to the repository root."""
    return f":(exclude,literal,top){path}"


class GitSession:
    """One tool call's view of the repository. Use :meth:`open`."""

    def __init__(self, ctx: ToolContext, *, git: str, toplevel: Path, prefix: str,
                 env: dict[str, str]) -> None:
        self.ctx = ctx
        self.git = git
        self.toplevel = toplevel
        #: the workspace's folder inside the repository: "" or "sub/dir/"
        self.prefix = prefix
        self.env = env

    @classmethod
    async def open(cls, ctx: ToolContext) -> GitSession:
        """Find the repository of the workspace and check it.

        Refused with a :class:`ToolError`: no repository; a bare repository;
        a work tree that does not contain the workspace (``core.worktree``
        pointing elsewhere); and, unless the workspace is trusted, a git
        directory that is not ``<work tree>/.git`` itself (a ``.git`` file or
        symlink pointing elsewhere, a ``commondir``) or that borrows objects
        from another repository (``objects/info/alternates``).
        """
        git = shutil.which("git")
        if git is None:
            raise ToolError(
                "git is not installed (not found on PATH); install git or work without the git tools"
            )
        root = Path(ctx.workspace.root)
        base_env = git_environment()
        listing, located = await asyncio.gather(
            _run(ctx, git, base_env, ["config", "--list", "--show-scope", "-z"]),
            _run(ctx, git, base_env, ["rev-parse", "--path-format=absolute", "--git-dir",
                                      "--git-common-dir", "--show-prefix", "--show-toplevel"]),
        )
        if located.code != 0:
            raise git_error(ctx, "rev-parse", located)
        lines = located.stdout.split("\n")
        if len(lines) < 4 or not lines[3]:
            raise ToolError(f"git could not describe the repository of {root}: {located.stdout!r}")
        git_dir, common_dir, prefix, toplevel = (Path(lines[0]), Path(lines[1]), lines[2], Path(lines[3]))
        top = toplevel.resolve()
        if not (root == top or top in root.parents):
            raise ToolError(
                f"git's work tree for the workspace {root} is {top}, which does not contain it "
                f"(the repository's core.worktree setting points elsewhere); the git tools only work "
                f"on a repository whose work tree holds the workspace"
            )
        if not workspace_trusted(ctx):
            _check_git_dir(root, top, git_dir, common_dir)
        if listing.code != 0:  # without the list, the repository's drivers could not be neutralised
            raise git_error(ctx, "config", listing)
        overrides = repository_overrides(parse_config_listing(listing.raw))
        return cls(ctx, git=git, toplevel=top, prefix=prefix, env=git_environment(overrides))

    async def run(self, *args: str, config: tuple[str, ...] = (), check: bool = True) -> GitOutput:
        """``git -C <workspace> [-c config]... <args>`` with this session's
        environment; with ``check`` a non-zero exit raises :class:`ToolError`."""
        argv: list[str] = ["--no-pager"]
        for item in config:
            argv += ["-c", item]
        result = await _run(self.ctx, self.git, self.env, [*argv, *args])
        if check and result.code != 0:
            raise git_error(self.ctx, args[0], result)
        return result

    async def object_type(self, rev: str) -> str | None:
        """``commit`` / ``tree`` / ``blob`` / ``tag`` for a revision git can
        resolve, else None."""
        res = await self.run("cat-file", "-t", "--end-of-options", rev, check=False)
        if res.code != 0:
            return None
        return res.stdout.strip() or None

    async def is_commit(self, rev: str) -> bool:
        # ":/text" (newest commit whose message matches) always names a commit, and
        # takes everything after ":/" as the pattern, so it cannot be peeled with ^{commit}
        peeled = rev if rev.startswith(":/") else f"{rev}^{{commit}}"
        res = await self.run("rev-parse", "--verify", "--quiet", "--end-of-options", peeled, check=False)
        return res.code == 0


def _check_git_dir(root: Path, top: Path, git_dir: Path, common_dir: Path) -> None:
    expected = top / ".git"
    hint = ("the git tools refuse it in a workspace you have not trusted, because they would read and "
            "write another repository; trust the folder (smoke trust) if this is your own checkout")
    dot_git = expected
    if dot_git.is_symlink() or not dot_git.is_dir():
        where = dot_git.resolve() if dot_git.exists() else git_dir
        raise ToolError(f"{dot_git} is not a folder but points to the git directory {where}; {hint}")
    if git_dir.resolve() != expected or common_dir.resolve() != expected:
        raise ToolError(f"the git directory of {root} is {common_dir.resolve()}, not {expected}; {hint}")
    alternates = expected / "objects" / "info" / "alternates"
    try:
        borrowed = alternates.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        borrowed = ""
    if borrowed:
        first = borrowed.splitlines()[0]
        raise ToolError(f"{alternates} makes the repository read objects from {first}; {hint}")


async def _run(ctx: ToolContext, git: str, env: dict[str, str], args: list[str]) -> GitOutput:
    argv = [git, "-C", str(ctx.workspace.root), *args]
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
    timeout = float(option(ctx, "git_timeout_s", GIT_TIMEOUT_S))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _stop(proc)
        sub = next((a for a in args if not a.startswith("-")), "command")
        raise ToolError(f"git {sub} did not finish within {timeout:g} s and was stopped") from None
    except asyncio.CancelledError:
        await _stop(proc)
        raise
    return GitOutput(proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), out)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Kill git and anything it started (its own process group), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    await proc.wait()


def git_error(ctx: ToolContext, sub: str, result: GitOutput) -> ToolError:
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
    if "must be run in a work tree" in low or "cannot use bare repository" in low:
        return ToolError(
            f"the workspace {ctx.workspace.root} is inside a git directory or a bare repository, not a "
            f"checked-out work tree; the git tools only work in a work tree"
        )
    return ToolError(f"git {sub} failed (exit code {result.code}): {message[:4000]}")
