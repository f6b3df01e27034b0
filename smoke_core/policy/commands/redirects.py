"""Redirections and heredocs: which files a command writes (``>``, ``>>``,
``&>``, …; an allow rule never covers a write outside the workspace or into a
control file), what a heredoc or here-string feeds to a shell (parsed as
commands), and the expansions an unquoted heredoc body runs.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

from . import grammar
from .base import MAX_DEPTH, State, WalkerBase
from .model import DynamicWord, GlobWord
from .words import Part, tokens_from_parts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tree_sitter import Node

_DEV_OK = frozenset(["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"])
_WRITE_OPS = frozenset([">", ">>", ">|", "&>", "&>>", "<>"])


class RedirectWalker(WalkerBase):
    def redirect(self, node: Node, feeds: list[str] | None, extra: list[Node] | None = None) -> None:
        kind = grammar.KIND
        t = kind[node.kind_id]
        if t == "file_redirect":
            self._file_redirect(node, extra)
        elif t == "herestring_redirect":
            self.st.add_opaque("here-string")
            parts: list[Part] = []
            for c in node.children:
                if c.is_named:
                    self.word_parts(c, parts)
            if feeds is not None:
                feeds.append("".join(p for p, _ in parts))
        elif t == "heredoc_redirect":
            self._heredoc(node, feeds, extra)
        else:  # a stray heredoc_start / body / end (inside an ERROR)
            for c in node.children:
                self.stmt(c)

    def _file_redirect(self, node: Node, extra: list[Node] | None) -> None:
        kind = grammar.KIND
        op = None
        dests = []
        for c in node.children:
            if kind[c.kind_id] == "file_descriptor":
                continue
            if not c.is_named:
                op = kind[c.kind_id]
            else:
                dests.append(c)
        if not dests:
            return  # >&- / <&-
        first, rest = dests[0], dests[1:]
        if rest:
            if extra is not None:
                extra.extend(rest)  # grammar quirk: in `git >/dev/null push` push is a redirect child
            else:
                self.st.add_opaque("words after a redirection")
                for r in rest:
                    self.word_parts(r, [])
        parts: list[Part] = []
        self.word_parts(first, parts)
        tokens, _ = tokens_from_parts(parts, want_brace=False)
        target = tokens[0] if len(tokens) == 1 else DynamicWord(self.text(first))
        write = op in _WRITE_OPS or (op == ">&" and not re.fullmatch(r"\d+|-", target))
        if isinstance(target, (DynamicWord, GlobWord)) or len(tokens) != 1:
            if write or op in (">&", "<&"):
                self.st.add_opaque(f"redirection target is an expansion: {self.text(first)}")
            return
        if write:
            self.st.writes.append(target)

    def _heredoc(self, node: Node, feeds: list[str] | None, extra: list[Node] | None) -> None:
        kind = grammar.KIND
        ch = node.children
        start = next((c for c in ch if kind[c.kind_id] == "heredoc_start"), None)
        end = next((c for c in ch if kind[c.kind_id] == "heredoc_end"), None)
        body_node = next((c for c in ch if kind[c.kind_id] == "heredoc_body"), None)
        quoted = start is not None and any(q in self.text(start) for q in "'\"\\")
        # The body is taken from the source, not from heredoc_body: the grammar
        # misparses some bodies (one starting with a backslash becomes a `word`
        # child and heredoc_body is empty, without an error).
        src = self.src
        newline = src.find(b"\n", start.end_byte) if start is not None else -1
        body_start = newline + 1 if newline >= 0 else node.end_byte
        body_end = (src.rfind(b"\n", 0, end.start_byte) + 1
                    if end is not None and end.end_byte > end.start_byte else len(src))
        body_end = max(body_end, body_start)
        body = src[body_start:body_end].decode("utf-8", "surrogateescape")
        seen = src[body_node.start_byte:body_node.end_byte] if body_node is not None else b""
        if b"".join(seen.split()) != b"".join(src[body_start:body_end].split()):
            self.st.add_opaque("heredoc misparsed by tree-sitter")
        if not quoted and ("$" in body or "`" in body):
            self.heredoc_expansions(body)
        if feeds is not None:
            feeds.append(body)
        for c in ch:
            ct = kind[c.kind_id]
            if not c.is_named or ct in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            if body_start <= c.start_byte < body_end:
                continue  # part of the body text
            if ct in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                self.redirect(c, feeds, extra)
            else:
                self.stmt(c)  # the rest of the pipeline or list on the heredoc's line

    def heredoc_expansions(self, body: str) -> None:
        """An unquoted heredoc body expands like a double-quoted string (except
        that ``"`` is literal). tree-sitter only half parses it (backticks and
        some ``$x`` stay text), so the body is parsed again as that string."""
        out: list[str] = []
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            if c == "\\" and i + 1 < n and body[i + 1] in "$`\\\n":
                out.append(body[i:i + 2])
                i += 2
                continue
            out.append("\\\\" if c == "\\" else '\\"' if c == '"' else c)
            i += 1
        if self.depth >= MAX_DEPTH:
            self.st.add_opaque("nesting too deep")
            return
        synthetic = ('"' + "".join(out) + '"').encode("utf-8", "surrogateescape")
        sub = type(self)(synthetic, self.st, self.depth + 1)
        root = grammar.parser().parse(synthetic).root_node
        if root.has_error:
            self.st.add_error("heredoc body: " + sub.error_message(root))
        node = root
        while grammar.KIND[node.kind_id] != "string" and node.named_child_count:
            node = node.named_children[0]
        if grammar.KIND[node.kind_id] != "string":
            self.st.add_opaque("heredoc body could not be analysed")
            sub.stmt(root)
            return
        sub.word_parts(node, [])


# ---------------------------------------------------------------- where the writes land


def _possible_cwds(start: Path, cd_args: list[str | None]) -> list[str] | None:
    """Every folder the shell may be in when a redirection runs: each ``cd``
    applied in source order, each one optionally (branches, subshells), so the
    union is conservative. A ``cd`` inside a loop or function, to an expansion
    or to ``-`` was recorded as None: unknown."""
    if any(a is None for a in cd_args):
        return None
    cwds = {str(start)}
    home = os.path.expanduser("~")
    for a in cd_args:
        assert a is not None
        if a.startswith("~") and not (a == "~" or a.startswith("~/")):
            return None
        new = set(cwds)
        for c in cwds:
            p = home if a == "~" else os.path.join(home, a[2:]) if a.startswith("~/") else os.path.join(c, a)
            new.add(os.path.normpath(p))
        if len(new) > 64:
            return None
        cwds = new
    return sorted(cwds)


def _real(path: str, ws: str) -> str:
    """``path`` normalised; symlinks are followed only below ``ws`` (resolved
    already), where an existing link could point outside."""
    p = os.path.normpath(path)
    if p == ws or p.startswith(ws + os.sep):
        cur = ws
        for part in p[len(ws):].split(os.sep):
            if not part:
                continue
            cur = cur + os.sep + part
            try:
                if stat.S_ISLNK(os.lstat(cur).st_mode):
                    return os.path.realpath(p)
            except OSError:
                break  # does not exist (yet): nothing further can be a link
    return p


def check_writes(st: State, control: Callable[[str], str | None]) -> None:
    """Make the parse opaque for each redirection that writes outside the
    workspace or into a control file (``control(relative path)`` says what
    the file controls, or None)."""
    if not st.writes:
        return
    ws = st.workspace
    cwds = None
    root = str(ws) if ws is not None else ""
    for target in st.writes:
        if target in _DEV_OK or (target.startswith("/dev/fd/") and target[8:].isdigit()):
            continue
        if ws is None:
            st.add_opaque(f"redirection writes {target} (no workspace given)")
            continue
        if target.startswith("~"):
            if not (target == "~" or target.startswith("~/")):
                st.add_opaque(f"redirection writes {target}")
                continue
            target = os.path.expanduser(target)
        if target.startswith("/"):
            candidates = [target]
        else:
            if cwds is None:
                cwds = _possible_cwds(st.workdir or ws, st.cd_args)
                if cwds is None:
                    st.add_opaque(f"redirection writes relative {target} after cd to an unknown directory")
                    continue
            candidates = [os.path.join(c, target) for c in cwds]
        for p in candidates:
            real = _real(p, root)
            if not (real == root or real.startswith(root + os.sep)):
                st.add_opaque(f"redirection writes outside the workspace: {target}")
                break
            what = control(real[len(root) + 1:]) if real != root else None
            if what is not None:
                st.add_opaque(f"redirection writes a control file: {target} ({what})")
                break
