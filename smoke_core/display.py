"""The display door: text shown to a person as what it is (control and
invisible characters made visible; DESIGN §9).

The implementation is in :mod:`smoke_core.base.display`.
"""

from __future__ import annotations

from .base.display import hidden_characters, length_note, visible

__all__ = [
    "hidden_characters",
    "length_note",
    "visible",
]
