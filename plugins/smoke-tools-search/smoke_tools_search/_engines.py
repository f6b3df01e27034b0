"""The two search engines: ripgrep (``rg`` from the ``ripgrep`` wheel) and a
pure-Python fallback. Both return the same structures in the same order, so
the formatting in ``_tools`` is shared and their outputs are identical."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from smoke_core.plugin import ToolError

from ._glob import compile_glob, plain_globs
from ._walk import (
    MAX_FILE_BYTES,
    SECRET_DIR_GLOBS,
    SECRET_NAME_GLOBS,
    SKIP_NAMES,
    breathe,
    display_name,
    secret_part,
    walk_files,
)

#: Force an engine: "rg", "python", or None for automatic (rg when found).
#: The environment variable SMOKE_SEARCH_ENGINE does the same.
ENGINE: str | None = None
#: Matching lines collected at most per search; beyond it the count is "at least".
HARD_CAP = 20_000
_STREAM_LIMIT = 64 * 1024 * 1024
_READ_CHUNK = 1024 * 1024


@dataclass
class FileHits:
    path: str
    matches: list[int] = field(default_factory=list)
    lines: dict[int, str] = field(default_factory=dict)


@dataclass
class GrepOutcome:
    files: list[FileHits]
    capped: bool = False
    #: the time budget ran out: the matches are partial
    timed_out: bool = False


def find_rg() -> str | None:
    """``rg`` next to the running interpreter (the ripgrep wheel installs it there), else on PATH."""
    name = "rg.exe" if os.name == "nt" else "rg"
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def choose_engine() -> tuple[str, str | None]:
    """("rg", path) or ("python", None), honouring ENGINE / SMOKE_SEARCH_ENGINE."""
    wanted = (ENGINE or os.environ.get("SMOKE_SEARCH_ENGINE") or "auto").strip().lower()
    if wanted not in ("auto", "rg", "python"):
        raise ToolError(f"SMOKE_SEARCH_ENGINE must be rg, python or auto, got {wanted!r}")
    if wanted == "python":
        return "python", None
    rg = find_rg()
    if rg is None:
        if wanted == "rg":
            raise ToolError("the rg binary was not found; install it with `pip install ripgrep==14.1.0`")
        return "python", None
    return "rg", rg


def _line_text(raw: str) -> str:
    if raw.endswith("\n"):
        raw = raw[:-1]
    if raw.endswith("\r"):
        raw = raw[:-1]
    return raw


def sort_key(path: str) -> tuple[bytes, ...]:
    return tuple(part.encode("utf-8", "surrogatepass") for part in path.split("/"))


# ---------------------------------------------------------------- ripgrep


def _rg_common(cwd: Path, start: str, *, sort: bool = True, skip_secrets: bool = False) -> list[str]:
    args = [
        "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-global", "--no-ignore-exclude",
        "--no-ignore-parent", "--no-config", "--max-filesize", str(MAX_FILE_BYTES), "--no-messages",
    ]
    if sort:
        args += ["--sort", "path"]
    for name in SKIP_NAMES:
        args += ["--glob", f"!{name}"]
    if skip_secrets:
        for glob in SECRET_NAME_GLOBS:
            args += ["--iglob", f"!{glob}"]
        for glob in SECRET_DIR_GLOBS:
            args += ["--glob", f"!{glob}"]
    if start and (cwd / ".gitignore").is_file() and not (cwd / ".gitignore").is_symlink():
        args += ["--ignore-file", str(cwd / ".gitignore")]
    return args


async def _run_rg(
    argv: list[str],
    cwd: Path,
    on_chunk: Callable[[bytes], bool],
    cancelled: asyncio.Event | None,
    deadline: float | None = None,
    *,
    in_thread: bool = False,
) -> tuple[int, str]:
    """Run rg, feeding raw stdout chunks to ``on_chunk`` until it returns False
    (rg is then killed); an empty chunk marks the end of the output. At the
    ``deadline`` (``time.monotonic()``) rg is killed and ``on_chunk`` is not
    called again. ``in_thread``: call ``on_chunk`` in a worker thread (its
    work then never holds the event loop). Returns (exit code, stderr). The
    process is always reaped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP_")}
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, limit=_STREAM_LIMIT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stopped = False
    err_task = asyncio.ensure_future(proc.stderr.read())
    try:
        while True:
            if cancelled is not None and cancelled.is_set():
                stopped = True
                break
            if deadline is None:
                chunk = await proc.stdout.read(_READ_CHUNK)
            else:
                try:
                    chunk = await asyncio.wait_for(
                        proc.stdout.read(_READ_CHUNK), max(0.0, deadline - time.monotonic())
                    )
                except TimeoutError:
                    stopped = True
                    break
            if not (await asyncio.to_thread(on_chunk, chunk) if in_thread else on_chunk(chunk)):
                stopped = True
                break
            if not chunk:
                break
    finally:
        if proc.returncode is None and stopped:
            proc.kill()
        if proc.returncode is None:
            try:
                await proc.stdout.read()
            except Exception:
                pass
        stderr = await err_task
        code = await proc.wait()
    if cancelled is not None and cancelled.is_set():
        raise ToolError("search cancelled", code="tool_cancelled")
    return (0 if stopped else code), stderr.decode("utf-8", "replace")


async def rg_files_raw(
    rg: str,
    cwd: Path,
    start: str,
    cancelled: asyncio.Event | None = None,
    *,
    skip_secrets: bool = False,
    deadline: float | None = None,
) -> tuple[bytes, bool]:
    """(rg's NUL-separated file list, True when the deadline cut it short)."""
    argv = [rg, "--files", "--null", *_rg_common(cwd, start, skip_secrets=skip_secrets)]
    if start:
        argv += ["--", start]
    chunks: list[bytes] = []
    finished = False

    def take(chunk: bytes) -> bool:
        nonlocal finished
        chunks.append(chunk)
        finished = not chunk
        return True

    code, err = await _run_rg(argv, cwd, take, cancelled, deadline)
    data = b"".join(chunks)
    if code == 2 and not data:
        raise ToolError(f"rg failed: {err.strip() or 'exit status 2'}")
    if not finished:
        data = data[: data.rfind(b"\0") + 1]  # a name cut short is dropped
    return data, not finished


async def rg_files(rg: str, cwd: Path, start: str, cancelled: asyncio.Event | None = None) -> list[str]:
    data, _ = await rg_files_raw(rg, cwd, start, cancelled)
    return [display_name(p) for p in data.split(b"\0") if p]


#: One record of ``rg --no-heading --with-filename --line-number --null``:
#: PATH NUL LINE-NUMBER (':' match | '-' context) TEXT NEWLINE.
_RG_LINE = re.compile(r"([^\0]*)\0([0-9]+)([:-])([^\n]*)\n")
#: The same on bytes, or the notice (no NUL) rg prints when it meets binary
#: data after a match; for output the fast path cannot take.
_RG_RECORD = re.compile(
    rb'(?P<warn>[^\0]*?: WARNING: stopped searching binary file after match \(found "\\0" byte around offset \d+\)\n)'
    rb"|(?P<path>[^\0]*)\0(?P<num>[0-9]+)(?P<sep>[:-])(?P<text>[^\n]*)\n"
)


def _rg_records(buf: bytes, final: bool) -> tuple[list[tuple[str, str, str, str]], int]:
    """Parse the complete records at the head of ``buf``: ([(path, number,
    separator, text)], bytes used). Decoding the whole block at once equals
    decoding each field, as every field ends at an ASCII byte."""
    end = len(buf) if final else buf.rfind(b"\n") + 1
    block = buf[:end]
    records = _RG_LINE.findall(block.decode("utf-8", "replace"))
    if len(records) == block.count(b"\n"):
        return records, end  # one record per line: no newline in a path, no notice
    out: list[tuple[str, str, str, str]] = []
    pos = 0
    while pos < end:
        m = _RG_RECORD.match(buf, pos, end)
        if m is None:
            if not final:
                break  # a record cut short (its path holds a newline): wait for more
            nl = buf.find(b"\n", pos)  # unknown output at the very end: skip a line
            pos = end if nl < 0 else nl + 1
            continue
        pos = m.end()
        if m.group("path") is not None:
            path, num, sep, text = (g.decode("utf-8", "replace") for g in m.group("path", "num", "sep", "text"))
            out.append((path, num, sep, text))
    return out, pos


def _path_order(path: str) -> tuple[bytes, ...]:
    # rg --sort path and the Python walker: depth first, entries by name bytes
    return tuple(part.encode("utf-8", "surrogateescape") for part in path.split("/"))


async def rg_grep(
    rg: str,
    cwd: Path,
    start: str,
    pattern: str,
    *,
    case_insensitive: bool,
    context: int,
    include: Callable[[str], bool] | None,
    include_args: Sequence[str] = (),
    skip_secrets: bool = False,
    cancelled: asyncio.Event | None = None,
    deadline: float | None = None,
) -> GrepOutcome:
    """``include_args``: rg flags that pre-select the files ``include``
    accepts (see :func:`include_matcher`). ``skip_secrets``: files whose name
    looks secret are neither read by rg nor reported.

    rg runs unsorted first (``--sort path`` makes it single-threaded, about
    1.6 times slower) and the files are put in path order here; rg prints each
    file's lines together, so only the order of files changes. If the match
    cap is hit, which matches are kept would depend on thread timing, so the
    search is run again sorted."""
    outcome = await _rg_grep_once(
        rg, cwd, start, pattern, case_insensitive=case_insensitive, context=context, include=include,
        include_args=include_args, skip_secrets=skip_secrets, cancelled=cancelled, sort=False, deadline=deadline,
    )
    if not outcome.capped or outcome.timed_out:
        try:
            outcome.files.sort(key=lambda f: _path_order(f.path))
            return outcome
        except UnicodeError:  # an odd name: let rg order them
            pass
    return await _rg_grep_once(
        rg, cwd, start, pattern, case_insensitive=case_insensitive, context=context, include=include,
        include_args=include_args, skip_secrets=skip_secrets, cancelled=cancelled, sort=True, deadline=deadline,
    )


async def _rg_grep_once(
    rg: str,
    cwd: Path,
    start: str,
    pattern: str,
    *,
    case_insensitive: bool,
    context: int,
    include: Callable[[str], bool] | None,
    include_args: Sequence[str],
    skip_secrets: bool,
    cancelled: asyncio.Event | None,
    sort: bool,
    deadline: float | None = None,
) -> GrepOutcome:
    argv = [
        rg, "--no-heading", "--with-filename", "--line-number", "--null", "--color", "never",
        "--no-context-separator", *_rg_common(cwd, start, sort=sort, skip_secrets=skip_secrets),
    ]
    if start and (cwd / start).is_file():
        # a file named explicitly: print its matching lines as they are, not
        # rg's "binary file matches" notice (grep_tool checked its head for NUL)
        argv.append("--text")
    if case_insensitive:
        argv.append("--ignore-case")
    else:
        argv.append("--case-sensitive")
    if context:
        argv += ["--context", str(context)]
    argv += include_args
    argv += ["--regexp", pattern]
    if start:
        argv += ["--", start]
    files: list[FileHits] = []
    current: FileHits | None = None
    current_raw: str | None = None
    last = 0  # the line number before, in the current file
    count = 0
    capped = False
    pending = b""
    below = len(start) + 1 if start else 0

    def keep(path: str) -> bool:
        if include is not None and not include(path):
            return False
        # rg's globs skipped these already; this check holds if the two lists drift
        return not (skip_secrets and secret_part(path[below:]) is not None)

    def take(chunk: bytes) -> bool:
        nonlocal current, current_raw, last, count, capped, pending
        buf = pending + chunk if pending else chunk
        records, used = _rg_records(buf, not chunk)
        pending = buf[used:]
        for raw, num, sep, text in records:
            n = int(num)
            if raw != current_raw or n <= last:  # (two names may show alike)
                current_raw = raw
                path = raw[2:] if raw.startswith("./") else raw
                current = FileHits(path) if keep(path) else None
                if current is not None:
                    files.append(current)
            last = n
            if current is None:
                continue
            if sep == ":":
                if count >= HARD_CAP:
                    capped = True
                    return False
                current.matches.append(n)
                count += 1
            current.lines[n] = text[:-1] if text.endswith("\r") else text
        return True

    # An include glob rg could not pre-select with (up to 256 alternatives of
    # any shape) is checked here for every file in rg's output: that work
    # goes to a worker thread so it never holds the event loop. Otherwise the
    # chunks (~64 KB each) are parsed inline, which is cheaper than a thread hop.
    heavy = include is not None and not include_args
    code, err = await _run_rg(argv, cwd, take, cancelled, deadline, in_thread=heavy)
    timed_out = deadline is not None and time.monotonic() >= deadline
    message = err.strip()
    # exit status 2 with nothing on stderr (--no-messages): no file passed the
    # filters (e.g. an include nothing matches), which is "no matches"
    if code == 2 and not capped and message and ("regex" in message or not files):
        raise ToolError(f"invalid search pattern for rg: {message}")
    return GrepOutcome([f for f in files if f.matches], capped, timed_out)


# ---------------------------------------------------------------- python


#: POSIX classes ripgrep accepts inside ``[...]``, as Python class items.
_POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "ascii": "\\x00-\\x7f", "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "\\w",
    "xdigit": "0-9A-Fa-f",
}
_SET_OPERATION = re.compile(r"&&|--|~~")


def _python_regex(pattern: str) -> str:
    """ripgrep's class syntax in Python's: POSIX classes (``[[:alpha:]]``)
    become ranges and a nested class (``[a[bc]]``, a union in rg) is
    flattened. Set operations (``&&``, ``--``, ``~~``) have no Python
    equivalent and are refused."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if depth == 0:
            if ch == "[":
                depth = 1
                out.append("[")
                i += 1
                if i < n and pattern[i] == "^":
                    out.append("^")
                    i += 1
                if i < n and pattern[i] == "]":
                    out.append("\\]")
                    i += 1
                continue
            out.append(ch)
            i += 1
            continue
        # inside a class
        if ch == "[" and pattern.startswith(":", i + 1):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2 : end] if end != -1 else ""
            if name in _POSIX:
                out.append(_POSIX[name])
                i = end + 2
                continue
            if name.lstrip("^") in _POSIX:
                raise ToolError(
                    f"the negated class [:{name}:] needs the rg engine; the Python fallback cannot express it. "
                    f"Write the range out (e.g. [^a-zA-Z]) or install ripgrep (pip install ripgrep)"
                )
        if ch == "[":
            if pattern.startswith("^", i + 1):
                raise ToolError(
                    "a negated class nested inside a class needs the rg engine; the Python fallback cannot "
                    "express it. Rewrite the class or install ripgrep (pip install ripgrep)"
                )
            depth += 1
            i += 1
            continue
        if ch == "]":
            depth -= 1
            if depth == 0:
                out.append("]")
            i += 1
            continue
        if _SET_OPERATION.match(pattern, i):
            raise ToolError(
                f"the class set operation {pattern[i:i + 2]!r} needs the rg engine; the Python fallback cannot "
                f"express it. Escape it (\\{pattern[i]}) if you meant the characters, or install ripgrep"
            )
        out.append("\\" + ch if ch in "&~|" else ch)
        i += 1
    return "".join(out)


def compile_pattern(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    """The pattern for the Python engine. Any warning Python's ``re`` would
    print (a construct whose meaning will change) becomes a clear tool error."""
    flags = re.MULTILINE | (re.IGNORECASE if case_insensitive else 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(_python_regex(pattern), flags)
    except re.error as exc:
        raise ToolError(f"invalid search pattern (Python re): {exc}") from None
    except Warning as exc:
        raise ToolError(
            f"the search pattern is ambiguous for the Python fallback engine ({exc}); escape '[' and set "
            f"operators inside classes, or install ripgrep (pip install ripgrep)"
        ) from None


def py_files(
    cwd: Path, start: str, cancelled: asyncio.Event | None = None, *, skip_secrets: bool = False
) -> list[str]:
    stop: Callable[[], bool] = cancelled.is_set if cancelled is not None else (lambda: False)
    out = [display_name(os.fsencode(p)) for p in walk_files(cwd, start, cancelled=stop, skip_secrets=skip_secrets)]
    if cancelled is not None and cancelled.is_set():
        raise ToolError("search cancelled", code="tool_cancelled")
    return out


def py_grep(
    cwd: Path,
    start: str,
    pattern: str,
    *,
    case_insensitive: bool,
    context: int,
    include: Callable[[str], bool] | None,
    skip_secrets: bool = False,
    cancelled: asyncio.Event | None = None,
    deadline: float | None = None,
) -> GrepOutcome:
    regex = compile_pattern(pattern, case_insensitive)
    stop: Callable[[], bool] = cancelled.is_set if cancelled is not None else (lambda: False)
    files: list[FileHits] = []
    count = 0
    capped = False
    timed_out = False
    for rel in walk_files(cwd, start, cancelled=stop, skip_secrets=skip_secrets):
        breathe()
        if deadline is not None and time.monotonic() > deadline:
            timed_out = True
            break
        path = display_name(os.fsencode(rel))
        if include is not None and not include(path):
            continue
        data = read_regular(cwd / rel, MAX_FILE_BYTES)
        if data is None:
            continue
        if b"\x00" in data:
            continue  # binary (rg skips these during a walk too)
        text = data.decode("utf-8", "replace")
        if not regex.search(text) and pattern:
            continue
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = FileHits(path)
        for i, raw in enumerate(lines):
            if regex.search(raw):
                if count >= HARD_CAP:
                    capped = True
                    break
                hits.matches.append(i + 1)
                count += 1
        if hits.matches:
            wanted: set[int] = set()
            for n in hits.matches:
                wanted.update(range(max(1, n - context), min(len(lines), n + context) + 1))
            hits.lines = {n: _line_text(lines[n - 1]) for n in sorted(wanted)}
            files.append(hits)
        if capped:
            break
    if stop():
        raise ToolError("search cancelled", code="tool_cancelled")
    return GrepOutcome(files, capped, timed_out)


def read_regular(path: Path, limit: int, *, head: bool = False) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit``
    bytes (``head``: its first ``limit`` bytes, whatever its size), else None.
    Opened without blocking and checked on the open file, so a FIFO, socket or
    device swapped in after the walk never stalls the search."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_size > limit and not head):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def relative_matcher(pattern: str, start: str) -> Callable[[str], bool]:
    """A glob matcher for workspace-relative paths; patterns with '/' are
    taken relative to the search folder ``start``."""
    match = compile_glob(pattern.strip())
    prefix = start + "/" if start else ""

    def matcher(path: str) -> bool:
        return match(path[len(prefix):] if prefix and path.startswith(prefix) else path)

    return matcher


def include_matcher(include: str | None, start: str) -> tuple[Callable[[str], bool] | None, list[str]]:
    """(matcher applied to workspace-relative paths, rg flags that pre-select
    the same files).

    ``include`` is a glob; ``!glob`` excludes instead, the way rg's
    ``--glob '!x'`` does: a file is left out when the glob matches its path
    or one of its folders below ``start``. The matcher decides for both
    engines; the rg flags only save rg reading files the matcher would drop,
    so they are given only for patterns both dialects read alike. A positive
    pattern goes to rg as a file type (``--type-add``), which, unlike
    ``--glob``, leaves .gitignore in force."""
    if not include or not include.strip():
        return None, []
    text = include.strip()
    negate = text.startswith("!")
    if negate:
        text = text[1:].strip()
        if not text:
            raise ToolError("include '!' needs a glob after it, e.g. '!*.md' to leave out Markdown files")
    glob = compile_glob(text)
    prefix = start + "/" if start else ""
    plain = plain_globs(text)
    if negate:

        def excluded(path: str) -> bool:
            rel = path[len(prefix):] if prefix and path.startswith(prefix) else path
            return not glob.matches_any_part(rel)  # type: ignore[attr-defined]

        return excluded, [arg for g in plain or () for arg in ("--glob", f"!{g}")]
    args: list[str] = []
    if plain:
        for g in plain:
            args += ["--type-add", f"smokeinclude:{g}"]
        args += ["--type", "smokeinclude"]
    return relative_matcher(text, start), args
