"""read_file and list_directory."""

from __future__ import annotations

import base64
import io
import os
import stat
from typing import TYPE_CHECKING, Any

from smoke_core.plugin import ToolError, ToolResult

from ._files import (
    current_editor_files,
    display,
    encode_text,
    is_utf8_text,
    looks_binary,
    not_found,
    os_errors_as_tool_errors,
    pinned,
    resolve_path,
)

if TYPE_CHECKING:
    from smoke_core.plugin import ToolContext

#: Lines shown by one read_file call when no end_line is given (and at most).
DEFAULT_WINDOW = 2000
MAX_LINE_CHARS = 2000
MAX_WINDOW_CHARS = 200_000
#: the largest image read_file returns (Anthropic's limit for one image); a
#: larger one is scaled down when Pillow is installed, else refused
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: images larger than this are refused outright rather than decoded to scale
MAX_SCALABLE_IMAGE_BYTES = 50 * 1024 * 1024
#: Text files up to this size are read through the editor when it holds them (editor_files).
MAX_EDITOR_BYTES = 10 * 1024 * 1024
IMAGE_TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
}
DEFAULT_LIST_LIMIT = 200
MAX_LIST_LIMIT = 2000


def _downscaled(raw: bytes, name: str, size: int) -> tuple[bytes, str, str]:
    """An image over :data:`MAX_IMAGE_BYTES` made small enough with Pillow
    (halving until it fits, as PNG or JPEG), or a ToolError saying why not."""
    try:
        from PIL import Image
    except ImportError:
        raise ToolError(
            f"{name} is an image of {size} bytes, more than the {MAX_IMAGE_BYTES} bytes read_file returns; "
            f"resize it first (or install Pillow, and read_file scales large images down)"
        ) from None
    import io

    try:
        img: Image.Image = Image.open(io.BytesIO(raw))
        img.load()
    except Exception as exc:
        raise ToolError(f"{name} could not be read as an image ({exc}); it may be cut or damaged") from None
    fmt, mime = ("PNG", "image/png") if img.mode in ("RGBA", "LA", "P") else ("JPEG", "image/jpeg")
    if fmt == "JPEG" and img.mode != "RGB":
        img = img.convert("RGB")
    width, height = img.size
    while True:
        out = io.BytesIO()
        img.save(out, format=fmt, optimize=True, **({"quality": 85} if fmt == "JPEG" else {}))
        data = out.getvalue()
        if len(data) <= MAX_IMAGE_BYTES or min(img.size) <= 16:
            break
        img = img.resize((max(1, img.size[0] // 2), max(1, img.size[1] // 2)))
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(f"{name} stays larger than {MAX_IMAGE_BYTES} bytes even scaled down; crop it first")
    caption = (f"{name} ({size} bytes, {width}x{height}) scaled down to {img.size[0]}x{img.size[1]} "
               f"({mime}, {len(data)} bytes) to fit the {MAX_IMAGE_BYTES}-byte limit")
    return data, mime, caption


def _image_mime(head: bytes, suffix: str) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _int_arg(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{name} must be an integer line number (1-based), got {value!r}")
    return value


@os_errors_as_tool_errors
def read_file(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = input.get("path")
    path = resolve_path(ctx, raw, write=False)
    assert isinstance(raw, str)
    if not path.exists():
        raise not_found(ctx, raw)
    if path.is_dir():
        raise ToolError(f"{raw!r} is a directory; use list_directory to see its entries")
    if not path.is_file():
        raise ToolError(f"{raw!r} is not a regular file (device, socket or pipe); read_file reads files only")
    name = display(ctx, path)
    start = _int_arg(input.get("start_line"), "start_line") or 1
    end = _int_arg(input.get("end_line"), "end_line")
    if start < 1:
        raise ToolError(f"start_line must be 1 or more (lines are numbered from 1), got {start}")
    if end is not None and end < start:
        raise ToolError(f"end_line ({end}) is before start_line ({start}); give end_line >= start_line")
    window_capped = False
    if end is None:
        end = start + DEFAULT_WINDOW - 1
    elif end - start + 1 > DEFAULT_WINDOW:
        end = start + DEFAULT_WINDOW - 1
        window_capped = True

    with pinned(ctx, path, write=False) as wp:
        fd = wp.open(os.O_RDONLY | os.O_NONBLOCK)  # no symlink followed, a FIFO does not block
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolError(f"{raw!r} is not a regular file (device, socket or pipe); read_file reads files only")
        head = fh.read(8192)
        mime = IMAGE_TYPES.get(path.suffix.lower()) and _image_mime(head, path.suffix.lower())
        if mime:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_SCALABLE_IMAGE_BYTES:
                raise ToolError(
                    f"{name} is an image of {size} bytes, too large to send or to scale down here "
                    f"(the limit is {MAX_SCALABLE_IMAGE_BYTES} bytes); resize or crop it first"
                )
            fh.seek(0)
            raw_image = fh.read()
            caption = f"{name} ({mime}, {size} bytes)"
            if size > MAX_IMAGE_BYTES:
                raw_image, mime, caption = _downscaled(raw_image, name, size)
            data = base64.b64encode(raw_image).decode("ascii")
            result = ToolResult.image(data, mime, caption=caption)
            result.data = {"path": name, "mime_type": mime, "bytes": size, "sent_bytes": len(raw_image)}
            return result
        if looks_binary(head):
            size = os.fstat(fh.fileno()).st_size
            raise ToolError(
                f"{name} is a binary file ({size} bytes); read_file shows text files and png/jpg/gif/webp images "
                f"only. Inspect it with a command (e.g. `file` or `xxd`) if you have a terminal tool."
            )
        fh.seek(0)
        lines_source: Any = fh
        editor = current_editor_files()
        if editor is not None and os.fstat(fh.fileno()).st_size <= MAX_EDITOR_BYTES:
            whole = fh.read()
            fh.seek(0)
            text_in_editor = editor.read_text(path) if is_utf8_text(whole) else None
            if text_in_editor is not None:  # the editor's buffer, unsaved changes included
                lines_source = io.BytesIO(encode_text(text_in_editor))
        out: list[str] = []
        total = 0
        chars = 0
        bad_utf8 = False
        cut_by_chars = False
        long_lines = 0
        last_shown = start - 1
        for line_bytes in lines_source:
            total += 1
            if total < start or total > end or cut_by_chars:
                continue
            body = line_bytes.rstrip(b"\n").rstrip(b"\r")
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = body.decode("utf-8", "replace")
                bad_utf8 = True
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f" ... [line cut: {len(text)} characters]"
                long_lines += 1
            entry = f"{total:>6}\t{text}"
            if chars + len(entry) > MAX_WINDOW_CHARS and out:
                cut_by_chars = True
                continue
            chars += len(entry) + 1
            out.append(entry)
            last_shown = total

    if total == 0:
        return ToolResult.text(f"{name} is empty (0 lines).", data={"path": name, "total_lines": 0})
    if start > total:
        raise ToolError(
            f"start_line {start} is past the end of {name}, which has {total} lines; use a start_line from 1 to {total}"
        )
    notes: list[str] = []
    if bad_utf8:
        notes.append(
            f"[note: {name} is not valid UTF-8; undecodable bytes are shown as U+FFFD. Edits keep the original bytes.]"
        )
    body_text = "\n".join(out)
    tail: list[str] = []
    if last_shown < total:
        reason = "the output size limit" if cut_by_chars else ("the 2000-line window" if (
            window_capped or input.get("end_line") is None) else "end_line")
        tail.append(
            f"[lines {start}-{last_shown} of {total} shown ({reason}); call read_file with "
            f"start_line={last_shown + 1} to read on]"
        )
    elif start > 1:
        tail.append(f"[lines {start}-{last_shown} of {total} shown; end of file]")
    if long_lines:
        tail.append(f"[{long_lines} long line(s) cut at {MAX_LINE_CHARS} characters]")
    text = "\n".join([*notes, body_text, *tail])
    return ToolResult.text(
        text,
        data={
            "path": name,
            "start_line": start,
            "end_line": last_shown,
            "total_lines": total,
            "truncated": last_shown < total or start > 1,
            "encoding_errors": bad_utf8,
        },
    )


@os_errors_as_tool_errors
def list_directory(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    raw = input.get("path")
    if raw is None:
        raw = "."
    path = resolve_path(ctx, raw, write=False)
    if not path.exists():
        raise not_found(ctx, raw, what="directory")
    if not path.is_dir():
        raise ToolError(f"{raw!r} is a file, not a directory; use read_file to read it")
    offset = _int_arg(input.get("offset"), "offset") or 0
    limit = _int_arg(input.get("limit"), "limit") or DEFAULT_LIST_LIMIT
    if offset < 0:
        raise ToolError(f"offset must be 0 or more, got {offset}")
    if limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}")
    limit = min(limit, MAX_LIST_LIMIT)
    entries: list[tuple[str, str]] = []
    with pinned(ctx, path, write=False) as wp:
        fd = wp.open(os.O_RDONLY | os.O_DIRECTORY)
    # the harness's own folder is left out of the root listing (list it by path)
    hide = {".smoke"} if path == ctx.workspace.root else set()
    try:
        with os.scandir(fd) as it:  # (entries stat relative to fd: keep it open meanwhile)
            for entry in it:
                if entry.name in hide:
                    continue
                name = entry.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    entries.append((name, f"{name}  (unreadable)"))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    entries.append((name, f"{name}@  (symlink)"))
                elif stat.S_ISDIR(st.st_mode):
                    entries.append((name, f"{name}/"))
                elif stat.S_ISREG(st.st_mode):
                    entries.append((name, f"{name}  ({_size(st.st_size)})"))
                else:
                    entries.append((name, f"{name}  (special file)"))
    finally:
        os.close(fd)
    entries.sort(key=lambda e: e[0])
    total = len(entries)
    shown = entries[offset : offset + limit]
    where = display(ctx, path)
    lines = [f"{where}/ ({total} entries)" if where != "." else f"./ ({total} entries)"]
    lines += [text for _, text in shown]
    if not shown and total:
        lines.append(f"[offset {offset} is past the last entry; use an offset below {total}]")
    rest = total - offset - len(shown)
    if rest > 0:
        lines.append(f"[{rest} more entries not shown; call list_directory with offset={offset + len(shown)}]")
    return ToolResult.text(
        "\n".join(lines),
        data={"path": where, "total": total, "offset": offset, "entries": [n for n, _ in shown]},
    )


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
