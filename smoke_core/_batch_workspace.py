"""``smoke batch``: each task's own copy of its workspace, its setup command,
and the diff of what the task changed.

- A workspace inside a git repository gets a ``git worktree`` of the
  repository's HEAD (detached), in ``<work dir>/workspaces/<task>``; the diff
  is ``git diff`` against that commit, new files included. Uncommitted changes
  of the source are not in the copy (a note in the result says so).
- Any other folder is copied there; a baseline snapshot of the copy is kept
  in a git object store outside it (``<work dir>/baselines/<task>``), so the
  diff is a ``git diff`` too and the agent sees no ``.git`` it did not have.
- ``--in-place`` runs in the folder itself; the diff is then not taken.

A copy that exists already (a task resumed) is reused as it is. ``.smoke/``,
``__pycache__`` and ``*.pyc`` are left out of diffs. Git runs with the
repository's executable settings neutralised (hooks, fsmonitor, external
diff and textconv), as smoke-tools-git does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

#: git configuration that keeps a repository's own settings from running anything
SAFE_GIT = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotepath=off",
            "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
            "-c", "core.pager=cat", "-c", "user.name=smoke batch", "-c", "user.email=smoke-batch@localhost",
            "-c", "commit.gpgSign=false", "-c", "core.autocrlf=false")
EXCLUDES = (":(exclude,glob)**/.smoke/**", ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc")
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "sessions.db", "sessions.db-*", "runs")
OUTPUT_TAIL = 4000


class GitError(RuntimeError):
    pass


async def git(*args: str, cwd: str | Path | None = None, git_dir: str | Path | None = None,
              work_tree: str | Path | None = None, check: bool = True) -> tuple[int, str]:
    """Run git without a shell; returns (exit code, stdout). stderr goes into the error."""
    argv = ["git", *SAFE_GIT]
    if git_dir is not None:
        argv += ["--git-dir", str(git_dir)]
    if work_tree is not None:
        argv += ["--work-tree", str(work_tree)]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    proc = await asyncio.create_subprocess_exec(
        *argv, *args, cwd=str(cwd) if cwd else None, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL,
    )
    out, err = await proc.communicate()
    code = proc.returncode if proc.returncode is not None else -1
    if check and code != 0:
        raise GitError(f"git {' '.join(args[:3])} failed (exit {code}): {err.decode(errors='replace').strip()[:500]}")
    return code, out.decode("utf-8", errors="replace")


@dataclass(slots=True)
class PreparedWorkspace:
    """Where a task runs, and how to diff it afterwards."""

    path: Path
    kind: str  # "worktree" | "copy" | "in-place"
    git_dir: Path | None = None  # for "copy": the baseline's object store
    root: Path | None = None  # for "worktree": the worktree's top folder
    rel: str = ""  # the workspace inside ``root``
    base: str | None = None  # the commit the diff is taken against
    notes: list[str] = field(default_factory=list)


async def _repository(source: Path) -> tuple[Path, str] | None:
    """(top folder, HEAD commit) when ``source`` is inside a git repository with a commit."""
    if shutil.which("git") is None:
        return None
    code, top = await git("rev-parse", "--show-toplevel", cwd=source, check=False)
    if code != 0 or not top.strip():
        return None
    code, head = await git("rev-parse", "--verify", "HEAD", cwd=source, check=False)
    if code != 0:
        return None
    return Path(top.strip()).resolve(), head.strip()


async def prepare(source: Path, dest: Path, baseline: Path, *, in_place: bool) -> PreparedWorkspace:
    """The task's workspace (see the module docstring)."""
    if in_place:
        return PreparedWorkspace(source, "in-place")
    repo = await _repository(source)
    if repo is not None:
        top, head = repo
        rel = "" if source == top else source.relative_to(top).as_posix()
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            await git("worktree", "add", "--detach", "--quiet", str(dest), head, cwd=top)
        prepared = PreparedWorkspace(dest / rel if rel else dest, "worktree", root=dest, rel=rel, base=head)
        pathspec = [rel or ".", *EXCLUDES]
        _, dirty = await git("status", "--porcelain", "--", *pathspec, cwd=top, check=False)
        if dirty.strip():
            prepared.notes.append(
                f"the source has uncommitted changes; the task ran on its last commit ({head[:12]}), "
                f"a git worktree, without them"
            )
        return prepared
    if not dest.exists():
        tmp = dest.with_name(dest.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        await asyncio.to_thread(shutil.copytree, source, tmp, symlinks=True, ignore=_COPY_IGNORE)
        os.replace(tmp, dest)
    prepared = PreparedWorkspace(dest, "copy", git_dir=baseline)
    if shutil.which("git") is None:
        prepared.notes.append("git is not installed, so the diff of this task is not taken")
        prepared.git_dir = None
        return prepared
    if not (baseline / "HEAD").exists():
        tmp_base = baseline.with_name(baseline.name + ".partial")
        if tmp_base.exists():
            shutil.rmtree(tmp_base)
        await git("init", "--quiet", "--bare", str(tmp_base))
        await git("add", "--all", "--", ".", *EXCLUDES, git_dir=tmp_base, work_tree=dest, cwd=dest)
        await git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", "baseline", git_dir=tmp_base,
                  work_tree=dest, cwd=dest)
        os.replace(tmp_base, baseline)
    _, head = await git("rev-parse", "HEAD", git_dir=baseline)
    prepared.base = head.strip()
    return prepared


async def diff(ws: PreparedWorkspace) -> str | None:
    """What the task changed, as a unified diff with ``a/`` ``b/`` paths relative
    to the workspace (new files included); None when it cannot be taken."""
    flags = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index", "--binary")
    if ws.kind == "worktree" and ws.root is not None and ws.base is not None:
        spec = [ws.rel or ".", *EXCLUDES]
        await git("add", "--all", "--", *spec, cwd=ws.root)
        relative = (f"--relative={ws.rel}",) if ws.rel else ()
        _, out = await git("diff", "--cached", *flags, *relative, ws.base, "--", *spec, cwd=ws.root)
        return out
    if ws.kind == "copy" and ws.git_dir is not None and ws.base is not None:
        spec = [".", *EXCLUDES]
        await git("add", "--all", "--", *spec, git_dir=ws.git_dir, work_tree=ws.path, cwd=ws.path)
        _, out = await git("diff", "--cached", *flags, ws.base, "--", *spec, git_dir=ws.git_dir,
                           work_tree=ws.path, cwd=ws.path)
        return out
    return None


@dataclass(slots=True)
class SetupOutcome:
    ok: bool
    exit_code: int | None
    output: str
    timed_out: bool = False


async def run_setup(command: str, cwd: Path, *, timeout: float, env: dict[str, str]) -> SetupOutcome:
    """Run the task's ``setup`` command with ``/bin/sh -c`` in its workspace
    (its own process group, killed whole on timeout)."""
    import signal

    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        return SetupOutcome(False, None, "", timed_out=True)
    text = out.decode("utf-8", errors="replace")
    return SetupOutcome(proc.returncode == 0, proc.returncode, text[-OUTPUT_TAIL:])
