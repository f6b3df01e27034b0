"""write_file, edit_file, replace_lines and delete_file."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smoke_core.plugin import ToolError, ToolResult

from ._files import (
    atomic_write,
    diff_stats,
    display,
    encode_text,
    not_found,
    os_errors_as_tool_errors,
    pinned,
    read_bytes,
    read_text,
    resolve_path,
    safe_text,
    unified_diff,
)

if TYPE_CHECKING:
    from smoke_core.plugin import ToolContext

#: Writes larger than this emit ``tool.progress`` events.
PROGRESS_BYTES = 1024 * 1024


def _require_str(input: dict[str, Any], key: str) -> str:
    value = input.get(key)
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string, got {type(value).__name__}")
    return value


def _summary(verb: str, name: str, diff: str) -> str:
    added, removed = diff_stats(diff)
    return f"{verb} {name} (+{added} -{removed} lines)"


def _mutated(verb: str, name: str, old: str, new: str, **extra: Any) -> ToolResult:
    diff = unified_diff(old, new, name)
    return ToolResult.text(_summary(verb, name, diff), data={"path": name, "diff": diff, **extra})


def _writable_target(ctx: ToolContext, raw: str, path: Path) -> None:
    if path == ctx.workspace.root or path.is_dir():
        raise ToolError(f"{raw!r} is a directory; give the path of a file")
    if path.exists() and not path.is_file():
        raise ToolError(f"{raw!r} is not a regular file (device, socket or pipe); it cannot be written")


def _check_parents(ctx: ToolContext, path: Path) -> None:
    """A clear error when a folder on the way is a file (the write creates missing ones)."""
    parent = path.parent
    while parent != ctx.workspace.root and not parent.exists():
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise ToolError(f"cannot create {display(ctx, path)}: {display(ctx, parent)} is a file, not a folder")


@os_errors_as_tool_errors
def write_file(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = _require_str(input, "path")
    content = _require_str(input, "content")
    path = resolve_path(ctx, raw, write=True)
    _writable_target(ctx, raw, path)
    data = encode_text(content)
    old = ""
    existed = path.exists()
    if existed:
        old_bytes = read_bytes(ctx, path)
        if old_bytes == data:
            name = display(ctx, path)
            return ToolResult.text(f"{name} already has this content; nothing written",
                                   data={"path": name, "diff": "", "unchanged": True})
        old = "" if b"\x00" in old_bytes[:8192] else old_bytes.decode("utf-8", "surrogateescape")
    _check_parents(ctx, path)
    name = display(ctx, path)
    progress = None
    if len(data) > PROGRESS_BYTES:
        def progress(done: int, total: int) -> None:
            ctx.emit_progress(f"writing {name}: {done}/{total} bytes", progress=done, total=total)
        ctx.emit_progress(f"writing {name} ({len(data)} bytes)", progress=0, total=len(data))
    atomic_write(ctx, path, data, progress=progress, make_parents=True)
    verb = "Overwrote" if existed else "Created"
    result = _mutated(verb, name, old, content, created=not existed, bytes=len(data))
    return result


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _nearest_region(text: str, needle: str) -> str:
    """The part of ``text`` that looks most like ``needle``, line-numbered."""
    lines = text.splitlines()
    want = needle.strip("\n").splitlines() or [needle]
    size = max(1, len(want))
    if not lines:
        return "(the file is empty)"
    best_ratio, best_at = -1.0, 0
    target = "\n".join(w.strip() for w in want)
    step = 1 if len(lines) <= 5000 else max(1, len(lines) // 5000)
    for i in range(0, max(1, len(lines) - size + 1), step):
        chunk = "\n".join(x.strip() for x in lines[i : i + size])
        matcher = difflib.SequenceMatcher(None, chunk, target, autojunk=False)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_at = ratio, i
    lo, hi = max(0, best_at - 2), min(len(lines), best_at + size + 2)
    return "\n".join(f"{n + 1:>6}\t{safe_text(lines[n])}" for n in range(lo, hi))


@os_errors_as_tool_errors
def edit_file(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = _require_str(input, "path")
    old_string = _require_str(input, "old_string")
    new_string = _require_str(input, "new_string")
    replace_all = bool(input.get("replace_all", False))
    path = resolve_path(ctx, raw, write=True)
    if old_string == "":
        if not path.exists():
            _writable_target(ctx, raw, path)
            _check_parents(ctx, path)
            atomic_write(ctx, path, encode_text(new_string), make_parents=True)
            name = display(ctx, path)
            return _mutated("Created", name, "", new_string, created=True)
        raise ToolError(
            "old_string is empty; give the exact text to replace (copied from read_file output without the line "
            "numbers), or use write_file to replace the whole file"
        )
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; nothing would change")
    text, _ = read_text(ctx, raw, path)
    name = display(ctx, path)
    old, new = old_string, new_string
    count = text.count(old)
    if count == 0 and "\r\n" in text:
        # the model writes \n; the file uses \r\n: match and write in the file's style
        lf_old = old.replace("\r\n", "\n")
        lf_new = new.replace("\r\n", "\n")
        crlf_old, crlf_new = lf_old.replace("\n", "\r\n"), lf_new.replace("\n", "\r\n")
        if text.count(crlf_old):
            old, new, count = crlf_old, crlf_new, text.count(crlf_old)
    if count == 0:
        for candidate in {new_string, new_string.replace("\n", "\r\n")}:
            if candidate and candidate in text:
                line = _line_of(text, text.index(candidate))
                return ToolResult.text(
                    f"edit already applied: {name} already contains new_string (at line {line}) and old_string is "
                    f"gone; nothing changed",
                    data={"path": name, "diff": "", "already_applied": True},
                )
        raise ToolError(
            f"old_string was not found in {name}. It must match the file exactly, including whitespace and "
            f"indentation (do not include read_file's line numbers). The most similar region is:\n"
            f"{_nearest_region(text, old_string)}\nRead the file again and retry with the exact text."
        )
    if count > 1 and not replace_all:
        lines: list[int] = []
        at = text.find(old)
        while at != -1 and len(lines) < 50:
            lines.append(_line_of(text, at))
            at = text.find(old, at + 1)
        raise ToolError(
            f"old_string occurs {count} times in {name} (lines {', '.join(map(str, lines))}); include more "
            f"surrounding lines to make it unique, or set replace_all=true to replace every occurrence"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    atomic_write(ctx, path, encode_text(updated))
    result = _mutated("Edited", name, text, updated, replacements=count if replace_all else 1)
    if replace_all and count > 1:
        result.content[0]["text"] += f"; {count} occurrences replaced"
    return result


def _eol_of(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


@os_errors_as_tool_errors
def replace_lines(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = _require_str(input, "path")
    replacement = _require_str(input, "replacement")
    start, end = input.get("start_line"), input.get("end_line")
    for key, value in (("start_line", start), ("end_line", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(f"{key} must be an integer line number (1-based), got {value!r}")
    assert isinstance(start, int) and isinstance(end, int)
    path = resolve_path(ctx, raw, write=True)
    text, _ = read_text(ctx, raw, path)
    name = display(ctx, path)
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if start < 1 or start > total + 1:
        raise ToolError(f"start_line {start} is out of range; {name} has {total} lines (use 1 to {total + 1})")
    if end < start - 1 or end > total:
        raise ToolError(
            f"end_line {end} is out of range; use start_line-1 ({start - 1}) to insert before start_line, or a line "
            f"from {start} to {total}"
        )
    eol = _eol_of(text)
    body = replacement.replace("\r\n", "\n")
    if body.endswith("\n"):
        body = body[:-1]
    new_lines = body.split("\n") if replacement else []
    # replacing through the last line keeps the file's "no newline at end" state
    keep_no_eol = end >= total and total > 0 and not lines[-1].endswith(("\n", "\r"))
    block = eol.join(new_lines) + ("" if keep_no_eol else eol) if new_lines else ""
    if start > total and keep_no_eol:
        lines[-1] += eol  # appending after a last line that had no newline
    updated = "".join(lines[: start - 1]) + block + "".join(lines[end:])
    if updated == text:
        return ToolResult.text(f"{name} already has this content; nothing changed",
                               data={"path": name, "diff": "", "unchanged": True})
    atomic_write(ctx, path, encode_text(updated))
    return _mutated("Replaced lines in", name, text, updated, start_line=start, end_line=end)


@os_errors_as_tool_errors
def delete_file(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = _require_str(input, "path")
    root = ctx.workspace.root
    stripped = raw.strip()
    # A symlink inside the workspace is removed itself, never its target.
    if stripped and "\x00" not in stripped and not stripped.startswith("~"):
        parent_raw, _, leaf = stripped.rstrip("/").rpartition("/")
        if leaf not in ("", ".", ".."):
            parent = resolve_path(ctx, parent_raw or ".", write=True)
            link = parent / leaf
            if link.is_symlink():
                with pinned(ctx, link, write=True, follow_leaf=False) as wp:
                    st = wp.lstat()
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        os.unlink(wp.name, dir_fd=wp.dir_fd)
                        name = display(ctx, link)
                        return ToolResult.text(f"Deleted symlink {name} (its target was left alone)",
                                               data={"path": name, "diff": "", "symlink": True})
    path = resolve_path(ctx, raw, write=True)
    if path == root:
        raise ToolError("refusing to delete the workspace root; give the path of a file")
    if not path.exists():
        raise not_found(ctx, raw)
    if path.is_dir():
        raise ToolError(f"{raw!r} is a directory; delete_file deletes single files only")
    if not path.is_file():
        raise ToolError(f"{raw!r} is not a regular file; delete_file deletes regular files only")
    with pinned(ctx, path, write=True) as wp:
        data = wp.read_bytes()  # refuses a symlink swapped in at the name
        old = "" if b"\x00" in data[:8192] else data.decode("utf-8", "surrogateescape")
        name = display(ctx, path)
        os.unlink(wp.name, dir_fd=wp.dir_fd)
    diff = unified_diff(old, "", name)
    return ToolResult.text(f"Deleted {name} ({len(data)} bytes)", data={"path": name, "diff": diff, "deleted": True})
