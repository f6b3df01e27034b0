"""glob and grep: tool definitions, argument handling and the shared output format."""

from __future__ import annotations

import asyncio
import functools
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smoke_core.plugin import (
    ClaudeDialect,
    ToolAnnotations,
    ToolDefinition,
    ToolError,
    ToolPresentation,
    ToolResult,
    looks_secret,
)

from . import _engines
from ._engines import GrepOutcome, sort_key
from ._glob import MAX_GLOB_CHARS, strip_wildcards
from ._walk import breathe, display_name, secret_part, walk_files

if TYPE_CHECKING:
    from smoke_core.plugin import ToolContext

GROUP = "search"
DEFAULT_GLOB_LIMIT = 200
DEFAULT_GREP_LIMIT = 100
MAX_LIMIT = 2000
MAX_CONTEXT = 10
MAX_LINE_CHARS = 300
MAX_OUTPUT_CHARS = 40_000
#: Longest grep pattern accepted (characters); longer ones are refused with a clear error.
MAX_GREP_PATTERN_CHARS = 10_000
#: Seconds one glob may spend listing and matching files before it returns what it found.
GLOB_TIME_BUDGET = 10.0
#: Matching paths one glob collects at most; beyond it the count is "at least".
GLOB_MATCH_CAP = 20_000
#: Seconds one grep may spend before it returns the matches it found (and says they are partial).
GREP_TIME_BUDGET = 30.0
_SPECIAL_FILES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _int(input: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = input.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{key} must be an integer, got {value!r}")
    if value < lo:
        raise ToolError(f"{key} must be at least {lo}, got {value}")
    return min(value, hi)


def _search_root(ctx: ToolContext, raw: Any) -> tuple[Path, str, str]:
    """(cwd for the engines, start relative to it or "" for the root, name to show)."""
    if raw is not None and not isinstance(raw, str):
        raise ToolError(f"path must be a string, got {type(raw).__name__}")
    try:
        if isinstance(raw, str):
            raw.encode("utf-8", "surrogateescape")
        resolved = ctx.workspace.resolve(raw, write=False)
    except (UnicodeError, ValueError) as exc:
        raise ToolError(f"path {raw!r} cannot be used ({exc}); workspace is {ctx.workspace.root}") from None
    real = Path(os.path.realpath(resolved))
    roots = [ctx.workspace.root, *ctx.workspace.read_roots]
    if not any(real == r or r in real.parents for r in roots):
        raise ToolError(f"path {raw!r} leads outside the workspace {ctx.workspace.root}; use a path inside it")
    if not real.exists():
        raise ToolError(
            f"path {raw!r} does not exist in the workspace {ctx.workspace.root}; use list_directory or glob to find it"
        )
    mode = real.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        what = next((name for test, name in _SPECIAL_FILES if test(mode)), "not a regular file")
        raise ToolError(f"path {raw!r} is {what}, not a file or a folder: the search tools read only files and "
                        f"folders (reading it could wait forever); search its folder or a regular file instead")
    root = ctx.workspace.root
    if real == root:
        return root, "", "."
    if root in real.parents:
        rel = real.relative_to(root).as_posix()
        return root, rel, rel
    # a read-only folder opened with allow_read: search it from its own root
    return real if real.is_dir() else real.parent, "" if real.is_dir() else real.name, str(real)


def _skip_secrets(raw: Any, start: str, where: str) -> bool:
    """Whether files that look secret are left out below ``start``. They are
    searched only when the ``path`` argument itself names one (the permission
    gate then asks a person, as it does for ``read_file``). A path that leads
    to one under another name (a symlink) is refused."""
    named = isinstance(raw, str) and looks_secret(raw.strip())
    part = secret_part(start) if start else None
    if part is not None and not named:
        parts = start.split("/")
        target = "/".join(parts[: parts.index(part) + 1]) if part in parts else start
        raise ToolError(
            f"path {raw!r} leads to {where}, which looks like it holds secrets ({part}); "
            f"to search it, give its own path ({target!r}) so a person is asked first"
        )
    return not named


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + f" ... [{len(text)} chars]"


def format_grep(
    outcome: GrepOutcome, *, pattern: str, where: str, limit: int, context: int, secrets_skipped: bool = False
) -> tuple[str, dict[str, Any]]:
    files = sorted(outcome.files, key=lambda f: sort_key(f.path))
    total = sum(len(f.matches) for f in files)
    if total == 0:
        return (
            f"No matches for {pattern!r} in {where}."
            + (" (Secret-looking files such as .env are not searched unless path names them.)"
               if secrets_skipped else ""),
            {"matches": 0, "files": 0, "shown": 0},
        )
    out: list[str] = []
    size = 0
    shown = 0
    full = False
    for f in files:
        if full:
            break
        printed: set[int] = set()
        match_set = set(f.matches)
        last: int | None = None  # last line number printed for this file
        for n in f.matches:
            if shown >= limit:
                full = True
                break
            block: list[str] = []
            for k in range(n - context, n + context + 1):
                if k > n and k in match_set:
                    break  # the next match prints itself (and its own context)
                if k in printed or k not in f.lines:
                    continue
                if context and ((last is not None and k != last + 1) or (last is None and out and not block)):
                    block.append("--")
                sep = ":" if k == n else "-"
                block.append(f"{f.path}{sep}{k}{sep}{_cut(f.lines[k])}")
                printed.add(k)
                last = k
            block_size = sum(len(b) + 1 for b in block)
            if out and size + block_size > MAX_OUTPUT_CHARS:
                full = True
                break
            out.extend(block)
            size += block_size
            shown += 1
    more = total - shown
    head = f"{total}{'+' if outcome.capped else ''} matches in {len(files)}{'+' if outcome.capped else ''} files"
    lines = [head + (f" (showing {shown})" if more else "") + ":", *out]
    if more:
        at_least = "at least " if outcome.capped else ""
        lines.append(
            f"[{at_least}{more} more matches not shown; narrow the search with path or include, or raise limit]"
        )
    data = {"matches": total, "files": len(files), "shown": shown, "capped": outcome.capped}
    return "\n".join(lines), data


@dataclass
class GlobScan:
    """What one glob found: matching paths (in walk order), those left out as
    secret-looking, and whether the match cap or the time budget stopped it."""

    paths: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # the first few, as examples
    secret_count: int = 0
    capped: bool = False
    timed_out: bool = False


def scan_glob(
    names: Iterable[str],
    matcher: Callable[[str], bool],
    *,
    start: str,
    skip_secrets: bool,
    deadline: float,
    cancelled: Callable[[], bool],
    cap: int = GLOB_MATCH_CAP,
) -> GlobScan:
    """Match ``names`` one by one in a worker thread (every match is bounded,
    and :func:`breathe` hands the event loop its turns), checking the
    deadline and cancellation every 256 names."""
    scan = GlobScan()
    below = len(start) + 1 if start else 0
    for count, path in enumerate(names):
        breathe()
        if not count & 255:
            if cancelled():
                raise ToolError("search cancelled", code="tool_cancelled")
            if time.monotonic() > deadline:
                scan.timed_out = True
                break
        if not matcher(path):
            continue
        if skip_secrets and secret_part(path[below:]) is not None:
            scan.secret_count += 1
            if len(scan.secrets) < 3:
                scan.secrets.append(path)
            continue
        scan.paths.append(path)
        if len(scan.paths) >= cap:
            scan.capped = True
            break
    return scan


def format_glob(
    paths: list[str] | GlobScan, *, pattern: str, where: str, limit: int
) -> tuple[str, dict[str, Any]]:
    scan = paths if isinstance(paths, GlobScan) else GlobScan(list(paths))
    found = sorted(scan.paths, key=sort_key)
    notes: list[str] = []
    if scan.timed_out:
        notes.append(
            f"[stopped after {GLOB_TIME_BUDGET:g} s (the time budget); the list is partial: "
            f"use a narrower path or pattern]"
        )
    if scan.secret_count:
        shown_names = ", ".join(scan.secrets) + (", ..." if scan.secret_count > len(scan.secrets) else "")
        notes.append(
            f"[{scan.secret_count} secret-looking file(s) not listed ({shown_names}); name them in the pattern "
            f"or path to list them]"
        )
    data: dict[str, Any] = {"total": len(found), "shown": 0, "capped": scan.capped, "timed_out": scan.timed_out,
                            "secrets_hidden": scan.secret_count}
    if not found:
        return "\n".join([f"No files match {pattern!r} in {where}.", *notes]), data
    shown = found[:limit]
    lines = list(shown)
    more = len(found) - len(shown)
    if more or scan.capped:
        at_least = "at least " if scan.capped else ""
        lines.append(f"[{at_least}{more} more matches not shown; use a narrower pattern or raise limit]")
    lines += notes
    data["shown"] = len(shown)
    return "\n".join(lines), data


def _clean_errors(fn: Any) -> Any:
    """OS and encoding failures become clean tool errors (no tracebacks for the model)."""

    @functools.wraps(fn)
    async def wrapper(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            result: ToolResult = await fn(input, ctx)
            return result
        except ToolError:
            raise
        except UnicodeError as exc:
            raise ToolError(f"the path cannot be encoded ({exc}); use a plain UTF-8 path") from None
        except OSError as exc:
            raise ToolError(f"file system error: {exc.strerror or exc}") from None

    return wrapper


def _names_secrets(pattern: str) -> bool:
    """True when the glob names a secret-looking file outright (``.env``, ``**/*.pem``)."""
    return any(
        looks_secret(text) or any(looks_secret(part) for part in text.split("/") if part)
        for text in strip_wildcards(pattern)
    )


@_clean_errors
async def glob_tool(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = input.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError("pattern must be a non-empty glob such as '**/*.py' or 'src/**/test_*.py'")
    if len(pattern) > MAX_GLOB_CHARS:
        raise ToolError(
            f"the glob pattern is {len(pattern):,} characters long; the limit is {MAX_GLOB_CHARS:,}. "
            f"Use a shorter pattern (or several)"
        )
    limit = _int(input, "limit", DEFAULT_GLOB_LIMIT, 1, MAX_LIMIT)
    raw_path = input.get("path")
    cwd, start, where = _search_root(ctx, raw_path)
    skip_secrets = _skip_secrets(raw_path, start, where) and not _names_secrets(pattern)
    deadline = time.monotonic() + GLOB_TIME_BUDGET
    cancelled = ctx.cancelled
    stop: Callable[[], bool] = cancelled.is_set if cancelled is not None else (lambda: False)
    engine, rg = _engines.choose_engine()
    listing_cut = False
    names: Iterable[str]
    if engine == "rg":
        assert rg is not None
        raw, listing_cut = await _engines.rg_files_raw(rg, cwd, start, cancelled, deadline=deadline)
        names = (display_name(p) for p in raw.split(b"\0") if p)
    else:

        def walk_stop() -> bool:
            return stop() or time.monotonic() > deadline

        names = (display_name(os.fsencode(p)) for p in walk_files(cwd, start, cancelled=walk_stop))

    def work() -> tuple[str, dict[str, Any]]:
        # compiling, matching and formatting all run here, off the event loop
        matcher = _engines.relative_matcher(pattern, start)
        scan = scan_glob(
            names, matcher, start=start, skip_secrets=skip_secrets, deadline=deadline, cancelled=stop,
            cap=GLOB_MATCH_CAP,
        )
        if stop():
            raise ToolError("search cancelled", code="tool_cancelled")
        scan.timed_out = scan.timed_out or listing_cut or time.monotonic() > deadline
        return format_glob(scan, pattern=pattern, where=where, limit=limit)

    text, data = await asyncio.to_thread(work)
    data["engine"] = engine
    return ToolResult.text(text, data=data)


@_clean_errors
async def grep_tool(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = input.get("pattern")
    if not isinstance(pattern, str) or pattern == "":
        raise ToolError("pattern must be a non-empty regular expression")
    if len(pattern) > MAX_GREP_PATTERN_CHARS:
        raise ToolError(
            f"the pattern is {len(pattern):,} characters long; grep takes patterns of up to "
            f"{MAX_GREP_PATTERN_CHARS:,} characters. Search for a shorter, distinctive part of the text"
        )
    limit = _int(input, "limit", DEFAULT_GREP_LIMIT, 1, MAX_LIMIT)
    context = _int(input, "context", 0, 0, MAX_CONTEXT)
    case_insensitive = bool(input.get("case_insensitive", False))
    include = input.get("include")
    if include is not None and not isinstance(include, str):
        raise ToolError(f"include must be a glob string such as '*.py', got {type(include).__name__}")
    raw_path = input.get("path")
    cwd, start, where = _search_root(ctx, raw_path)
    skip_secrets = _skip_secrets(raw_path, start, where)
    if start and (cwd / start).is_file():
        head = _engines.read_regular(cwd / start, 8192, head=True)
        if head is None:
            raise ToolError(f"{where} changed while it was being searched; try again")
        if b"\x00" in head:
            raise ToolError(f"{where} is a binary file; grep searches text files only")
    # compiling a hostile include (up to 256 alternatives) can take ~0.1 s: not on the event loop
    matcher, include_args = (
        await asyncio.to_thread(_engines.include_matcher, include, start) if include else (None, [])
    )
    engine, rg = _engines.choose_engine()
    deadline = time.monotonic() + GREP_TIME_BUDGET
    if engine == "rg":
        assert rg is not None
        outcome = await _engines.rg_grep(
            rg, cwd, start, pattern, case_insensitive=case_insensitive, context=context,
            include=matcher, include_args=include_args, skip_secrets=skip_secrets, cancelled=ctx.cancelled,
            deadline=deadline,
        )
    else:
        outcome = await asyncio.to_thread(
            _engines.py_grep, cwd, start, pattern, case_insensitive=case_insensitive, context=context,
            include=matcher, skip_secrets=skip_secrets, cancelled=ctx.cancelled, deadline=deadline,
        )
    text, data = format_grep(
        outcome, pattern=pattern, where=where, limit=limit, context=context, secrets_skipped=skip_secrets
    )
    if outcome.timed_out:
        text += (f"\n[stopped after {GREP_TIME_BUDGET:g} s (the time budget); the matches are partial: use a "
                 f"narrower path or include]")
    data["timed_out"] = outcome.timed_out
    data["engine"] = engine
    return ToolResult.text(text, data=data)


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def build_tools() -> list[ToolDefinition]:
    path = {"type": "string", "description": "Workspace-relative folder or file (default: root)."}
    return [
        ToolDefinition(
            name="glob",
            description=(
                "Find files by glob; a pattern without '/' matches names at any depth. Skips .gitignored files, "
                f"and secret-looking ones (.env, keys) unless named. Shows `limit` paths (default {DEFAULT_GLOB_LIMIT})."
            ),
            input_schema=_schema(
                {
                    "pattern": {"type": "string"},
                    "path": path,
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                },
                ["pattern"],
            ),
            annotations=ToolAnnotations(title="Find files", read_only_hint=True, kind="search",
                                        claude=ClaudeDialect(name="Glob", input={"pattern": "pattern", "path": "path"})),
            permission_key="pattern",
            presentation=ToolPresentation(label="Find files", icon="🗂️", tone="info", group=GROUP),
            execute=glob_tool,
            group=GROUP,
        ),
        ToolDefinition(
            name="grep",
            description=(
                "Search file contents with a single-line ripgrep regex (no look-around or backreferences). Skips "
                "binary, .gitignored and secret-looking files (.env, keys; give one as path to search it). "
                f"Shows `limit` matches (default {DEFAULT_GREP_LIMIT})."
            ),
            input_schema=_schema(
                {
                    "pattern": {"type": "string"},
                    "path": path,
                    "include": {"type": "string", "description": "File name glob, e.g. '*.py'; '!*.md' excludes."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                                "description": "Lines around each match."},
                    "case_insensitive": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                },
                ["pattern"],
            ),
            annotations=ToolAnnotations(title="Search file contents", read_only_hint=True, kind="search", claude=ClaudeDialect(
                name="Grep", input={"pattern": "pattern", "path": "path", "glob": "include", "-C": "context",
                                    "-i": "case_insensitive", "head_limit": "limit"})),
            permission_key="path",
            presentation=ToolPresentation(label="Search", icon="🔎", tone="info", group=GROUP),
            execute=grep_tool,
            group=GROUP,
        ),
    ]
