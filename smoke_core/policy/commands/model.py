"""What a parse returns: argv words (some known only at run time), simple
commands with the spellings rules are tried against, and the whole parse.

A parse is immutable (it is cached by its source and shared by every rule
and every plugin that looks at it); :attr:`CommandParse.commands` hands out
fresh lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class DynamicWord(str):
    """An argv word whose value is only known when the command runs (``$x``,
    ``"$x"y``, ``$(…)``, xargs' input, find's ``{}``). Its text is the source
    spelling with the quotes of its literal parts removed. Equal to its text."""

    __slots__ = ()


class GlobWord(str):
    """An argv word with unquoted ``* ? [``: the shell may replace it with zero
    or more file names. Equal to its text."""

    __slots__ = ()


Argv = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command of a parse (wrapper layers included)."""

    #: the canonical argv: the program by its basename, git's global options skipped
    argv: Argv
    #: leading ``NAME=value`` words (``CI=1 pytest``), also ``env NAME=value`` / ``sudo NAME=value``
    assignments: tuple[tuple[str, str], ...] = ()
    #: a transparent wrapper (``timeout 5 X``, ``env X``, ``sh -c '…'``): its inner
    #: commands are listed too; allow rules need only those, deny/ask rules see both
    container: bool = False
    #: spellings an allow rule may match (the basename only for bare programs and
    #: programs in system folders; the path as written; git without its global options)
    allow_forms: tuple[Argv, ...] = ()
    #: every spelling a deny or ask rule is tried against
    deny_forms: tuple[Argv, ...] = ()
    #: a guess at what a wrapper whose options could not be read may run
    #: (``uv run --new-option x rm v``): a deny rule matching it only asks
    speculative: bool = False


@dataclass(frozen=True, slots=True)
class CommandParse:
    """A shell command as the permission rules see it.

    ``error``: the grammar could not parse all of it (the command always asks
    a person). ``opaque``: why no allow rule may trust the parse (a command or
    process substitution, ``eval``, ``source``, a function definition, an
    assignment to a variable in ``DANGEROUS_VARS`` (``smoke_core.policy.commands.variables``), a
    redirection that writes outside the workspace, …); deny and ask rules
    still see every command the parse found.
    """

    source: str
    details: tuple[SimpleCommand, ...] = ()
    #: every ``NAME=value`` seen (leading, bare, env/sudo, export, for-loop variables)
    assignments: tuple[tuple[str, str], ...] = ()
    opaque: tuple[str, ...] = ()
    error: str | None = None
    #: rebuilt from ``details`` (not compared)
    _commands: tuple[Argv, ...] = field(default=(), compare=False, repr=False)

    @property
    def commands(self) -> list[list[str]]:
        """The effective argv of every simple command, in source order: wrapper
        layers that only pass a command on (``env``, ``timeout 5``, ``sh -c``) are
        left out (their inner commands are listed), privileged ones (``sudo``,
        ``find -exec``) are listed as well as what they run. Fresh lists."""
        return [list(argv) for argv in self._commands]

    @property
    def clear(self) -> bool:
        """True when the parse saw everything: no syntax error, nothing opaque."""
        return self.error is None and not self.opaque
