"""The walk's shared state and the base of the walker: the source, what the
walk found so far, and the nested parses (``sh -c '…'``, ``eval``, a heredoc
fed to a shell) that add to the same findings.

The walker is split by concern over :mod:`.statements`, :mod:`.words_walk`,
:mod:`.redirects` and :mod:`.simple`; this base declares what each part
calls in the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import grammar
from .model import SimpleCommand
from .variables import NUMBER
from .words import Part

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node

#: nested ``sh -c`` / ``eval`` / wrappers looked through at most this deep
MAX_DEPTH = 8


class State:
    """What one parse and its nested parses found."""

    __slots__ = (
        "assignments",
        "cd_args",
        "commands",
        "details",
        "error",
        "loop",
        "opaque",
        "pending",
        "source",
        "workdir",
        "workspace",
        "writes",
    )

    def __init__(self, source: str, workspace: Path | None, workdir: Path | None = None) -> None:
        self.source = source
        self.workspace = workspace
        #: where the command starts (the tool's ``workdir``), inside ``workspace``
        self.workdir = workdir if workdir is not None else workspace
        self.details: list[SimpleCommand] = []
        self.commands: list[tuple[str, ...]] = []
        self.assignments: list[tuple[str, str]] = []
        self.opaque: list[str] = []
        self.error: str | None = None
        self.writes: list[str] = []  # static redirection targets that write
        self.cd_args: list[str | None] = []  # None: a cd to an unknown folder
        self.loop = 0  # > 0 inside a loop or a function body
        #: command node id -> (feeds, extra words) that a parent node bound to it
        self.pending: dict[int, tuple[list[str], list[Node]]] = {}

    def add_opaque(self, reason: str) -> None:
        if reason not in self.opaque:
            self.opaque.append(reason)

    def add_error(self, message: str) -> None:
        if self.error is None:
            self.error = message


class WalkerBase:
    """The source being walked and the helpers every part of the walk uses."""

    def __init__(self, src: bytes, state: State, depth: int = 0) -> None:
        self.src = src
        self.st = state
        self.depth = depth

    def run(self) -> None:
        root = grammar.parser().parse(self.src).root_node
        if root.has_error:
            self.st.add_error(self.error_message(root))
        self.stmt(root)

    def error_message(self, root: Node) -> str:
        stack = [root]
        kind = grammar.KIND
        while stack:
            n = stack.pop()
            if n.is_error or n.is_missing:
                row, col = n.start_point
                if n.is_missing:
                    what = f"missing {kind[n.kind_id]!r}"
                else:
                    what = f"unexpected {self.src[n.start_byte:n.end_byte][:30].decode('utf-8', 'replace')!r}"
                nested = "in a nested command: " if self.depth else ""
                return f"{nested}syntax error at line {row + 1}, column {col + 1}: {what}"
            if n.has_error:
                stack.extend(reversed(n.children))
        return "syntax error"

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")

    def is_literal_index(self, index: Node) -> bool:
        s = self.text(index)
        return bool(NUMBER.match(s)) or s in ("@", "*")

    def nested(self, source: str) -> None:
        """Walk ``source`` as shell code that this command runs (``sh -c``, ``eval``, …)."""
        if self.depth >= MAX_DEPTH:
            self.st.add_opaque("nesting too deep")
            return
        type(self)(source.encode("utf-8", "surrogateescape"), self.st, self.depth + 1).run()

    # what the parts of the walk provide to each other (see the module docstring)

    def stmt(self, node: Node) -> None:
        raise NotImplementedError

    def children(self, node: Node) -> None:
        raise NotImplementedError

    def unknown(self, node: Node) -> None:
        raise NotImplementedError

    def expr(self, node: Node, arith: bool) -> None:
        raise NotImplementedError

    def assignment(self, node: Node, where: str) -> tuple[str, str]:
        raise NotImplementedError

    def note_assign(self, name: str, value: str, where: str) -> None:
        raise NotImplementedError

    def word_parts(self, node: Node, out: list[Part]) -> None:
        raise NotImplementedError

    def group_words(self, nodes: Sequence[Node]) -> list[list[Node]]:
        raise NotImplementedError

    def words_to_tokens(self, nodes: Sequence[Node]) -> tuple[list[str], list[bool]]:
        raise NotImplementedError

    def redirect(self, node: Node, feeds: list[str] | None, extra: list[Node] | None = None) -> None:
        raise NotImplementedError

    def heredoc_expansions(self, body: str) -> None:
        raise NotImplementedError

    def s_command(self, node: Node, feeds: list[str] | None = None, extra: list[Node] | None = None,
                  prefix: Node | None = None) -> None:
        raise NotImplementedError

    def add(self, sc: SimpleCommand) -> None:
        raise NotImplementedError

    def make(self, argv: Sequence[str], assigns: Sequence[tuple[str, str]], container: bool,
             speculative: bool = False) -> SimpleCommand:
        raise NotImplementedError

    def speculate(self, args: Sequence[str]) -> None:
        raise NotImplementedError

    def emit(self, argv: list[str], assigns: list[tuple[str, str]], feeds: list[str], wdepth: int) -> None:
        raise NotImplementedError

    def split_words(self, text: str) -> list[str]:
        raise NotImplementedError

    def plain(self, argv: Sequence[str]) -> None:
        """Record a command whose forms are its argv as it is (a declaration, ``[ … ]``)."""
        forms = (tuple(argv),)
        self.add(SimpleCommand(argv=tuple(argv), allow_forms=forms, deny_forms=forms))
