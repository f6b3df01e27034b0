"""The workspace sandbox: every path a file tool takes goes through here.

:meth:`Workspace.resolve` says where a path leads (symlinks followed, the
target checked). Between that check and the use of the path, another process
could swap a folder for a symlink; :meth:`Workspace.open_path` closes that
window: it walks the resolved path one name at a time from a descriptor of the
workspace folder, never following a symlink (``O_NOFOLLOW`` relative to the
folder's descriptor), and hands back the descriptor of the last folder. What
is then opened, created, renamed or deleted relative to that descriptor is
inside the workspace, whatever happens to the names meanwhile.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..base.errors import ToolError

#: A folder walked through: no symlink followed, no read access needed (O_PATH on Linux).
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: How often open_path starts again when the path changed under it.
OPEN_ATTEMPTS = 3


class WorkspaceError(ToolError):
    """A path was refused by the sandbox. The message names the workspace."""


class WorkspaceRaceError(WorkspaceError):
    """The path changed while it was being opened (a folder or file was
    replaced by a symlink): nothing was touched."""


class WorkspacePath:
    """A resolved path pinned by a descriptor of its folder (see
    :meth:`Workspace.open_path`). Use it as a context manager; every
    operation is relative to ``dir_fd`` and never follows a symlink at ``name``.

    ``path`` is the absolute real path (for messages), ``name`` the last
    component (``"."`` for the workspace folder itself).
    """

    __slots__ = ("dir_fd", "name", "path")

    def __init__(self, dir_fd: int, name: str, path: Path) -> None:
        self.dir_fd = dir_fd
        self.name = name
        self.path = path

    def __repr__(self) -> str:
        return f"WorkspacePath({str(self.path)!r})"

    def __enter__(self) -> WorkspacePath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def open(self, flags: int, mode: int = 0o666) -> int:
        """``os.open`` of the pinned name (``O_NOFOLLOW``, ``O_CLOEXEC`` added).
        A symlink there now raises :class:`WorkspaceRaceError`."""
        try:
            return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and self._is_link()):
                raise _race(self.path) from None
            raise

    def lstat(self) -> os.stat_result | None:
        """The pinned name's own status (a symlink is not followed), None if it does not exist."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _is_link(self) -> bool:
        st = self.lstat()
        return st is not None and stat.S_ISLNK(st.st_mode)

    def read_bytes(self) -> bytes:
        """The content of the regular file at the pinned name."""
        fd = self.open(os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise WorkspaceError(f"{self.path} is not a regular file")
            return fh.read()


def _race(path: Path) -> WorkspaceRaceError:
    return WorkspaceRaceError(
        f"path {str(path)!r} changed while it was being opened (a folder or file was replaced by a symlink); "
        f"nothing was read or written. Try again"
    )


class Workspace:
    """Resolves model-supplied paths inside ``root``.

    Relative paths are taken from the root; absolute paths must lie inside it;
    ``..`` may be used only while the result stays inside; symlinks are
    followed and the *target* must stay inside. NUL bytes and empty paths are
    refused. Extra folders can be opened read-only with :meth:`allow_read`
    (the skills plugin does this for a skill's folder).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"workspace_path {str(path)!r} does not exist; create it or pass another folder")
        if not path.is_dir():
            raise NotADirectoryError(f"workspace_path {str(path)!r} is not a directory; pass a folder")
        self.root = path.resolve()
        self._read_roots: list[Path] = []

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def __fspath__(self) -> str:
        return str(self.root)

    def allow_read(self, folder: str | os.PathLike[str]) -> Path:
        """Open ``folder`` (outside the workspace) for reading only."""
        resolved = Path(folder).expanduser().resolve()
        if resolved not in self._read_roots:
            self._read_roots.append(resolved)
        return resolved

    @property
    def read_roots(self) -> tuple[Path, ...]:
        return tuple(self._read_roots)

    def resolve(self, path: str | os.PathLike[str] | None, *, write: bool = False) -> Path:
        """Return the absolute, symlink-free path for ``path`` or raise
        :class:`WorkspaceError` saying why it was refused."""
        if path is None:
            return self.root
        if not isinstance(path, (str, os.PathLike)):
            raise WorkspaceError(f"path must be a string, got {type(path).__name__}")
        raw = os.fspath(path)
        if isinstance(raw, bytes):
            raise WorkspaceError("path must be text, not bytes")
        if "\x00" in raw:
            raise WorkspaceError(f"path {raw!r} contains a NUL byte; give a plain path inside the workspace {self.root}")
        text = raw.strip()
        if text in ("", "."):
            return self.root
        if text.startswith("~"):
            raise WorkspaceError(
                f"path {raw!r} points at a home directory; paths must be inside the workspace {self.root}"
            )
        candidate = Path(text)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            # strict=False: a file to be created need not exist; symlinks on
            # the existing prefix are still followed.
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops
            raise WorkspaceError(f"path {raw!r} cannot be resolved ({exc}); workspace is {self.root}") from None
        if _inside(resolved, self.root):
            return resolved
        if not write:
            for extra in self._read_roots:
                if _inside(resolved, extra):
                    return resolved
        raise WorkspaceError(
            f"path {raw!r} is outside the workspace {self.root}; "
            f"use a path inside it (relative paths are taken from the workspace root)"
        )

    def open_path(
        self,
        path: str | os.PathLike[str],
        *,
        write: bool = False,
        make_parents: bool = False,
        follow_leaf: bool = True,
    ) -> WorkspacePath:
        """Resolve ``path`` as :meth:`resolve` does, then pin it: open each
        folder on the way from the workspace (or read-only) root with
        ``O_NOFOLLOW``, relative to the one before. ``make_parents`` creates
        missing folders the same way. ``follow_leaf=False`` leaves a symlink
        at the last name as it is (to delete the link itself). Raises
        :class:`WorkspaceError` (refused), :class:`WorkspaceRaceError` (the
        path kept changing), ``FileNotFoundError`` (a folder on the way is
        missing) or ``NotADirectoryError``."""
        for attempt in range(OPEN_ATTEMPTS):
            try:
                return self._open_once(path, write=write, make_parents=make_parents, follow_leaf=follow_leaf)
            except WorkspaceRaceError:
                if attempt == OPEN_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _open_once(
        self, path: str | os.PathLike[str], *, write: bool, make_parents: bool, follow_leaf: bool
    ) -> WorkspacePath:
        resolved: Path | None = None
        if not follow_leaf and isinstance(path, (str, os.PathLike)):
            text = os.fspath(path)
            if isinstance(text, str) and "\x00" not in text and not text.strip().startswith("~"):
                stripped = text.strip()
                parent, _, leaf = stripped.rstrip("/").rpartition("/")
                if leaf not in ("", ".", ".."):
                    parent = parent or ("/" if stripped.startswith("/") else ".")
                    resolved = self.resolve(parent, write=write) / leaf
        if resolved is None:
            resolved = self.resolve(path, write=write)
        base = self.root
        if not _inside(resolved, self.root):
            base = next(r for r in self._read_roots if _inside(resolved, r))
        parts = [] if resolved == base else list(resolved.relative_to(base).parts)
        fd = os.open(base, _DIR_FLAGS)
        for name in parts[:-1]:
            fd = _step(fd, name, resolved, make_parents=make_parents)  # closes the fd it was given
        return WorkspacePath(fd, parts[-1] if parts else ".", resolved)

    def relative(self, path: Path) -> str:
        """The path as the model should see it (relative to the root when inside)."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return "." if str(rel) == "." else rel.as_posix()


def _step(fd: int, name: str, resolved: Path, *, make_parents: bool) -> int:
    """Open folder ``name`` below ``fd`` without following a symlink; closes ``fd``."""
    try:
        try:
            nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not make_parents:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
            except FileExistsError:
                pass
            nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            raise _race(resolved) from None
        if stat.S_ISLNK(st.st_mode):
            raise _race(resolved) from None
        raise NotADirectoryError(errno.ENOTDIR, f"{name} is a file, not a folder") from None
    finally:
        os.close(fd)
    return nfd


def _inside(path: Path, root: Path) -> bool:
    # a string prefix test: `root in path.parents` is quadratic on deep paths
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)
