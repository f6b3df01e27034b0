"""The editor's file system (``fs/read_text_file``, ``fs/write_text_file``)
for the filesystem tools, when the client offers it.

The tools run in worker threads; each call here sends the request on the
connection's loop and waits for the answer. The tools have already checked
the path against the workspace sandbox (smoke-tools-filesystem's
``editor_files``) and hold it pinned; the editor, though, opens the path *by
name* and follows symlinks. So that a folder swapped for a symlink between
Smoke's check and the editor's read (or write) cannot reach outside the
workspace (issue 28):

- while a background command of the agent runs (the model's way to race a
  path), nothing goes through the editor: the tools read and write through
  their pinned descriptor, which no swap can steer;
- otherwise every folder from the workspace root to the file, and the file,
  are looked at before the request and after the answer, without following
  links (device, inode, modification and change times); any difference, or a
  link on the way, refuses the answer with a clear message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: How long a tool waits for the editor to answer a read or a write.
EDITOR_TIMEOUT_S = 60.0

Snapshot = tuple[tuple[int, ...], ...]


class PathChanged(Exception):
    """A folder or the file on the way changed while the editor had the path."""


def snapshot(root: Path, path: Path, *, leaf_times: bool = True) -> Snapshot:
    """What the folders from ``root`` to ``path`` and the file are, looked at
    without following links: raises :class:`PathChanged` for a link on the way
    or a path outside ``root``. ``leaf_times=False`` leaves out what a write
    changes (the file's times, its folder's times)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise PathChanged(f"{path} is not inside the workspace {root}") from None
    parts = rel.parts
    out: list[tuple[int, ...]] = []
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(root, flags)
    try:
        for i, name in enumerate(parts[:-1]):
            st = os.fstat(fd)
            keep_times = leaf_times or i < len(parts) - 1
            out.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns) if keep_times else (st.st_dev, st.st_ino))
            try:
                nxt = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                raise PathChanged(f"{name} on the way to {path} is not a plain folder ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
        st = os.fstat(fd)
        out.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns) if leaf_times else (st.st_dev, st.st_ino))
        try:
            leaf = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False) if parts else None
        except FileNotFoundError:
            leaf = None
        if leaf is not None:
            if stat.S_ISLNK(leaf.st_mode):
                raise PathChanged(f"{path} is a symlink")
            out.append((leaf.st_dev, leaf.st_ino, leaf.st_mtime_ns, leaf.st_ctime_ns) if leaf_times
                       else (leaf.st_mode & 0o170000,))
        return tuple(out)
    finally:
        os.close(fd)


class ClientFiles:
    """``read_text`` / ``write_text`` through the ACP client (see
    ``smoke_tools_filesystem.EditorFiles``). ``read`` / ``write`` say what the
    client offered; what it did not offer goes to the disk. ``root`` is the
    workspace; ``busy()`` says a background command of the agent runs."""

    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop, *, read: bool, write: bool,
                 root: Path, busy: Callable[[], bool] = lambda: False, timeout: float = EDITOR_TIMEOUT_S) -> None:
        self._conn = conn
        self._session_id = session_id
        self._loop = loop
        self.read = read
        self.write = write
        self.root = Path(os.path.realpath(root))
        self._busy = busy
        self._timeout = timeout
        self._loop_thread = threading.get_ident()

    def _call(self, what: str, path: Path, coro: Any) -> Any:
        from smoke_core.plugin import ToolError

        if threading.get_ident() == self._loop_thread:  # never block the loop that must answer
            coro.close()
            return None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(f"the editor did not answer {what} {path} within {self._timeout:.0f} s; "
                            f"nothing was changed. Try again") from None
        except Exception as exc:
            message = getattr(exc, "data", None) or str(exc) or type(exc).__name__
            raise ToolError(f"the editor could not {what} {path}: {message}") from None

    def _guarded(self, what: str, path: Path, make: Callable[[], Any], *, leaf_times: bool) -> Any:
        from smoke_core.plugin import WorkspaceRaceError

        try:
            before = snapshot(self.root, path, leaf_times=leaf_times)
        except (PathChanged, OSError):
            return _DISK  # not a plain path inside the workspace now: the pinned descriptor decides
        answer = self._call(what, path, make())
        after: Snapshot | str
        try:
            after = snapshot(self.root, path, leaf_times=leaf_times)
        except (PathChanged, OSError) as exc:
            after = str(exc)
        if after != before:
            done = "nothing was read" if what == "read" else "the editor may have written elsewhere: check it"
            raise WorkspaceRaceError(
                f"{path} changed while the editor {'read' if what == 'read' else 'wrote'} it (a folder or the file "
                f"on the way was replaced, perhaps by a symlink); {done}. Try again, and stop whatever keeps "
                f"changing that folder"
            )
        return answer

    def read_text(self, path: Path) -> str | None:
        if not self.read or self._busy():
            return None  # the tools read their pinned descriptor
        response = self._guarded("read", path, lambda: self._conn.read_text_file(
            session_id=self._session_id, path=str(path)), leaf_times=True)
        if response is _DISK or response is None:
            return None
        return str(response.content)

    def write_text(self, path: Path, text: str) -> bool:
        if not self.write or threading.get_ident() == self._loop_thread or self._busy():
            return False  # the tools write through their pinned descriptor
        answer = self._guarded("write", path, lambda: self._conn.write_text_file(
            session_id=self._session_id, path=str(path), content=text), leaf_times=False)
        return answer is not _DISK


_DISK = object()
