"""glob and grep: tool definitions, argument handling and the shared output format."""

from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smoke_core.errors import ToolError
from smoke_core.tools import ToolAnnotations, ToolDefinition, ToolPresentation, ToolResult

from . import _engines
from ._engines import GrepOutcome, sort_key

if TYPE_CHECKING:
    from smoke_core.context import ToolContext

GROUP = "search"
DEFAULT_GLOB_LIMIT = 200
DEFAULT_GREP_LIMIT = 100
MAX_LIMIT = 2000
MAX_CONTEXT = 10
MAX_LINE_CHARS = 300
MAX_OUTPUT_CHARS = 40_000


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
    root = ctx.workspace.root
    if real == root:
        return root, "", "."
    if root in real.parents:
        rel = real.relative_to(root).as_posix()
        return root, rel, rel
    # a read-only folder opened with allow_read: search it from its own root
    return real if real.is_dir() else real.parent, "" if real.is_dir() else real.name, str(real)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + f" ... [{len(text)} chars]"


def format_grep(outcome: GrepOutcome, *, pattern: str, where: str, limit: int, context: int) -> tuple[str, dict[str, Any]]:
    files = sorted(outcome.files, key=lambda f: sort_key(f.path))
    total = sum(len(f.matches) for f in files)
    if total == 0:
        return f"No matches for {pattern!r} in {where}.", {"matches": 0, "files": 0, "shown": 0}
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


def format_glob(paths: list[str], *, pattern: str, where: str, limit: int) -> tuple[str, dict[str, Any]]:
    paths = sorted(paths, key=sort_key)
    if not paths:
        return f"No files match {pattern!r} in {where}.", {"total": 0, "shown": 0}
    shown = paths[:limit]
    lines = list(shown)
    more = len(paths) - len(shown)
    if more:
        lines.append(f"[{more} more matches not shown; use a narrower pattern or raise limit]")
    return "\n".join(lines), {"total": len(paths), "shown": len(shown)}


def _clean_errors(fn: Any) -> Any:
    """OS and encoding failures become clean tool errors (no tracebacks for the model)."""

    @functools.wraps(fn)
    async def wrapper(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await fn(input, ctx)
        except ToolError:
            raise
        except UnicodeError as exc:
            raise ToolError(f"the path cannot be encoded ({exc}); use a plain UTF-8 path") from None
        except OSError as exc:
            raise ToolError(f"file system error: {exc.strerror or exc}") from None

    return wrapper


@_clean_errors
async def glob_tool(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = input.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError("pattern must be a non-empty glob such as '**/*.py' or 'src/**/test_*.py'")
    limit = _int(input, "limit", DEFAULT_GLOB_LIMIT, 1, MAX_LIMIT)
    cwd, start, where = _search_root(ctx, input.get("path"))
    engine, rg = _engines.choose_engine()
    if engine == "rg":
        assert rg is not None
        files = await _engines.rg_files(rg, cwd, start, ctx.cancelled)
    else:
        files = await asyncio.to_thread(_engines.py_files, cwd, start, ctx.cancelled)
    matcher = _engines.relative_matcher(pattern, start)
    matched = [p for p in files if matcher(p)]
    text, data = format_glob(matched, pattern=pattern, where=where, limit=limit)
    data["engine"] = engine
    return ToolResult.text(text, data=data)


@_clean_errors
async def grep_tool(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = input.get("pattern")
    if not isinstance(pattern, str) or pattern == "":
        raise ToolError("pattern must be a non-empty regular expression")
    limit = _int(input, "limit", DEFAULT_GREP_LIMIT, 1, MAX_LIMIT)
    context = _int(input, "context", 0, 0, MAX_CONTEXT)
    case_insensitive = bool(input.get("case_insensitive", False))
    include = input.get("include")
    if include is not None and not isinstance(include, str):
        raise ToolError(f"include must be a glob string such as '*.py', got {type(include).__name__}")
    cwd, start, where = _search_root(ctx, input.get("path"))
    if start and (cwd / start).is_file():
        with open(cwd / start, "rb") as fh:
            if b"\x00" in fh.read(8192):
                raise ToolError(f"{where} is a binary file; grep searches text files only")
    matcher, rg_glob = _engines.include_matcher(include, start)
    engine, rg = _engines.choose_engine()
    if engine == "rg":
        assert rg is not None
        outcome = await _engines.rg_grep(
            rg, cwd, start, pattern, case_insensitive=case_insensitive, context=context,
            include=matcher, include_glob=rg_glob, cancelled=ctx.cancelled,
        )
    else:
        outcome = await asyncio.to_thread(
            _engines.py_grep, cwd, start, pattern, case_insensitive=case_insensitive, context=context,
            include=matcher, cancelled=ctx.cancelled,
        )
    text, data = format_grep(outcome, pattern=pattern, where=where, limit=limit, context=context)
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
                "Find files by glob; a pattern without '/' matches names at any depth. Skips .gitignored files. "
                f"Shows `limit` paths (default {DEFAULT_GLOB_LIMIT})."
            ),
            input_schema=_schema(
                {
                    "pattern": {"type": "string"},
                    "path": path,
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                },
                ["pattern"],
            ),
            annotations=ToolAnnotations(title="Find files", read_only_hint=True, kind="search"),
            permission_key="pattern",
            presentation=ToolPresentation(label="Find files", icon="🗂️", tone="info", group=GROUP),
            execute=glob_tool,
            group=GROUP,
        ),
        ToolDefinition(
            name="grep",
            description=(
                "Search file contents with a single-line ripgrep regex (no look-around or backreferences). Skips "
                f"binary and .gitignored files. Shows `limit` matches (default {DEFAULT_GREP_LIMIT})."
            ),
            input_schema=_schema(
                {
                    "pattern": {"type": "string"},
                    "path": path,
                    "include": {"type": "string", "description": "File name glob, e.g. '*.py'."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                                "description": "Lines around each match."},
                    "case_insensitive": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                },
                ["pattern"],
            ),
            annotations=ToolAnnotations(title="Search file contents", read_only_hint=True, kind="search"),
            permission_key="path",
            presentation=ToolPresentation(label="Search", icon="🔎", tone="info", group=GROUP),
            execute=grep_tool,
            group=GROUP,
        ),
    ]
