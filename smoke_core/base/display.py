"""Show text to a person as what it is (DESIGN §9: what the person approves
is exactly what runs).

A terminal interprets control characters: ``touch X;\\x1bM\\x1bE  $ ls -la``
prints as ``$ ls -la`` (``ESC M`` moves the cursor up, ``ESC E`` to the next
line), ``\\r`` returns to the start of the line, ``\\b`` erases, bidi
overrides reorder what follows, zero-width characters hide, and thousands of
spaces push the rest of a command out of sight. :func:`visible` turns every
such character into a visible mark, so the text shown is the text that runs.
"""

from __future__ import annotations

import re
import unicodedata

#: How the escape character is shown (U+241B SYMBOL FOR ESCAPE).
ESC_MARK = "␛"
#: Whitespace runs at least this long are shown as ``⟨N spaces⟩``.
DEFAULT_SPACE_RUN = 16
#: Inputs longer than this get a length warning beside the approval prompt.
LONG_INPUT = 2000

_NAMES = {
    0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM", 0x2060: "WJ",
    0xFEFF: "BOM", 0x00AD: "SHY", 0x180E: "MVS", 0x061C: "ALM",
    0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO",
    0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
    0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR", 0x00A0: "NBSP",
}


def _mark(ch: str, keep_tabs: bool = False) -> str | None:
    """The visible form of ``ch``, or None when it shows as itself."""
    code = ord(ch)
    if ch == "\n" or (keep_tabs and ch == "\t"):
        return None
    if code == 0x1B:
        return ESC_MARK
    if code < 0x20:
        return chr(0x2400 + code)  # control pictures: ␀ … ␟ (␍ for \r, ␈ for \b, ␉ for \t)
    if code == 0x7F:
        return "␡"
    if 0x80 <= code <= 0x9F:
        return f"⟨U+{code:04X}⟩"  # C1 controls (0x9B is CSI on some terminals)
    if 0x2400 <= code <= 0x2426 or ch in "⟨⟩":
        return f"⟨U+{code:04X}⟩"  # a literal mark would be mistaken for one of ours
    name = _NAMES.get(code)
    if name is not None:
        return f"⟨{name}⟩"
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"):
        return f"⟨U+{code:04X}⟩"
    if category == "Zs" and ch != " ":
        return f"⟨U+{code:04X}⟩"  # spaces that do not look like what they are
    return None


_SPECIAL = re.compile(r"[^\x20-\x7e\n]")


def visible(text: str, *, space_run: int = DEFAULT_SPACE_RUN, keep_tabs: bool = False) -> str:
    """``text`` with control and invisible characters made visible: ESC as
    ``␛`` (so ``\\x1bM`` shows as ``␛M``), other C0 controls as control
    pictures (``␍`` for ``\\r``, ``␈`` for ``\\b``, ``␉`` for tab), DEL as
    ``␡``, C1 controls, bidi overrides and isolates, zero-width and unusual
    space characters as ``⟨NAME⟩`` / ``⟨U+XXXX⟩``, and runs of
    ``space_run`` or more spaces as ``⟨N spaces⟩``. Newlines stay newlines.
    Nothing is removed: every character of ``text`` has a visible form.
    ``space_run=0`` leaves spaces alone; ``keep_tabs`` leaves tabs (for model
    text and command output, which are shown but not approved)."""
    text = str(text)
    if _SPECIAL.search(text):
        out: list[str] = []
        for ch in text:
            mark = _mark(ch, keep_tabs)
            out.append(ch if mark is None else mark)
        text = "".join(out)
    if space_run and " " * space_run in text:
        text = re.sub(f" {{{space_run},}}", lambda m: f"⟨{len(m.group(0))} spaces⟩", text)
    return text


def hidden_characters(text: str) -> int:
    """How many characters of ``text`` :func:`visible` has to mark (0 = it shows as itself)."""
    return sum(1 for ch in str(text) if _mark(ch) is not None)


def length_note(text: str) -> str | None:
    """A warning line for long inputs (shown whole anyway), or None."""
    text = str(text)
    if len(text) < LONG_INPUT:
        return None
    lines = text.count("\n") + 1
    return f"long input: {len(text):,} characters, {lines:,} lines — all of it is shown; read it before approving"
