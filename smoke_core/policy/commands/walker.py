"""The whole walk (statements, words, redirections, simple commands) and
:func:`parse_command`, its entry point.

The walk of a source is cached (agents repeat commands): it depends on the
text alone. Where its redirections land is worked out again on every call,
because it depends on the workspace, the folder the command starts in and
the symlinks there now.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from threading import Lock

from .base import State
from .model import Argv, CommandParse, SimpleCommand
from .redirects import RedirectWalker, check_writes
from .simple import SimpleWalker
from .statements import STATEMENT_METHODS, StatementWalker
from .words_walk import WordWalker


class Walker(StatementWalker, WordWalker, RedirectWalker, SimpleWalker):
    """Walks one source (and the sources nested in it) into a :class:`State`."""


Walker.DISPATCH = {t: getattr(Walker, m) for t, m in STATEMENT_METHODS.items()}


@dataclass(frozen=True, slots=True)
class _Walked:
    details: tuple[SimpleCommand, ...]
    commands: tuple[Argv, ...]
    assignments: tuple[tuple[str, str], ...]
    opaque: tuple[str, ...]
    error: str | None
    writes: tuple[str, ...]
    cd_args: tuple[str | None, ...]


_CACHE_SIZE = 512
_cache: OrderedDict[str, _Walked] = OrderedDict()
_cache_lock = Lock()


def _walk(source: str) -> _Walked:
    with _cache_lock:
        hit = _cache.get(source)
        if hit is not None:
            _cache.move_to_end(source)
            return hit
    st = State(source, None)
    if "\x00" in source:
        st.add_error("the command holds a NUL byte")
    try:
        Walker(source.encode("utf-8", "surrogateescape"), st).run()
    except RecursionError:
        st.add_error("the command is nested too deeply to analyse")
    walked = _Walked(tuple(st.details), tuple(st.commands), tuple(st.assignments), tuple(st.opaque), st.error,
                     tuple(st.writes), tuple(st.cd_args))
    with _cache_lock:
        _cache[source] = walked
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return walked


@lru_cache(maxsize=64)
def _resolved(workspace: str) -> Path:
    """The workspace folder with its links resolved (the folder itself does not move during a run)."""
    return Path(os.path.realpath(workspace))


def _no_control(rel: str) -> str | None:
    return None


def parse_command(
    source: str,
    workspace: str | os.PathLike[str] | None = None,
    *,
    workdir: str | os.PathLike[str] | None = None,
    control: Callable[[str], str | None] | None = None,
) -> CommandParse:
    """Parse a shell command into normalised simple commands (see :class:`CommandParse`).

    ``workspace``: redirections that write outside it are opaque (without a
    workspace every write to a file is). ``workdir``: the folder the command
    starts in (inside the workspace; default its root). ``control``: says what
    a workspace-relative path controls (a control file), or None; a
    redirection writing one is opaque. Never raises for a bad command: what
    cannot be parsed is in ``error``.
    """
    walked = _walk(source)
    opaque = walked.opaque
    if walked.writes:
        ws = _resolved(os.fspath(workspace)) if workspace is not None else None
        start = Path(os.path.realpath(os.path.join(ws, workdir))) if workdir is not None and ws is not None else ws
        st = State(source, ws, start)
        st.writes = list(walked.writes)
        st.cd_args = list(walked.cd_args)
        st.opaque = list(opaque)
        check_writes(st, control or _no_control)
        opaque = tuple(st.opaque)
    return CommandParse(source, walked.details, walked.assignments, opaque, walked.error, walked.commands)
