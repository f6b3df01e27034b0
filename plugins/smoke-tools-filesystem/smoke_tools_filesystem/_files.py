"""Sandboxed path resolution and safe file I/O shared by the filesystem tools."""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from smoke_core.plugin import ToolError, WorkspacePath, WorkspaceRaceError

if TYPE_CHECKING:
    from smoke_core.plugin import ToolContext

#: Folders never walked when looking for close matches.
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".smoke"})
#: Diffs larger than this are cut in ToolResult.data (UIs only need a preview).
MAX_DIFF_CHARS = 200_000

F = TypeVar("F", bound=Callable[..., Any])


class EditorFiles(Protocol):
    """Text files read and written through a host that holds them open: an
    editor speaking the Agent Client Protocol (``fs/read_text_file``,
    ``fs/write_text_file``), so reads see unsaved buffers and writes land in
    open buffers. Both are called from the tool's worker thread with an
    absolute path the workspace sandbox has already checked (inside the
    workspace, no symlink leading out). Raise :class:`ToolError` on failure."""

    def read_text(self, path: Path) -> str | None:
        """The text the editor holds for ``path``; None: not offered, read the disk."""

    def write_text(self, path: Path, text: str) -> bool:
        """Write ``text`` to ``path`` through the editor; False: not offered, write the disk."""


_editor_files: ContextVar[EditorFiles | None] = ContextVar("smoke_tools_filesystem.editor_files", default=None)


@contextlib.contextmanager
def editor_files(files: EditorFiles | None) -> Iterator[None]:
    """Route the filesystem tools' text reads and writes through ``files``
    for the code running in this context (an agent run started inside the
    ``with`` block, its tool threads included)."""
    token = _editor_files.set(files)
    try:
        yield
    finally:
        _editor_files.reset(token)


def current_editor_files() -> EditorFiles | None:
    return _editor_files.get()


def is_utf8_text(data: bytes) -> bool:
    """Text an editor can hold as it is: no NUL byte, valid UTF-8."""
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def os_errors_as_tool_errors(fn: F) -> F:
    """Turn OS and encoding failures into clean tool errors (no tracebacks for the model)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except UnicodeError as exc:
            raise ToolError(f"the path or text cannot be encoded as UTF-8 ({exc}); use plain UTF-8 text") from None
        except (OSError, ValueError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ToolError(f"file system error: {detail}") from None

    return wrapper  # type: ignore[return-value]


def _inside(path: Path, root: Path) -> bool:
    text, base = str(path), str(root)
    return text == base or text.startswith(base.rstrip("/") + "/")


def resolve_path(ctx: ToolContext, path: Any, *, write: bool) -> Path:
    """Resolve ``path`` through the workspace sandbox, then re-check the real
    path (symlinks followed once more) so nothing outside can be touched."""
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}")
    try:
        path.encode("utf-8", "surrogateescape")
    except UnicodeError:
        raise ToolError(
            f"path {path!r} is not valid text (lone surrogate characters); give a plain path inside the "
            f"workspace {ctx.workspace.root}"
        ) from None
    try:
        resolved = ctx.workspace.resolve(path, write=write)
    except (UnicodeError, ValueError) as exc:
        raise ToolError(f"path {path!r} cannot be used ({exc}); workspace is {ctx.workspace.root}") from None
    real = Path(os.path.realpath(resolved))
    roots = [ctx.workspace.root] if write else [ctx.workspace.root, *ctx.workspace.read_roots]
    if not any(_inside(real, root) for root in roots):
        raise ToolError(
            f"path {path!r} leads outside the workspace {ctx.workspace.root} through a symlink; "
            f"use a path inside the workspace"
        )
    return real


def display(ctx: ToolContext, path: Path) -> str:
    return ctx.workspace.relative(path)


def workspace_files(root: Path, limit: int = 20_000) -> list[str]:
    """Relative paths of files in the workspace (heavy folders skipped, symlinks not followed)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
            if len(out) >= limit:
                return out
    return out


def close_matches(ctx: ToolContext, raw: str, n: int = 5) -> list[str]:
    files = workspace_files(ctx.workspace.root)
    wanted = raw.strip().lstrip("./")
    found = difflib.get_close_matches(wanted, files, n=n, cutoff=0.5)
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
    for name in difflib.get_close_matches(wanted.rsplit("/", 1)[-1], list(by_name), n=n, cutoff=0.6):
        for f in by_name[name]:
            if f not in found:
                found.append(f)
    return found[:n]


def not_found(ctx: ToolContext, raw: str, what: str = "file") -> ToolError:
    matches = close_matches(ctx, raw)
    message = f"{what} {raw!r} does not exist in the workspace {ctx.workspace.root}."
    if matches:
        message += " Did you mean: " + ", ".join(matches) + "?"
    else:
        message += " Use list_directory or glob to find the right path."
    return ToolError(message)


def require_file(ctx: ToolContext, raw: str, path: Path) -> None:
    if not path.exists():
        raise not_found(ctx, raw)
    if path.is_dir():
        raise ToolError(f"{raw!r} is a directory, not a file; use list_directory to see what is inside")
    if not path.is_file():
        raise ToolError(f"{raw!r} is not a regular file (device, socket or pipe); it cannot be used here")


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def pinned(
    ctx: ToolContext, path: Path, *, write: bool, make_parents: bool = False, follow_leaf: bool = True
) -> WorkspacePath:
    """``path`` (already resolved) pinned by its folder's descriptor: what is
    read or written through it is inside the workspace even if a folder on
    the way is swapped for a symlink meanwhile (see ``Workspace.open_path``)."""
    return ctx.workspace.open_path(str(path), write=write, make_parents=make_parents, follow_leaf=follow_leaf)


def read_bytes(ctx: ToolContext, path: Path) -> bytes:
    """The bytes of a regular file, opened race-free inside the workspace (or
    a read-only folder); a UTF-8 text file's content comes from the editor
    when :func:`editor_files` routes reads there (its unsaved buffer)."""
    with pinned(ctx, path, write=False) as wp:
        data = wp.read_bytes()
    editor = _editor_files.get()
    if editor is not None and is_utf8_text(data):
        text = editor.read_text(path)
        if text is not None:
            return encode_text(text)
    return data


def read_text(ctx: ToolContext, raw: str, path: Path) -> tuple[str, bytes]:
    """Text of a file for editing: UTF-8, undecodable bytes kept as surrogate
    escapes so writing back preserves them. Binary files are refused."""
    require_file(ctx, raw, path)
    data = read_bytes(ctx, path)
    if looks_binary(data[:8192]):
        raise ToolError(f"{raw!r} is a binary file; the filesystem tools edit text files only")
    return data.decode("utf-8", "surrogateescape"), data


def encode_text(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ToolError("the text contains characters that cannot be written as UTF-8 (lone surrogates)") from None


def atomic_write(
    ctx: ToolContext,
    path: Path,
    data: bytes,
    *,
    progress: Callable[[int, int], None] | None = None,
    make_parents: bool = False,
    chunk: int = 1 << 20,
) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and a
    rename: readers see the old or the new file, never half of one. The
    folder is pinned by its descriptor, so the temp file is created
    (``O_EXCL | O_NOFOLLOW``) and renamed inside the workspace whatever
    happens to the names on the way. An existing file's mode is kept; a new
    file gets the umask default. ``make_parents`` creates missing folders.
    UTF-8 text goes through the editor instead when :func:`editor_files`
    routes writes there (the path is checked the same way first)."""
    editor = _editor_files.get()
    with pinned(ctx, path, write=True, make_parents=make_parents) as wp:
        st = wp.lstat()
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise WorkspaceRaceError(
                f"{path} was replaced by a symlink while it was being written; nothing was written. Try again"
            )
        if editor is not None and is_utf8_text(data) and editor.write_text(path, data.decode("utf-8")):
            if progress is not None:
                progress(len(data), len(data))
            return
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        tmp = f".{wp.name[:40]}.{secrets.token_hex(6)}.smoke-tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=wp.dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                total = len(data)
                for start in range(0, max(total, 1), chunk):
                    fh.write(data[start : start + chunk])
                    if progress is not None:
                        progress(min(start + chunk, total), total)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, wp.name, src_dir_fd=wp.dir_fd, dst_dir_fd=wp.dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=wp.dir_fd)
            except OSError:
                pass
            raise


def unlink(ctx: ToolContext, path: Path) -> None:
    """Delete the file or symlink at ``path`` itself (a link is not followed)."""
    with pinned(ctx, path, write=True, follow_leaf=False) as wp:
        os.unlink(wp.name, dir_fd=wp.dir_fd)


def remove_folder(ctx: ToolContext, path: Path) -> None:
    """Remove the empty folder at ``path`` (a link there is not followed)."""
    with pinned(ctx, path, write=True, follow_leaf=False) as wp:
        os.rmdir(wp.name, dir_fd=wp.dir_fd)


def unified_diff(old: str, new: str, name: str) -> str:
    """A unified diff of two texts, cut at MAX_DIFF_CHARS."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    parts: list[str] = []
    size = 0
    for line in difflib.unified_diff(
        old_lines, new_lines, fromfile=f"a/{name}" if old_lines else "/dev/null",
        tofile=f"b/{name}" if new_lines else "/dev/null", n=3,
    ):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        parts.append(line)
        size += len(line)
        if size > MAX_DIFF_CHARS:
            parts.append("... diff truncated ...\n")
            break
    return safe_text("".join(parts))


def diff_stats(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def safe_text(text: str) -> str:
    """Text safe to send to a model (surrogate escapes shown as U+FFFD)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if _has_surrogates(text) else text


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
