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
import fcntl
import hashlib
import os
import shutil
import subprocess
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


def _git_sync(argv: list[str], cwd: str | None, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", errors="replace"), proc.stderr.decode(errors="replace")


def _git_env() -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    return env


async def git(*args: str, cwd: str | Path | None = None, git_dir: str | Path | None = None,
              work_tree: str | Path | None = None, check: bool = True) -> tuple[int, str]:
    """Run git without a shell (in a worker thread: asyncio's child watcher
    costs a thread per process); returns (exit code, stdout). stderr goes into the error."""
    argv = ["git", *SAFE_GIT]
    if git_dir is not None:
        argv += ["--git-dir", str(git_dir)]
    if work_tree is not None:
        argv += ["--work-tree", str(work_tree)]
    argv += list(args)
    code, out, err = await asyncio.to_thread(_git_sync, argv, str(cwd) if cwd else None, _git_env())
    if check and code != 0:
        raise GitError(f"git {' '.join(args[:3])} failed (exit {code}): {err.strip()[:500]}")
    return code, out


def _add_worktree(top: Path, dest: Path, head: str, lock: Path) -> None:
    """``git worktree add`` under a lock file: concurrent adds to one
    repository (other tasks, other workers of this machine) race on its
    ``.git/worktrees`` metadata."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    ready = lock.parent / f"{dest.name}.ready"
    with open(lock, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            if dest.exists() and ready.exists():
                return  # a resumed task: its worktree is kept as it was left
            if dest.exists():  # registered, never checked out (a crash in between): start it again
                _git_sync(["git", *SAFE_GIT, "worktree", "remove", "--force", str(dest)], str(top), _git_env())
                shutil.rmtree(dest, ignore_errors=True)
            # only the registration is locked; the files are checked out below, in parallel
            argv = ["git", *SAFE_GIT, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(dest), head]
            code, _, err = _git_sync(argv, str(top), _git_env())
            if code != 0:
                raise GitError(f"git worktree add failed (exit {code}): {err.strip()[:500]}")
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    code, _, err = _git_sync(["git", *SAFE_GIT, "reset", "--hard", "--quiet"], str(dest), _git_env())
    if code != 0:
        raise GitError(f"checking out the worktree {dest} failed (exit {code}): {err.strip()[:500]}")
    ready.write_text("ok\n")


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


@dataclass(frozen=True, slots=True)
class _Repository:
    top: Path
    head: str
    dirty: bool


#: per (source, work folder): the repository is looked at once per batch, so
#: every task of the batch starts from the same commit
_repositories: dict[tuple[str, str], _Repository | None] = {}


async def _repository(source: Path, work: Path) -> _Repository | None:
    """The git repository ``source`` is in (with a commit), or None."""
    key = (str(source), str(work))
    if key in _repositories:
        return _repositories[key]
    found = None
    if shutil.which("git") is not None:
        code, out = await git("rev-parse", "--show-toplevel", "--verify", "HEAD", cwd=source, check=False)
        lines = out.split()
        if code == 0 and len(lines) == 2:
            top, head = Path(lines[0]).resolve(), lines[1]
            rel = "" if source == top else source.relative_to(top).as_posix()
            _, status = await git("status", "--porcelain", "--", rel or ".", *EXCLUDES, cwd=top, check=False)
            found = _Repository(top, head, bool(status.strip()))
    _repositories[key] = found
    return found


async def prepare(source: Path, dest: Path, baseline: Path, *, in_place: bool) -> PreparedWorkspace:
    """The task's workspace (see the module docstring); ``dest`` is
    ``<work dir>/workspaces/<task>``."""
    if in_place:
        return PreparedWorkspace(source, "in-place")
    work = dest.parent.parent
    repo = await _repository(source, work)
    if repo is not None:
        rel = "" if source == repo.top else source.relative_to(repo.top).as_posix()
        if not (dest.exists() and (work / "locks" / f"{dest.name}.ready").exists()):
            dest.parent.mkdir(parents=True, exist_ok=True)
            lock = work / "locks" / f"worktree-{hashlib.sha1(str(repo.top).encode()).hexdigest()[:12]}.lock"
            await asyncio.to_thread(_add_worktree, repo.top, dest, repo.head, lock)
        prepared = PreparedWorkspace(dest / rel if rel else dest, "worktree", root=dest, rel=rel, base=repo.head)
        if repo.dirty:
            prepared.notes.append(
                f"the source has uncommitted changes; the task ran on its last commit ({repo.head[:12]}), "
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
