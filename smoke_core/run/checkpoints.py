"""Checkpoints: the workspace's files recorded before each turn and before
each mutating tool call, so that a person can rewind what the agent changed —
including what its commands changed (the whole workspace is recorded, not
only the files the file tools wrote).

The record is a private git object store outside the workspace's own
history: ``GIT_DIR`` and its own index under the user's state folder
(``$XDG_STATE_HOME/smoke/checkpoints/<folder hash>/``), the workspace as
``GIT_WORK_TREE``. Nothing is ever committed on the person's branch, their
``.git`` (index, stash, refs, config, hooks) is never read nor written, and
a folder that is not a git repository works the same. The workspace's
``.gitignore`` files are honoured (an ignored ``node_modules/`` is not
copied), Smoke's own ``.smoke/`` is left out, and a file larger than
``checkpoint_max_file_bytes`` is skipped. git never follows a symlink (it
records the link), and no configuration of the workspace is read, so a
repository cannot make a checkpoint copy anything outside the workspace or
run a filter.

A checkpoint is a parentless commit whose message is its metadata (JSON),
named by ``refs/s/<session hash>/<number>``; pruning deletes the refs (per
session: more than ``checkpoint_keep``, older than ``checkpoint_max_age_days``)
and then the objects nobody needs. A rewind first records the current state
(so it can itself be undone), then makes the recorded files match the
checkpoint: files changed since are restored (bytes and the executable bit),
files created since are deleted. Limits: files outside the workspace,
ignored and oversized files, permissions other than the executable bit,
empty folders, nested repositories' contents and external side effects
(a database, a deployment, a sent message) are not rewound.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.markers import hookimpl
from .history import new_session_id

DEFAULT_KEEP = 100
DEFAULT_MAX_AGE_DAYS = 30
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
#: tool kinds that change things (a checkpoint is taken before each such call)
MUTATING_KINDS = ("edit", "delete", "move", "execute", "other")


class CheckpointError(Exception):
    """A checkpoint cannot be taken, found or restored; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One recorded state of the workspace."""

    number: int
    session_id: str
    created_at: float
    reason: str  # "turn", "tool", "rewind"
    label: str  # the turn's task, the tool's name, or what was rewound
    messages: int  # the session's messages when it was taken (a conversation rewind keeps these)
    commit: str

    @property
    def id(self) -> str:
        return f"{self.session_id}:{self.number}"


def describe(cp: Checkpoint) -> str:
    """One line for a person: number, time, what it was taken before."""
    from ..base.display import visible

    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(cp.created_at))
    what = {"turn": "before the turn", "tool": "before", "rewind": "saved by a rewind:"}.get(cp.reason, cp.reason)
    label = " ".join(cp.label.split())[:70]
    return f"{cp.number:>4}  {when}  {what} {visible(label)}  ({cp.messages} messages)"


def state_root() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "smoke" / "checkpoints"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class CheckpointStore:
    """The private object store of one workspace."""

    def __init__(self, workspace: Path, *, root: Path | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 keep: int = DEFAULT_KEEP, max_age_days: float = DEFAULT_MAX_AGE_DAYS) -> None:
        self.workspace = Path(workspace).resolve()
        self.git_dir = (root or state_root()) / _hash(str(self.workspace)) / "git"
        self.max_file_bytes = max_file_bytes
        self.keep = keep
        self.max_age_days = max_age_days
        self._ready = False

    # ------------------------------------------------------------ git

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({
            "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.git_dir / "smoke-index"), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_AUTHOR_NAME": "smoke", "GIT_AUTHOR_EMAIL": "smoke@localhost",
            "GIT_COMMITTER_NAME": "smoke", "GIT_COMMITTER_EMAIL": "smoke@localhost",
        })
        return env

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        try:
            proc = subprocess.run(["git", *args], cwd=self.workspace, env=self._env(), input=input,
                                  capture_output=True, timeout=600)
        except FileNotFoundError:
            raise CheckpointError("checkpoints need git, which is not installed (`smoke doctor`)") from None
        if check and proc.returncode != 0:
            raise CheckpointError(f"git {args[0]} failed: {proc.stderr.decode('utf-8', 'replace').strip()[:300]}")
        return proc.stdout

    def _init(self) -> None:
        if self._ready:
            return
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            env = {k: v for k, v in self._env().items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
            proc = subprocess.run(["git", "init", "-q", "--bare", str(self.git_dir)], env=env, capture_output=True)
            if proc.returncode != 0:
                raise CheckpointError(f"cannot make the checkpoint store in {self.git_dir}: "
                                      f"{proc.stderr.decode('utf-8', 'replace').strip()[:300]}")
            for key, value in (("core.bare", "false"), ("core.autocrlf", "false"), ("core.symlinks", "true"),
                               ("gc.auto", "0"), ("core.fsmonitor", "false"), ("core.hooksPath", os.devnull)):
                self._git("config", key, value)
            (self.git_dir / "workspace").write_text(str(self.workspace) + "\n", encoding="utf-8")
        self._ready = True

    def _write_excludes(self, oversized: list[str]) -> None:
        lines = ["/.smoke/", "/.git", *("/" + _glob_escape(p) for p in oversized)]
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(lines) + "\n", encoding="utf-8")

    # ------------------------------------------------------------ taking

    def snapshot(self, session_id: str, *, reason: str, label: str, messages: int) -> Checkpoint | None:
        """Record the workspace; None when nothing changed since the last
        checkpoint of ``session_id`` (the last one stands for now too)."""
        self._init()
        self._write_excludes(self._oversized())
        self._git("add", "-A", "--ignore-errors", ".", check=False)
        tree = self._git("write-tree").decode().strip()
        existing = self.checkpoints(session_id)
        if existing and reason != "rewind" and self._tree_of(existing[-1].commit) == tree:
            return None
        number = existing[-1].number + 1 if existing else 1
        meta = {"session_id": session_id, "reason": reason, "label": label[:200], "messages": messages,
                "created_at": time.time(), "workspace": str(self.workspace)}
        commit = self._git("commit-tree", tree, "-m", json.dumps(meta, ensure_ascii=False)).decode().strip()
        self._git("update-ref", self._ref(session_id, number), commit)
        made = self._parse(self._ref(session_id, number), commit, meta)
        self.prune(session_id, [*existing, made])
        return made

    def _oversized(self) -> list[str]:
        """Files git would record that are larger than the cap (new ones, and recorded ones that grew)."""
        # the workspace's .gitignore files only: not our own exclude list, which names the oversized files
        raw = self._git("ls-files", "-z", "--others", "--modified", "--exclude-per-directory=.gitignore",
                        "--exclude=/.smoke/", check=False)
        big = []
        for name in raw.decode("utf-8", "surrogateescape").split("\0"):
            if not name:
                continue
            try:
                st = os.lstat(self.workspace / name)
            except OSError:
                continue
            if st.st_size > self.max_file_bytes and not os.path.islink(self.workspace / name):
                big.append(name)
        if big:
            self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", *big, check=False)
        return big

    def _tree_of(self, commit: str) -> str | None:
        out = self._git("rev-parse", "-q", "--verify", f"{commit}^{{tree}}", check=False).decode().strip()
        return out or None

    def _ref(self, session_id: str, number: int) -> str:
        return f"refs/s/{_hash(session_id)}/{number:08d}"

    # ------------------------------------------------------------ reading

    def checkpoints(self, session_id: str | None = None) -> list[Checkpoint]:
        """The checkpoints of ``session_id`` (every session's when None), oldest first."""
        if not (self.git_dir / "HEAD").exists():
            return []
        self._ready = True
        prefix = f"refs/s/{_hash(session_id)}/" if session_id is not None else "refs/s/"
        out = self._git("for-each-ref", "--format=%(refname)%00%(objectname)%00%(contents)%01", prefix,
                        check=False).decode("utf-8", "replace")
        found = []
        for record in out.split("\x01"):
            record = record.strip("\n")
            if not record:
                continue
            ref, commit, body = record.split("\0", 2)
            try:
                meta = json.loads(body)
            except ValueError:
                continue
            found.append(self._parse(ref, commit, meta))
        return sorted(found, key=lambda c: (c.session_id, c.number) if session_id is None else c.number)

    @staticmethod
    def _parse(ref: str, commit: str, meta: dict[str, Any]) -> Checkpoint:
        return Checkpoint(int(ref.rsplit("/", 1)[1]), str(meta.get("session_id")), float(meta.get("created_at", 0)),
                          str(meta.get("reason", "")), str(meta.get("label", "")), int(meta.get("messages", 0)), commit)

    def find(self, session_id: str, number: int) -> Checkpoint:
        for cp in self.checkpoints(session_id):
            if cp.number == number:
                return cp
        raise CheckpointError(f"no checkpoint {number} in session {session_id!r} (it was pruned, or never "
                              f"taken); `smoke rewind` lists them")

    def diff(self, checkpoint: Checkpoint) -> str:
        """What changed in the recorded files from ``checkpoint`` to now (a unified diff)."""
        self._init()
        self._check_objects(checkpoint)
        self._write_excludes(self._oversized())
        self._git("add", "-A", "--ignore-errors", ".", check=False)
        now = self._git("write-tree").decode().strip()
        return self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--stat", "-p",
                         checkpoint.commit, now).decode("utf-8", "replace")

    def _check_objects(self, checkpoint: Checkpoint) -> None:
        out = self._git("rev-list", "--objects", "--missing=print", checkpoint.commit, check=False)
        if not out or any(line.startswith(b"?") for line in out.splitlines()):
            raise CheckpointError(f"checkpoint {checkpoint.number}'s files are no longer in the checkpoint store "
                                  f"(pruned or damaged); nothing was changed — pick a later checkpoint")

    # ------------------------------------------------------------ rewinding

    def restore(self, checkpoint: Checkpoint, *, messages: int) -> Checkpoint:
        """Make the workspace's recorded files what they were at ``checkpoint``;
        the checkpoint of the state just before (to undo the rewind)."""
        self._check_objects(checkpoint)
        before = self.snapshot(checkpoint.session_id, reason="rewind", label=f"before rewinding to "
                               f"{checkpoint.number}", messages=messages)
        assert before is not None
        self._git("read-tree", "-m", "-u", before.commit, checkpoint.commit)
        return before

    def prune(self, session_id: str, checkpoints: list[Checkpoint]) -> int:
        """Delete the refs of checkpoints past ``keep`` or ``max_age_days``, then the unneeded objects."""
        cutoff = time.time() - self.max_age_days * 86400
        doomed = checkpoints[: max(0, len(checkpoints) - self.keep)]
        doomed += [c for c in checkpoints[len(doomed):-1] if c.created_at < cutoff]
        if not doomed:
            return 0
        self._git("update-ref", "--stdin", input="".join(
            f"delete {self._ref(session_id, c.number)}\n" for c in doomed).encode())
        self._git("prune", "--expire=now", check=False)
        return len(doomed)


def _glob_escape(path: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\!#" else ch for ch in path)


# ---------------------------------------------------------------- taking them during runs


class CheckpointHooks:
    """The run's side: a checkpoint before each run (a turn) and before each
    call to a tool that may change files (none when nothing changed since
    the last one). One instance serves every agent of a plugin manager; each
    agent's store is ``options.extra["checkpoint_store"]`` (set by
    ``create_agent`` when the ``checkpoints`` setting is on). A checkpoint
    that cannot be taken is a ``run.warning`` (once a run), never a failed run."""

    async def _take(self, run: Any, reason: str, label: str) -> None:
        top = run
        while getattr(top, "parent", None) is not None:
            top = top.parent
        store = top.options.extra.get("checkpoint_store")
        session = top.session_id
        if store is None or session is None:
            return
        count = len(top.messages)
        if reason == "turn" and count and top.messages[-1]["role"] == "user":
            count -= 1  # the turn's own task: a conversation rewind goes back to before it
        try:
            await asyncio.to_thread(store.snapshot, session, reason=reason, label=label, messages=count)
        except CheckpointError as exc:
            if not top.state.get("checkpoint_warned"):
                top.state["checkpoint_warned"] = True
                run.warn(f"checkpoints are off for this run: {exc}")

    @hookimpl
    async def before_run(self, run: Any) -> None:
        if getattr(run, "parent", None) is None:
            await self._take(run, "turn", run.task)

    @hookimpl
    async def before_tool_call(self, tool_name: str, input: dict[str, Any], tool_call_id: str, run: Any) -> None:
        tool = run.tools.get(tool_name)
        if tool is not None and getattr(tool, "kind", None) in MUTATING_KINDS:
            await self._take(run, "tool", tool_name)


HOOKS = CheckpointHooks()
HOOKS_NAME = "smoke-core:checkpoints"


def checkpoint_store_for(workspace: Path, values: dict[str, Any]) -> CheckpointStore:
    """The workspace's store with the checkpoint settings of ``values``."""
    return CheckpointStore(
        workspace, keep=values.get("checkpoint_keep") or DEFAULT_KEEP,
        max_age_days=values.get("checkpoint_max_age_days") or DEFAULT_MAX_AGE_DAYS,
        max_file_bytes=values.get("checkpoint_max_file_bytes") or DEFAULT_MAX_FILE_BYTES,
    )


# ---------------------------------------------------------------- the agent's side


def rewind_agent(agent: Any, checkpoint: Checkpoint | int, conversation: bool) -> Checkpoint:
    """:meth:`Agent.rewind`: the files back to ``checkpoint`` (and, with
    ``conversation``, a new session holding the conversation as it was
    then); the checkpoint taken just before, to undo it."""
    store = agent.checkpoint_store
    if store is None:
        raise CheckpointError("checkpoints are off for this agent (the `checkpoints` setting)")
    if agent._current is not None:
        raise CheckpointError("a run is active: rewind between runs (stop it first)")
    if isinstance(checkpoint, int):
        if agent.session_id is None:
            raise CheckpointError("the agent has no session; pass a Checkpoint from agent.checkpoints(session_id)")
        target = store.find(agent.session_id, checkpoint)
    else:
        target = checkpoint
    before, new_session = rewind(store, agent.store, target, conversation=conversation)
    if new_session is not None:
        agent.session_id = agent.options.session_id = new_session
    return before


def rewind(store: CheckpointStore, sessions: Any, checkpoint: Checkpoint, *,
           conversation: bool = False) -> tuple[Checkpoint, str | None]:
    """The files back to ``checkpoint`` under the session's lease; with
    ``conversation``, a new session in ``sessions`` holding the conversation
    as it was then. The checkpoint of the state before, and the new session's id."""
    holder, leased = _lease(sessions, checkpoint.session_id)
    new_session = None
    try:
        history = list(sessions.load(checkpoint.session_id))
        before = store.restore(checkpoint, messages=len(history))
        if conversation:
            new_session = new_session_id()
            for message in history[: checkpoint.messages]:
                sessions.append(new_session, message)
    finally:
        if leased:
            sessions.release_lease(checkpoint.session_id, holder)
    return before, new_session


def _lease(session_store: Any, session_id: str) -> tuple[Any, bool]:
    """The session's lease for the time of a rewind (another process's run on it refuses the rewind)."""
    from ..store.lease import busy_error
    from ..store.protocol import DEFAULT_LEASE_TTL, LeaseHolder, LeasingStore

    holder = LeaseHolder.for_this_process()
    if not isinstance(session_store, LeasingStore):
        return holder, False
    lease = session_store.acquire_lease(session_id, holder, DEFAULT_LEASE_TTL)
    if not lease.acquired:
        message = busy_error(session_id, lease, 0).message.replace("this run did not start and wrote nothing",
                                                                   "nothing was rewound")
        raise CheckpointError(f"{message}; rewind when that run has ended")
    return holder, True
