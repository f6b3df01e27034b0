"""apply_patch: parse unified diffs, git diffs and ``*** Begin Patch`` blocks,
apply every hunk in memory (re-anchoring drifted hunks), then write all
files or none."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from smoke_core.plugin import ToolError, ToolResult

from ._files import (
    atomic_write,
    diff_stats,
    display,
    encode_text,
    not_found,
    os_errors_as_tool_errors,
    read_bytes,
    remove_folder,
    resolve_path,
    safe_text,
    unified_diff,
    unlink,
)

if TYPE_CHECKING:
    from smoke_core.plugin import ToolContext


class PatchError(ValueError):
    """The patch cannot be parsed or does not apply; the message is for the model."""


# ---------------------------------------------------------------- model


@dataclass
class Hunk:
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    old_start: int | None = None  # 1-based line from "@@ -l,c", if given
    anchor: str | None = None  # "@@ def foo" context line of the Begin Patch format
    old_no_eol: bool = False
    new_no_eol: bool = False
    at_eof: bool = False
    header: str = ""


@dataclass
class FilePatch:
    action: Literal["update", "add", "delete"]
    path: str
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


# ---------------------------------------------------------------- parsing


_HUNK_RE = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+")


def parse_patch(text: str) -> list[FilePatch]:
    lines = text.replace("\r\n", "\n").split("\n")
    # models often wrap patches in markdown fences
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and lines[0].startswith("```"):
        lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines and lines[-1].startswith("```"):
            lines.pop()
    if any(line.strip() == "*** Begin Patch" for line in lines):
        patches = _parse_begin_patch(lines)
    else:
        patches = _parse_unified(lines)
    if not patches:
        raise PatchError(
            "no file changes found in the patch; give a unified diff (--- a/file, +++ b/file, @@ hunks), a git diff, "
            "or a '*** Begin Patch' block"
        )
    return patches


def _parse_begin_patch(lines: list[str]) -> list[FilePatch]:
    i = next(n for n, line in enumerate(lines) if line.strip() == "*** Begin Patch") + 1
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    ended = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if stripped == "*** End Patch":
            ended = True
            break
        if line.startswith("*** Add File:"):
            current = FilePatch("add", line.split(":", 1)[1].strip(), hunks=[Hunk(header="add")])
            hunk = current.hunks[0]
            patches.append(current)
            continue
        if line.startswith("*** Delete File:"):
            current, hunk = FilePatch("delete", line.split(":", 1)[1].strip()), None
            patches.append(current)
            continue
        if line.startswith("*** Update File:"):
            current, hunk = FilePatch("update", line.split(":", 1)[1].strip()), None
            patches.append(current)
            continue
        if line.startswith("*** Move to:"):
            if current is None or current.action != "update":
                raise PatchError("'*** Move to:' must follow an '*** Update File:' line")
            current.move_to = line.split(":", 1)[1].strip()
            continue
        if stripped == "*** End of File":
            if hunk is not None:
                hunk.at_eof = True
            continue
        if current is None:
            if not stripped:
                continue
            raise PatchError(f"unexpected line before the first '*** Update/Add/Delete File:' line: {line!r}")
        if current.action == "add":
            assert hunk is not None
            if line.startswith("+"):
                hunk.new.append(line[1:])
            elif line == "" and i == len(lines):
                continue
            else:
                raise PatchError(f"in '*** Add File: {current.path}' every line must start with '+', got {line!r}")
            continue
        if current.action == "delete":
            if stripped:
                raise PatchError(f"'*** Delete File: {current.path}' takes no content lines, got {line!r}")
            continue
        # update
        if line.startswith("@@"):
            anchor = line[2:].strip().strip("@").strip() or None
            hunk = Hunk(anchor=anchor, header=line)
            current.hunks.append(hunk)
            continue
        if hunk is None:
            hunk = Hunk(header="(first change)")
            current.hunks.append(hunk)
        if line.startswith("+"):
            hunk.new.append(line[1:])
        elif line.startswith("-"):
            hunk.old.append(line[1:])
        elif line.startswith(" "):
            hunk.old.append(line[1:])
            hunk.new.append(line[1:])
        elif line == "":
            if i == len(lines):
                continue
            hunk.old.append("")
            hunk.new.append("")
        else:
            raise PatchError(
                f"in '*** Update File: {current.path}' a change line must start with ' ', '-' or '+', got {line!r}"
            )
    if not ended:
        raise PatchError("the patch has '*** Begin Patch' but no '*** End Patch' line; send the complete patch")
    for p in patches:
        if p.action == "update":
            p.hunks = [_trim_blank_context(h) for h in p.hunks if h.old or h.new]
            if not p.hunks and not p.move_to:
                raise PatchError(f"'*** Update File: {p.path}' has no changes")
    return patches


def _trim_blank_context(h: Hunk) -> Hunk:
    # trailing empty lines produced by the patch's own final newline
    while h.old and h.new and h.old[-1] == "" and h.new[-1] == "" and len(h.old) > 1:
        h.old.pop()
        h.new.pop()
    return h


def _strip_prefix(path: str, prefix: str, git: bool) -> str:
    path = path.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    if path == "/dev/null":
        return path
    if (git or path.startswith(prefix)) and path.startswith(prefix):
        return path[len(prefix):]
    return path


def _parse_unified(lines: list[str]) -> list[FilePatch]:
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    git = False
    git_paths: tuple[str, str] | None = None
    git_mode: str | None = None
    rename: dict[str, str] = {}
    i = 0

    def flush_git_header() -> None:
        # a git diff without hunks: pure rename, empty new file, or deletion
        nonlocal current
        if git_paths is None or current is not None:
            return
        old, new = git_paths
        if git_mode == "new":
            current = FilePatch("add", new, hunks=[Hunk(header="add")])
        elif git_mode == "deleted":
            current = FilePatch("delete", old)
        elif rename:
            current = FilePatch("update", rename.get("from", old), move_to=rename.get("to", new))
        else:
            return
        patches.append(current)

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            flush_git_header()
            current, git, git_mode, rename = None, True, None, {}
            m = re.match(r"diff --git (\"?a/.+?\"?) (\"?b/.+\"?)$", line)
            git_paths = (_strip_prefix(m.group(1), "a/", True), _strip_prefix(m.group(2), "b/", True)) if m else None
            i += 1
            continue
        if line.startswith("new file mode"):
            git_mode = "new"
        elif line.startswith("deleted file mode"):
            git_mode = "deleted"
        elif line.startswith("rename from "):
            rename["from"] = line[len("rename from "):].strip()
        elif line.startswith("rename to "):
            rename["to"] = line[len("rename to "):].strip()
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            raise PatchError("binary patches are not supported; apply_patch changes text files only")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _strip_prefix(line[4:], "a/", git)
            new = _strip_prefix(lines[i + 1][4:], "b/", git)
            if not git and old != "/dev/null" and new != "/dev/null":
                # plain diffs made with `diff -u a/x b/x` keep their prefixes only when both have them
                raw_old, raw_new = line[4:].split("\t")[0].strip(), lines[i + 1][4:].split("\t")[0].strip()
                if not (raw_old.startswith("a/") and raw_new.startswith("b/")):
                    old, new = raw_old, raw_new
            if old == "/dev/null" and new == "/dev/null":
                raise PatchError("a file header has /dev/null on both sides")
            if old == "/dev/null":
                current = FilePatch("add", new)
            elif new == "/dev/null":
                current = FilePatch("delete", old)
            else:
                current = FilePatch("update", old, move_to=new if new != old else None)
            patches.append(current)
            i += 2
            continue
        elif line.startswith("@@"):
            if current is None:
                raise PatchError(f"hunk {line!r} comes before any '--- a/file' / '+++ b/file' header")
            i = _parse_hunk(lines, i, current)
            continue
        i += 1
    flush_git_header()
    for p in patches:
        if p.action == "add" and not p.hunks:
            p.hunks = [Hunk(header="add")]
        if p.action == "update" and not p.hunks and not p.move_to:
            raise PatchError(f"the diff for {p.path} has no @@ hunks")
    return patches


def _parse_hunk(lines: list[str], i: int, current: FilePatch) -> int:
    header = lines[i]
    m = _HUNK_RE.match(header)
    if not m:
        raise PatchError(f"bad hunk header {header!r}; expected '@@ -start,count +start,count @@'")
    old_start = int(m.group(1))
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    hunk = Hunk(old_start=old_start if old_count else old_start + 1, header=header.strip())
    i += 1
    last = ""
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@") or line.startswith("diff --git "):
            break
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            break
        if line.startswith("\\"):
            if last == "-":
                hunk.old_no_eol = True
            elif last == "+":
                hunk.new_no_eol = True
            else:
                hunk.old_no_eol = hunk.new_no_eol = True
        elif line.startswith("+"):
            hunk.new.append(line[1:])
            last = "+"
        elif line.startswith("-"):
            hunk.old.append(line[1:])
            last = "-"
        elif line.startswith(" ") or line == "":
            if line == "" and len(hunk.old) >= old_count and len(hunk.new) >= new_count:
                break  # blank line after a complete hunk (end of patch / separator)
            hunk.old.append(line[1:])
            hunk.new.append(line[1:])
            last = " "
        else:
            break  # trailing text (e.g. git's "-- " signature or a new header)
        i += 1
    current.hunks.append(hunk)
    return i


# ---------------------------------------------------------------- applying


@dataclass
class TextFile:
    lines: list[str]
    eols: list[str]

    @classmethod
    def parse(cls, text: str) -> TextFile:
        lines: list[str] = []
        eols: list[str] = []
        for raw in text.splitlines(keepends=True):
            body = raw.rstrip("\r\n")
            lines.append(body)
            eols.append(raw[len(body):])
        return cls(lines, eols)

    def dominant_eol(self) -> str:
        crlf = sum(1 for e in self.eols if e == "\r\n")
        lf = sum(1 for e in self.eols if e == "\n")
        return "\r\n" if crlf > lf else "\n"

    def render(self) -> str:
        return "".join(line + eol for line, eol in zip(self.lines, self.eols, strict=False))


def _find(lines: list[str], old: list[str], start: int, expected: int, at_eof: bool) -> int | None:
    n = len(old)
    last = len(lines) - n
    if last < start:
        return None
    comparisons: list[Callable[[str], str]] = [lambda s: s, str.rstrip, str.strip]
    for norm in comparisons:
        want = [norm(x) for x in old]
        first = want[0]
        found = [
            i for i in range(start, last + 1)
            if norm(lines[i]) == first and all(norm(lines[i + k]) == want[k] for k in range(1, n))
        ]
        if found:
            if at_eof and last in found:
                return last
            return min(found, key=lambda i: (abs(i - expected), i))
    return None


def _numbered(lines: list[str], lo: int, hi: int) -> str:
    lo, hi = max(0, lo), min(len(lines), hi)
    return "\n".join(f"{n + 1:>6}\t{safe_text(lines[n])}" for n in range(lo, hi)) or "(empty file)"


def apply_hunks(text: str, hunks: list[Hunk], name: str) -> str:
    """Apply ``hunks`` to ``text`` in memory; raise PatchError naming the hunk that does not fit."""
    doc = TextFile.parse(text)
    eol = doc.dominant_eol() if doc.eols else "\n"
    had_final_eol = not doc.eols or doc.eols[-1] != ""
    pos = 0
    drift = 0
    for number, hunk in enumerate(hunks, 1):
        lines = doc.lines
        if hunk.anchor:
            found = next((i for i in range(pos, len(lines)) if lines[i] == hunk.anchor), None)
            if found is None:
                found = next((i for i in range(pos, len(lines)) if lines[i].strip() == hunk.anchor.strip()), None)
            if found is None:
                raise PatchError(
                    f"hunk {number} for {name}: the anchor line {hunk.anchor!r} ('@@' line) was not found"
                    + (f" after line {pos}" if pos else "") + "; read the file and use a line that exists"
                )
            pos = found + (0 if hunk.old and hunk.old[0] == lines[found] else 1)
        if hunk.old_start is not None:
            expected = hunk.old_start - 1 + drift
        else:
            expected = len(lines) - len(hunk.old) if hunk.at_eof else pos
        if not hunk.old:
            at = min(max(expected, pos), len(lines)) if hunk.old_start is not None else (
                len(lines) if hunk.at_eof or not hunk.anchor else pos)
        else:
            at_or_none = _find(lines, hunk.old, pos, max(expected, pos), hunk.at_eof)
            if at_or_none is None:
                applied = hunk.new and _find(lines, hunk.new, 0, max(expected, 0), False) is not None
                region = _numbered(lines, expected - 3, expected + len(hunk.old) + 3)
                want = "\n".join(safe_text(x) for x in hunk.old)
                message = (
                    f"hunk {number} of {len(hunks)} for {name} ({hunk.header or 'no header'}) does not match the "
                    f"file: its context and removed lines were not found"
                    + (f" at or after line {pos + 1}" if pos else "")
                    + f".\nExpected lines:\n{want}\nThe file near line {max(expected, 0) + 1}:\n{region}\n"
                )
                if applied:
                    message += "This hunk looks already applied (its new lines are in the file). "
                message += "Nothing was changed. Read the file again and resend the patch with exact context lines."
                raise PatchError(message)
            at = at_or_none
        end = at + len(hunk.old)
        touches_end = end == len(lines)
        old_last_eol = doc.eols[end - 1] if end > at else None
        new_eols = [eol] * len(hunk.new)
        doc.lines[at:end] = list(hunk.new)
        doc.eols[at:end] = new_eols
        if touches_end and hunk.new:
            final = len(doc.lines) - 1
            if hunk.new_no_eol:
                doc.eols[final] = ""
            elif hunk.old_no_eol:
                doc.eols[final] = eol
            elif old_last_eol == "" or (old_last_eol is None and not had_final_eol):
                doc.eols[final] = ""
        elif touches_end and not hunk.new and doc.eols and not had_final_eol:
            doc.eols[-1] = ""
        drift += len(hunk.new) - len(hunk.old)
        pos = at + len(hunk.new)
    return doc.render()


def _added_text(hunks: list[Hunk]) -> str:
    lines: list[str] = []
    no_eol = False
    for h in hunks:
        lines.extend(h.new)
        no_eol = h.new_no_eol
    if not lines:
        return ""
    return "\n".join(lines) + ("" if no_eol else "\n")


# ---------------------------------------------------------------- the tool


@dataclass
class _Change:
    path: Path
    name: str
    before: bytes | None
    after: bytes | None
    action: str
    display: str
    diff: str


def _load(ctx: ToolContext, raw: str, path: Path, state: dict[Path, bytes | None]) -> bytes | None:
    if path in state:
        return state[path]
    if not path.exists():
        return None
    if not path.is_file():
        raise PatchError(f"{raw!r} is a directory or special file, not a text file")
    return read_bytes(ctx, path)


def _decode(data: bytes, raw: str) -> str:
    if b"\x00" in data[:8192]:
        raise PatchError(f"{raw!r} is a binary file; apply_patch changes text files only")
    return data.decode("utf-8", "surrogateescape")


def plan_patch(ctx: ToolContext, patches: list[FilePatch]) -> list[_Change]:
    """Validate and compute every change in memory. Raises ToolError; touches nothing."""
    state: dict[Path, bytes | None] = {}
    original: dict[Path, bytes | None] = {}
    order: list[Path] = []

    def record(path: Path, before: bytes | None, after: bytes | None, action: str) -> None:
        if path not in original:
            original[path] = before
            order.append(path)
        state[path] = after

    for p in patches:
        path = resolve_path(ctx, p.path, write=True)
        name = display(ctx, path)
        if path == ctx.workspace.root:
            raise PatchError(f"{p.path!r} is the workspace root, not a file")
        current = _load(ctx, p.path, path, state)
        if p.action == "add":
            if current is not None:
                raise PatchError(
                    f"cannot add {name}: it already exists. Use '*** Update File:' (or a diff against it) instead"
                )
            record(path, None, encode_text(_added_text(p.hunks)), "A")
            continue
        if current is None:
            if path in state:
                raise PatchError(f"{name} was deleted earlier in this patch; it cannot be changed afterwards")
            raise PatchError(str(not_found(ctx, p.path)))
        if p.action == "delete":
            _decode(current, p.path)
            record(path, current, None, "D")
            continue
        text = _decode(current, p.path)
        updated = apply_hunks(text, p.hunks, name) if p.hunks else text
        new_bytes = encode_text(updated)
        if p.move_to:
            target = resolve_path(ctx, p.move_to, write=True)
            if target != path:
                if _load(ctx, p.move_to, target, state) is not None:
                    raise PatchError(f"cannot move {name} to {display(ctx, target)}: the target already exists")
                record(path, current, None, "D")
                record(target, None, new_bytes, "A")
                continue
        record(path, current, new_bytes, "M")

    changes: list[_Change] = []
    for path in order:
        before, after = original[path], state[path]
        if before == after:
            continue
        name = display(ctx, path)
        old_text = "" if before is None else before.decode("utf-8", "surrogateescape")
        new_text = "" if after is None else after.decode("utf-8", "surrogateescape")
        action = "A" if before is None else ("D" if after is None else "M")
        changes.append(_Change(path, name, before, after, action, name, unified_diff(old_text, new_text, name)))
    return changes


def write_changes(ctx: ToolContext, changes: list[_Change]) -> None:
    """Write every change; if one fails, put back the ones already written.
    Every write and delete is pinned inside the workspace (see ``atomic_write``)."""
    done: list[_Change] = []
    made_dirs: list[Path] = []
    try:
        for change in changes:
            if change.after is None:
                unlink(ctx, change.path)
            else:
                missing: list[Path] = []
                parent = change.path.parent
                while not parent.exists():
                    missing.append(parent)
                    parent = parent.parent
                made_dirs.extend(reversed(missing))
                atomic_write(ctx, change.path, change.after, make_parents=True)
            done.append(change)
    except BaseException:
        for change in reversed(done):
            try:
                if change.before is None:
                    unlink(ctx, change.path)
                else:
                    atomic_write(ctx, change.path, change.before, make_parents=True)
            except (OSError, ToolError):
                pass
        for folder in reversed(made_dirs):
            try:
                remove_folder(ctx, folder)
            except (OSError, ToolError):
                pass
        raise


def _refuse_control_files(ctx: ToolContext, written: list[str], resolved: list[str]) -> None:
    """apply_patch's paths are inside its text, where the permission gate cannot
    see them: it never changes a control file (write_file and edit_file do, after
    a person or an exact rule allowed that very path)."""
    from smoke_core.plugin import ControlFiles

    control = ControlFiles(getattr(ctx.options, "control_files", ()) or ())
    for name in [*written, *resolved]:
        what = control.what(name)
        if what is not None:
            raise ToolError(
                f"patch not applied: {name} is a control file ({what}); apply_patch does not change control "
                f"files. Use edit_file or write_file for it: they ask the person first"
            )


@os_errors_as_tool_errors
def apply_patch(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    patch = input.get("patch")
    if not isinstance(patch, str) or not patch.strip():
        raise ToolError("patch must be a non-empty string holding a unified diff, git diff or '*** Begin Patch' block")
    try:
        patches = parse_patch(patch)
        changes = plan_patch(ctx, patches)
    except (PatchError, ToolError) as exc:
        raise ToolError(f"patch not applied: {exc}") from None
    _refuse_control_files(ctx, [p.path for p in patches] + [p.move_to for p in patches if p.move_to],
                          [c.name for c in changes])
    if not changes:
        return ToolResult.text("patch applied with no changes (every file already had this content)",
                               data={"paths": [], "files": [], "diff": ""})
    write_changes(ctx, changes)
    summary: list[str] = []
    for c in changes:
        added, removed = diff_stats(c.diff)
        summary.append(f"{c.action} {c.name} (+{added} -{removed})")
    diff = "".join(c.diff for c in changes)
    return ToolResult.text(
        f"Applied patch to {len(changes)} file(s):\n" + "\n".join(summary),
        data={
            "path": changes[0].name,
            "paths": [c.name for c in changes],
            "files": [{"path": c.name, "action": c.action, "diff": c.diff} for c in changes],
            "diff": diff,
        },
    )
