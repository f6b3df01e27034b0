"""What the server prepares for the page: Markdown as safe HTML, and the
unified diff an edit approval shows.

**Markdown** is rendered here, on the server, with ``markdown-it-py`` (the
CommonMark reference port; raw HTML *off*, so ``<img onerror=…>`` or
``<script>`` in a model's text comes out as escaped text) and Pygments for
code blocks. Links keep only ``http``, ``https`` and ``mailto`` targets and open
in a new tab with ``rel="noopener noreferrer"``; Markdown images become links
(an image the browser fetches by itself would let a prompt-injected model send
data to any server in its URL). The page still passes this HTML through an
allow-list before inserting it, and the Content-Security-Policy forbids inline
scripts: three independent layers.

**Diffs** for ``edit_file``, ``write_file``, ``apply_patch`` and
``replace_lines`` are computed with :mod:`difflib` against the file as it is
now (read inside the agent's workspace, regular files only, size-capped), so
the person sees what the call will change, not its JSON. The server asks for
one only when the tool declares ``kind="edit"`` (the event's ``tool_kind``):
a name alone never turns a call into a diff.
"""

from __future__ import annotations

import difflib
import functools
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

__all__ = ["HIGHLIGHT_STYLE", "edit_preview", "highlight_css", "markdown_html"]

HIGHLIGHT_STYLE = "github-dark"
_TOKEN_PREFIX = "tok-"
_LINK_SCHEMES = ("http://", "https://", "mailto:")
_MAX_HIGHLIGHT_CHARS = 100_000  # larger code blocks are shown plain (Pygments time stays small)
_MAX_MARKDOWN_CHARS = 1_000_000  # larger texts are shown as plain text by the page
_MAX_FILE_BYTES = 512 * 1024  # files read for a diff
_MAX_DIFF_LINES = 20_000  # sides longer than this are not diffed (additions only)


# ---------------------------------------------------------------- markdown


def _highlight(code: str, lang: str, attrs: str) -> str:
    if not lang or len(code) > _MAX_HIGHLIGHT_CHARS:
        return ""  # markdown-it escapes the code itself
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    return str(highlight(code, lexer, HtmlFormatter(nowrap=True, classprefix=_TOKEN_PREFIX)))


def _validate_link(url: str) -> bool:
    return url.strip().lower().startswith(_LINK_SCHEMES)


def _link_open(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer")
    token.attrSet("title", href)
    return self.renderToken(tokens, idx, options, env)


def _image_as_link(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    from markdown_it.common.utils import escapeHtml

    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = escapeHtml(f"🖼 {alt or 'image'}")
    if not _validate_link(src):
        return label
    url = escapeHtml(src)
    return f'<a href="{url}" target="_blank" rel="noopener noreferrer" title="{url}">{label}</a>'


def _cell_open(self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    # alignment as a class: the page's CSP allows no inline style attributes
    token = tokens[idx]
    style = str(token.attrGet("style") or "")
    if style:
        token.attrs.pop("style", None)
        align = style.partition(":")[2].strip()
        if align in ("left", "right", "center"):
            token.attrSet("class", f"align-{align}")
    return self.renderToken(tokens, idx, options, env)


@functools.cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False,
                                   "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.validateLink = _validate_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("th_open", _cell_open)
    md.add_render_rule("td_open", _cell_open)
    return md


def markdown_html(text: str) -> str | None:
    """``text`` (Markdown from a model) as HTML that carries no markup of its
    own; ``None`` when it is too long to render (the page shows plain text)."""
    if not text or len(text) > _MAX_MARKDOWN_CHARS:
        return None
    return str(_markdown().render(text))


@functools.cache
def highlight_css() -> str:
    """The stylesheet for highlighted code (served as ``/static/highlight.css``)."""
    from pygments.formatters import HtmlFormatter

    formatter = HtmlFormatter(style=HIGHLIGHT_STYLE, classprefix=_TOKEN_PREFIX)
    rules = formatter.get_style_defs(".md pre code").splitlines()
    # only the token colours, scoped to rendered Markdown (not Pygments' global pre/td rules)
    return "\n".join(line for line in rules if line.startswith(".md pre code .")) + "\n"


# ---------------------------------------------------------------- diffs


def _read_workspace_text(root: Path | None, raw: str) -> tuple[str | None, str | None]:
    """(text, None) for a readable text file inside ``root``, else (None, why):
    ``why`` is ``"missing"`` or a sentence naming the path."""
    if root is None:
        return None, f"{raw}: the workspace is not known"
    try:
        from smoke_core.plugin import Workspace, WorkspaceError

        path = Workspace(root).resolve(raw)
    except (WorkspaceError, OSError) as exc:
        return None, str(exc)
    try:
        # O_NONBLOCK: a FIFO planted at that path cannot stall the server
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"{raw} cannot be read ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{raw} is not a regular file"
        if info.st_size > _MAX_FILE_BYTES:
            return None, f"{raw} is {info.st_size:,} bytes, too large to diff"
        chunks: list[bytes] = []
        total = 0
        while total <= _MAX_FILE_BYTES:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if total > _MAX_FILE_BYTES:
        return None, f"{raw} is too large to diff"
    if b"\x00" in data[:8192]:
        return None, f"{raw} is a binary file"
    return data.decode("utf-8", "replace"), None


def _additions(path: str, text: str, *, header: bool = True) -> list[str]:
    lines = text.splitlines()
    out = ["--- /dev/null", f"+++ b/{path}", f"@@ -0,0 +1,{len(lines)} @@"] if header else []
    return out + ["+" + line for line in lines]


def _unified(path: str, old: str, new: str) -> list[str] | None:
    a, b = old.splitlines(), new.splitlines()
    if len(a) > _MAX_DIFF_LINES or len(b) > _MAX_DIFF_LINES:
        return None
    return list(difflib.unified_diff(a, b, fromfile=f"a/{path}", tofile=f"b/{path}", lineterm=""))


def _preview(path: str, lines: list[str], note: str | None) -> dict[str, Any]:
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    return {"path": path, "text": "\n".join(lines), "note": note, "added": added, "removed": removed}


def _strs(input: dict[str, Any], *keys: str) -> bool:
    return all(isinstance(input.get(k), str) for k in keys)


def edit_preview(tool_name: str, input: dict[str, Any], root: Path | None) -> dict[str, Any] | None:
    """``{path, text, note, added, removed}``: the unified diff an approval of
    this edit shows, or ``None`` when the call is not a recognised edit (the
    page then shows the input's fields). ``note`` says when the diff is not
    against the file as it is (file missing, unreadable, too large, text not
    found)."""
    if not isinstance(input, dict):
        return None
    if tool_name == "apply_patch" and _strs(input, "patch"):
        patch = input["patch"]
        return _preview("", patch.splitlines(), None)
    if tool_name == "edit_file" and _strs(input, "path", "old_string", "new_string"):
        path, old, new = input["path"], input["old_string"], input["new_string"]
        if old == "":
            return _preview(path, _additions(path, new), "creates a new file (old_string is empty)")
        text, why = _read_workspace_text(root, path)
        if text is not None:
            count = text.count(old)
            replace_all = input.get("replace_all") is True
            if count == 1 or (count > 1 and replace_all):
                updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
                lines = _unified(path, text, updated)
                if lines is not None:
                    return _preview(path, lines, None)
                note = f"{path} is too long to diff"
            elif count == 0:
                note = "old_string is not in the file as it is now: the edit will fail"
            else:
                note = f"old_string occurs {count} times and replace_all is not set: the edit will be refused"
        elif why == "missing":
            note = f"{path} does not exist: the edit will fail"
        else:
            note = str(why)
        lines = _unified(path, old, new) or (["-" + x for x in old.splitlines()] + ["+" + x for x in new.splitlines()])
        return _preview(path, lines, f"{note} — shown: old_string → new_string")
    if tool_name == "write_file" and _strs(input, "path", "content"):
        path, content = input["path"], input["content"]
        text, why = _read_workspace_text(root, path)
        if text is not None:
            lines = _unified(path, text, content)
            if lines is not None:
                return _preview(path, lines or [f"(no change: {path} already has this content)"],
                                "overwrites the existing file")
            why = f"{path} is too long to diff"
        note = "creates a new file" if why == "missing" else f"{why}: shown as additions"
        return _preview(path, _additions(path, content), note)
    if (tool_name == "replace_lines" and _strs(input, "path", "replacement")
            and isinstance(input.get("start_line"), int) and isinstance(input.get("end_line"), int)):
        path, start, end = input["path"], input["start_line"], input["end_line"]
        body = input["replacement"].replace("\r\n", "\n")
        if body.endswith("\n"):
            body = body[:-1]
        new_lines = body.split("\n") if input["replacement"] else []
        text, why = _read_workspace_text(root, path)
        if text is not None:
            lines = text.splitlines()
            if 1 <= start <= len(lines) + 1 and start - 1 <= end <= len(lines):
                old_lines = lines[start - 1:end]
                lo, hi = max(0, start - 4), min(len(lines), end + 3)
                before, after = lines[lo:start - 1], lines[end:hi]
                header = (f"@@ -{lo + 1},{len(before) + len(old_lines) + len(after)} "
                          f"+{lo + 1},{len(before) + len(new_lines) + len(after)} @@")
                out = [f"--- a/{path}", f"+++ b/{path}", header]
                out += [" " + x for x in before] + ["-" + x for x in old_lines]
                out += ["+" + x for x in new_lines] + [" " + x for x in after]
                return _preview(path, out, None)
            why = f"{path} has {len(lines)} lines: lines {start}-{end} are out of range and the call will fail"
        note = f"{path} does not exist: the call will fail" if why == "missing" else str(why)
        out = [f"@@ lines {start}-{end} of {path} are replaced by @@"] + ["+" + x for x in new_lines]
        return _preview(path, out, note)
    return None
