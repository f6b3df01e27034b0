"""The workspace sandbox: every path a file tool takes goes through here."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ToolError


class WorkspaceError(ToolError):
    """A path was refused by the sandbox. The message names the workspace."""


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

    def relative(self, path: Path) -> str:
        """The path as the model should see it (relative to the root when inside)."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return "." if str(rel) == "." else rel.as_posix()


def _inside(path: Path, root: Path) -> bool:
    # a string prefix test: `root in path.parents` is quadratic on deep paths
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)
