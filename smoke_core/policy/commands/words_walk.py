"""The walk over words: each word node becomes parts (:mod:`.words`), with
command and process substitutions walked (their commands count, and make the
command opaque), expansions checked for what bash evaluates in them, and
adjacent nodes joined where the grammar splits one word in two.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import grammar
from .base import WalkerBase
from .words import (
    DYNAMIC,
    QUOTED,
    UNQUOTED,
    Part,
    ansi_c_decode,
    dq_unescape,
    tokens_from_parts,
    unquoted_parts,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node

_GAP = re.compile(rb"^(?:\\\r?\n)*$")
_SPECIAL_BYTES = re.compile(rb"[\\*?\[{]")
_AS_TEXT = frozenset(("number", "extglob_pattern", "regex", "test_operator", "variable_name",
                      "special_variable_name", "file_descriptor", "brace_expression"))


class WordWalker(WalkerBase):
    def word_parts(self, node: Node, out: list[Part]) -> None:
        kind = grammar.KIND
        t = kind[node.kind_id]
        if t == "word":
            unquoted_parts(self.text(node), out)
        elif t == "raw_string":
            out.append((self.text(node)[1:-1], QUOTED))
        elif t in ("string", "translated_string"):
            for c in node.children:
                ct = kind[c.kind_id]
                if ct in ('"', '$"'):
                    continue
                if ct == "string_content":
                    out.append((dq_unescape(self.text(c)), QUOTED))
                elif c.is_named:
                    sub: list[Part] = []
                    self.word_parts(c, sub)
                    out.extend((p, DYNAMIC if k == DYNAMIC else QUOTED) for p, k in sub)
                else:
                    out.append((self.text(c), QUOTED))
        elif t == "ansi_c_string":
            out.append((ansi_c_decode(self.text(node)[2:-1]), QUOTED))
        elif t == "concatenation":
            ch = node.children
            for i, c in enumerate(ch):
                if (kind[c.kind_id] == "$" and i + 1 < len(ch) and kind[ch[i + 1].kind_id] == "string"
                        and ch[i + 1].start_byte == c.end_byte):
                    continue  # $"…", a locale string
                if c.is_named:
                    self.word_parts(c, out)
                else:
                    out.append((self.text(c), UNQUOTED))
        elif t in _AS_TEXT:
            out.append((self.text(node), UNQUOTED))
        elif t == "simple_expansion":
            out.append((self.text(node), DYNAMIC))
        elif t == "expansion":
            self._check_expansion(node)
            out.append((self.text(node), DYNAMIC))
        elif t in ("command_substitution", "process_substitution"):
            self.st.add_opaque(t.replace("_", " "))
            self.children(node)
            out.append((self.text(node), DYNAMIC))
        elif t == "arithmetic_expansion":
            for c in node.children:
                if c.is_named:
                    self.expr(c, arith=True)
            out.append((self.text(node), DYNAMIC))
        elif t == "array":
            for c in node.children:
                if c.is_named:
                    self.word_parts(c, [])
            out.append((self.text(node), DYNAMIC))
        elif t == "command_name":
            for c in node.children:
                if c.is_named:
                    self.word_parts(c, out)
                else:
                    out.append((self.text(c), UNQUOTED))
        elif t == "string_content":
            out.append((dq_unescape(self.text(node)), QUOTED))
        elif not node.is_named:
            out.append((self.text(node), UNQUOTED))
        else:
            # an unknown node or an ERROR inside a word: opaque, walked for commands
            if t == "ERROR":
                self.st.add_error("syntax error")
            else:
                self.st.add_opaque(f"unhandled node type {t!r}")
            for c in node.children:
                self.stmt(c)
            out.append((self.text(node), DYNAMIC))

    def _check_expansion(self, node: Node) -> None:
        kind = grammar.KIND
        ch = node.children
        for i, c in enumerate(ch):
            t = kind[c.kind_id]
            if t == "!" and i == 1:
                self.st.add_opaque("indirect expansion ${!...}")
            elif t == "subscript":
                index = c.child_by_field_name("index")
                if index is not None:
                    if not self.is_literal_index(index):
                        self.st.add_opaque("array subscript evaluated arithmetically")
                    self.word_parts(index, [])
            elif t == ":" and i + 1 < len(ch):
                nxt = ch[i + 1]
                if kind[nxt.kind_id] != "number" and nxt.is_named:
                    self.st.add_opaque("substring offset evaluated arithmetically")
            elif c.is_named and t not in ("variable_name", "special_variable_name"):
                self.word_parts(c, [])
        if b"@P}" in self.src[node.start_byte:node.end_byte]:
            self.st.add_opaque("prompt expansion ${...@P}")

    def group_words(self, nodes: Sequence[Node]) -> list[list[Node]]:
        """Adjacent nodes (no gap, or only backslash-newlines between them) are one word."""
        groups: list[list[Node]] = []
        prev_end = -1
        src = self.src
        for n in nodes:
            start = n.start_byte
            if prev_end >= 0 and (start == prev_end or (prev_end < start and src[prev_end] == 92
                                                         and _GAP.match(src[prev_end:start]))):
                groups[-1].append(n)
            else:
                groups.append([n])
            prev_end = n.end_byte
        return groups

    def words_to_tokens(self, nodes: Sequence[Node]) -> tuple[list[str], list[bool]]:
        """The argv words of ``nodes``, and for each whether brace expansion made it."""
        kind = grammar.KIND
        tokens: list[str] = []
        braces: list[bool] = []
        src = self.src
        for group in self.group_words(nodes):
            if len(group) == 1:
                n = group[0]
                k = kind[n.kind_id]
                if k == "command_name" and n.child_count == 1:
                    n = n.children[0]
                    k = kind[n.kind_id]
                if k == "word":  # the common case: a plain word without specials
                    raw = src[n.start_byte:n.end_byte]
                    if not _SPECIAL_BYTES.search(raw):
                        tokens.append(raw.decode("utf-8", "surrogateescape"))
                        braces.append(False)
                        continue
            parts: list[Part] = []
            for i, n in enumerate(group):
                if kind[n.kind_id] == "$" and i + 1 < len(group) and kind[group[i + 1].kind_id] == "string":
                    continue
                self.word_parts(n, parts)
            toks, expanded = tokens_from_parts(parts)
            tokens.extend(toks)
            braces.extend([expanded] * len(toks))
        return tokens, braces
