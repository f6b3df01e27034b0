"""Simple commands: the argv of each, normalised (the program by its
basename, git's global options skipped), wrappers looked through
(:mod:`.wrappers`), and the builtins and git subcommands that run or change
what later commands do.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from . import grammar
from .base import MAX_DEPTH, WalkerBase
from .model import Argv, DynamicWord, GlobWord, SimpleCommand
from .variables import (
    ASSIGNMENT,
    FOREIGN_SHELLS,
    GIT_COMMAND_KEYS,
    GIT_OPT_WITH_ARG,
    GIT_SAFE_CONFIG,
    NUMBER,
    SHELLS,
    SYSTEM_BIN_DIRS,
    is_dangerous_var,
)
from .wrappers import WRAPPERS, shell

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tree_sitter import Node

_DECLARATIONS = ("export", "declare", "typeset", "local", "readonly")
#: reserved words that cannot start a simple command (bash reports a syntax error)
_RESERVED = frozenset(("do", "done", "then", "else", "elif", "fi", "esac", "in", "}"))


class SimpleWalker(WalkerBase):
    def s_command(self, node: Node, feeds: list[str] | None = None, extra: list[Node] | None = None,
                  prefix: Node | None = None) -> None:
        kind = grammar.KIND
        if self.st.pending and feeds is None:
            feeds, extra = self.st.pending.pop(node.id, (None, None))
        assigns: list[tuple[str, str]] = []
        words: list[Node] = [prefix] if prefix is not None else []
        local_feeds = list(feeds or [])
        local_extra = list(extra or [])
        for c in node.children:
            t = kind[c.kind_id]
            if t == "variable_assignment":
                assigns.append(self.assignment(c, "command prefix"))
            elif t in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                self.redirect(c, local_feeds, local_extra)
            elif t == "command_name" or t in grammar.WORD_TYPES or t == "$":
                words.append(c)
            elif t == "subshell" or t in grammar.STATEMENT_TYPES:
                self.st.add_opaque(f"unexpected {t} inside a command")
                self.stmt(c)
            elif c.is_named:
                self.unknown(c)
        if local_extra:
            words.extend(local_extra)
            words.sort(key=lambda n: n.start_byte)
        first = words[0] if words else None
        if first is not None and kind[first.kind_id] == "command_name" and self.text(first) in _RESERVED:
            # the grammar takes `do echo x` for a command named do; bash stops with a syntax error
            self.st.add_error(f"syntax error: unexpected {self.text(first)!r}")
        argv, braces = self.words_to_tokens(words)
        if not argv:
            return
        if braces and braces[0]:
            self.st.add_opaque("brace expansion in program position")
        self.emit(argv, assigns, local_feeds, 0)

    def add(self, sc: SimpleCommand) -> None:
        self.st.details.append(sc)
        if not sc.container and not sc.speculative:
            self.st.commands.append(sc.argv)

    def speculate(self, args: Sequence[str]) -> None:
        """A wrapper's options could not be read: every later word might be the program."""
        for j, a in enumerate(args[:16]):
            if isinstance(a, (DynamicWord, GlobWord)) or a.startswith("-"):
                continue
            self.add(self.make(list(args[j:]), [], False, speculative=True))

    def make(self, argv: Sequence[str], assigns: Sequence[tuple[str, str]], container: bool,
             speculative: bool = False) -> SimpleCommand:
        prog = argv[0]
        assignments = tuple(assigns)
        if isinstance(prog, (DynamicWord, GlobWord)):
            forms: list[Argv] = [tuple(argv)]
            deny = list(forms)
            if isinstance(prog, GlobWord) and "/" in prog.rstrip("/"):
                deny.append((GlobWord(prog.rstrip("/").rsplit("/", 1)[-1]), *argv[1:]))
            return SimpleCommand(tuple(argv), assignments, container, tuple(forms), tuple(deny), speculative)
        rest = list(argv[1:])
        if "/" in prog:
            stripped = prog.rstrip("/")
            base = stripped.rsplit("/", 1)[-1] or prog
            folder = os.path.dirname(stripped)
            trusted = os.path.normpath(folder) in SYSTEM_BIN_DIRS if folder else False
        else:
            base, trusted = prog, True
        canon_rest = self._git_normalise(rest) if base == "git" else rest
        allow: list[Argv] = []
        deny_forms: list[Argv] = []
        for variant in ([canon_rest] if canon_rest is rest else [canon_rest, rest]):
            form = (base, *variant)
            deny_forms.append(form)
            if trusted:
                allow.append(form)
            if prog != base:
                deny_forms.append((prog, *variant))
                allow.append((prog, *variant))
        return SimpleCommand((base, *canon_rest), assignments, container, tuple(allow), tuple(deny_forms),
                             speculative)

    def _git_normalise(self, rest: list[str]) -> list[str]:
        """``rest`` without git's global options (``-C dir``, ``-c k=v``, ``--git-dir``, …)."""
        i, n = 0, len(rest)
        while i < n:
            a = rest[i]
            if isinstance(a, DynamicWord) or not a.startswith("-") or a == "-":
                break
            if a == "--":
                i += 1
                break
            key = a.split("=", 1)[0]
            if key in GIT_OPT_WITH_ARG:
                value: str | None = None
                if "=" in a and key.startswith("--"):
                    value = a.split("=", 1)[1]
                    i += 1
                elif key == "-C" and len(a) > 2:
                    i += 1
                elif key == "-c" and len(a) > 2:
                    value = a[2:]
                    i += 1
                else:
                    value = rest[i + 1] if i + 1 < n else ""
                    i += 2
                if key == "-c" and value is not None:
                    config_key, _, config_value = str(value).partition("=")
                    if isinstance(value, DynamicWord) or not GIT_SAFE_CONFIG.match(config_key):
                        self.st.add_opaque(f"git -c {config_key} (config can run commands)")
                    if config_key.lower().startswith("alias.") and config_value.startswith("!"):
                        self.nested(config_value[1:])
                    elif GIT_COMMAND_KEYS.match(config_key) and config_value:
                        self.nested(config_value.lstrip("!"))
                elif key == "--config-env":
                    self.st.add_opaque("git --config-env (config can run commands)")
                continue
            if key == "--exec-path" and "=" in a:
                self.st.add_opaque("git --exec-path")
            i += 1
        return rest[i:] if i else rest

    def _git_runs(self, rest: Sequence[str], wdepth: int) -> None:
        """git subcommands whose arguments are commands."""
        if not rest:
            return
        sub = rest[0]
        if sub == "rebase":
            for i, a in enumerate(rest):
                if a in ("-x", "--exec") and i + 1 < len(rest):
                    self.nested(rest[i + 1])
                elif a.startswith("--exec="):
                    self.nested(a.split("=", 1)[1])
        elif sub == "submodule" and "foreach" in rest:
            k = list(rest).index("foreach") + 1
            while k < len(rest) and rest[k] in ("--recursive", "-q", "--quiet"):
                k += 1
            if k < len(rest):
                self.nested(" ".join(rest[k:]))
        elif sub == "bisect" and len(rest) > 2 and rest[1] == "run":
            self.emit(list(rest[2:]), [], [], wdepth + 1)
        elif sub in ("filter-branch", "difftool", "mergetool") or (sub == "config" and any(
                GIT_COMMAND_KEYS.match(a) or a.lower().startswith("alias.") for a in rest[1:])):
            self.st.add_opaque(f"git {sub} may run configured commands")

    def emit(self, argv: list[str], assigns: list[tuple[str, str]], feeds: list[str], wdepth: int) -> None:
        prog = argv[0]
        if isinstance(prog, (DynamicWord, GlobWord)):
            what = "an expansion" if isinstance(prog, DynamicWord) else "a glob"
            self.st.add_opaque(f"the program name is {what}: {prog}")
            self.add(self.make(argv, assigns, False))
            return
        base = prog.rstrip("/").rsplit("/", 1)[-1] if "/" in prog else prog
        if wdepth > MAX_DEPTH:
            self.st.add_opaque("wrappers nested too deep")
            self.add(self.make(argv, assigns, False))
            return
        handler = WRAPPERS.get(base)
        if handler is None and (base in SHELLS or base in FOREIGN_SHELLS):
            handler = shell
        wrap = handler(self, base, argv[1:], feeds) if handler is not None else None
        if wrap is None:  # a plain command (or a wrapper with nothing to run)
            sc = self.make(argv, assigns, False)
            self.add(sc)
            self._final_checks(base, argv, sc.argv, wdepth)
            return
        self.add(self.make(argv, assigns, not wrap.counts))
        for name, value in wrap.assigns:
            self.note_assign(name, value, base)
        for inner in wrap.inners:
            if inner:
                self.emit(inner, [], [], wdepth + 1)
        for script in wrap.scripts:
            self.nested(script)

    def _final_checks(self, base: str, argv: Sequence[str], canon: Sequence[str], wdepth: int) -> None:
        args = argv[1:]
        opaque = self.st.add_opaque
        if base == "git":
            self._git_runs(canon[1:], wdepth)
        elif base in ("source", "."):
            opaque(f"source ({base}) runs a script in this shell")
        elif base == "alias":
            opaque("alias definition")
            for a in args:
                m = ASSIGNMENT.match(a) or re.match(r"^([^=]+)=(.*)$", a, re.S)
                if m:
                    self.nested(m.groups()[-1])
        elif base in ("enable", "fc"):
            opaque(f"{base} builtin")
        elif base == "hash" and any(a.startswith("-") and "p" in a for a in args):
            opaque("hash -p rebinds a command name")
        elif base == "let":
            if not all(NUMBER.match(a) for a in args):
                opaque("arithmetic evaluation of a variable or string")
        elif base in ("read", "mapfile", "readarray", "getopts", "printf"):
            self._assigning_builtin(base, args)
        elif base in _DECLARATIONS:
            for a in args:
                m = ASSIGNMENT.match(a)
                name = m.group(1) if m else a
                if is_dangerous_var(name) or (isinstance(a, DynamicWord) and not m):
                    opaque(f"{base} {name}")
        elif base in ("cd", "pushd"):
            self._cd(base, args)

    def _assigning_builtin(self, base: str, args: Sequence[str]) -> None:
        opaque = self.st.add_opaque
        for a in args:
            if isinstance(a, DynamicWord):
                if base != "printf":
                    opaque(f"{base} assigns a variable named by an expansion")
                continue
            if is_dangerous_var(a) or ("[" in a and base != "printf"):
                opaque(f"{base} assigns {a}")
        if base == "printf":
            for i, a in enumerate(args[:-1]):
                target = args[i + 1]
                if a == "-v" and (is_dangerous_var(target) or "[" in target or isinstance(target, DynamicWord)):
                    opaque(f"printf -v {target}")

    def _cd(self, base: str, args: Sequence[str]) -> None:
        targets = [a for a in args if not (a.startswith("-") and len(a) > 1) or isinstance(a, DynamicWord)]
        if base == "pushd" and targets and re.fullmatch(r"[+-]\d+", targets[0]):
            return
        if not targets:
            if base == "cd":
                self.st.cd_args.append("~")
            return
        target = targets[0]
        if isinstance(target, (DynamicWord, GlobWord)) or target == "-" or self.st.loop:
            self.st.cd_args.append(None)
        else:
            self.st.cd_args.append(target)

    def split_words(self, text: str) -> list[str]:
        """``text`` as shell words (``env -S 'STRING'``)."""
        sub = type(self)(text.encode("utf-8", "surrogateescape"), self.st, self.depth + 1)
        root = grammar.parser().parse(sub.src).root_node
        if root.has_error:
            self.st.add_opaque("env -S string does not parse")
        kind = grammar.KIND
        words: list[Node] = []
        stack = [root]
        while stack:
            n = stack.pop()
            if kind[n.kind_id] == "command":
                words = [c for c in n.children if kind[c.kind_id] == "command_name" or kind[c.kind_id] in grammar.WORD_TYPES]
                break
            stack.extend(reversed(n.children))
        return sub.words_to_tokens(words)[0]
