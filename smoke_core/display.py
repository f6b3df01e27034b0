"""The display door: text shown to a person as what it is (control and
invisible characters made visible; DESIGN §9).

The implementation is in :mod:`smoke_core.base.display`.
"""

from __future__ import annotations

from .base.display import MARKED, hidden_characters, length_note, marked_table, visible

__all__ = [
    "MARKED",
    "hidden_characters",
    "length_note",
    "marked_table",
    "visible",
]
