"""What a wrapper handler says a wrapper runs (:class:`Wrap`), and reading
GNU-style options to find where the wrapped command starts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .model import DynamicWord

if TYPE_CHECKING:
    from .base import WalkerBase


@dataclass
class Wrap:
    inners: list[list[str]] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    assigns: list[tuple[str, str]] = field(default_factory=list)
    #: the wrapper itself must be allowed (sudo, find -exec, …)
    counts: bool = False


Handler = Callable[["WalkerBase", str, list[str], list[str]], "Wrap | None"]


def skip_options(args: Sequence[str], short_arg: str = "", long_arg: Iterable[str] = ()) -> int | None:
    """The index of the first operand after GNU-style options (``short_arg``
    and ``long_arg`` take a value); None when an option is an expansion."""
    takes = frozenset(long_arg)
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if isinstance(a, DynamicWord):
            return None
        if a == "--":
            return i + 1
        if a.startswith("--"):
            i += 2 if ("=" not in a and a in takes) else 1
            continue
        if a.startswith("-") and len(a) > 1:
            i += 2 if value_follows(a[1:], short_arg) else 1
            continue
        return i
    return n


def value_follows(cluster: str, short_arg: str) -> bool:
    """True when the short-option cluster ``cluster`` (``-xvf`` without the
    dash) ends in an option of ``short_arg`` and so takes the next word as its
    value (``-f FILE``); an option of ``short_arg`` inside it takes the rest
    of the cluster instead (``-fFILE``)."""
    for k, ch in enumerate(cluster):
        if ch in short_arg:
            return k == len(cluster) - 1
    return False
