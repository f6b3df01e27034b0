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

#: Characters marked wherever text is shown to a person, by every front end
#: (the terminal here; the web page and ACP get this same table): those that
#: display as nothing or as blank, that reorder text, or that look like ASCII
#: shell syntax without being it. ``(first, last, name, kind)``; kind is
#: ``invisible``, ``bidi``, ``space`` or ``confusable``. Controls (C0, C1, DEL)
#: and every format, private-use, unassigned or separator character are marked
#: too, by their Unicode category.
MARKED: tuple[tuple[int, int, str, str], ...] = (
    (0x00A0, 0x00A0, "NO-BREAK SPACE", "space"),
    (0x00AD, 0x00AD, "SOFT HYPHEN", "invisible"),
    (0x034F, 0x034F, "COMBINING GRAPHEME JOINER", "invisible"),
    (0x061C, 0x061C, "ARABIC LETTER MARK", "bidi"),
    (0x115F, 0x115F, "HANGUL CHOSEONG FILLER", "invisible"),
    (0x1160, 0x1160, "HANGUL JUNGSEONG FILLER", "invisible"),
    (0x17B4, 0x17B5, "KHMER VOWEL INHERENT", "invisible"),
    (0x180B, 0x180D, "MONGOLIAN FREE VARIATION SELECTOR", "invisible"),
    (0x180E, 0x180E, "MONGOLIAN VOWEL SEPARATOR", "invisible"),
    (0x180F, 0x180F, "MONGOLIAN FREE VARIATION SELECTOR FOUR", "invisible"),
    (0x1680, 0x1680, "OGHAM SPACE MARK", "space"),
    (0x2000, 0x200A, "SPACE", "space"),
    (0x200B, 0x200B, "ZERO WIDTH SPACE", "invisible"),
    (0x200C, 0x200C, "ZERO WIDTH NON-JOINER", "invisible"),
    (0x200D, 0x200D, "ZERO WIDTH JOINER", "invisible"),
    (0x200E, 0x200F, "DIRECTIONAL MARK", "bidi"),
    (0x2028, 0x2028, "LINE SEPARATOR", "invisible"),
    (0x2029, 0x2029, "PARAGRAPH SEPARATOR", "invisible"),
    (0x202A, 0x202E, "DIRECTIONAL EMBEDDING OR OVERRIDE", "bidi"),
    (0x202F, 0x202F, "NARROW NO-BREAK SPACE", "space"),
    (0x205F, 0x205F, "MEDIUM MATHEMATICAL SPACE", "space"),
    (0x2060, 0x2064, "WORD JOINER OR INVISIBLE OPERATOR", "invisible"),
    (0x2066, 0x2069, "DIRECTIONAL ISOLATE", "bidi"),
    (0x206A, 0x206F, "DEPRECATED FORMAT CHARACTER", "invisible"),
    (0x2800, 0x2800, "BRAILLE PATTERN BLANK", "invisible"),
    (0x3000, 0x3000, "IDEOGRAPHIC SPACE", "space"),
    (0x3164, 0x3164, "HANGUL FILLER", "invisible"),
    (0xFE00, 0xFE0F, "VARIATION SELECTOR", "invisible"),
    (0xFEFF, 0xFEFF, "ZERO WIDTH NO-BREAK SPACE (BOM)", "invisible"),
    (0xFFA0, 0xFFA0, "HALFWIDTH HANGUL FILLER", "invisible"),
    (0xFFF9, 0xFFFB, "INTERLINEAR ANNOTATION", "invisible"),
    (0x1BCA0, 0x1BCA3, "SHORTHAND FORMAT CONTROL", "invisible"),
    (0x1D173, 0x1D17A, "MUSICAL SYMBOL FORMAT", "invisible"),
    (0xE0000, 0xE007F, "TAG", "invisible"),
    (0xE0100, 0xE01EF, "VARIATION SELECTOR SUPPLEMENT", "invisible"),
    # they look like shell syntax and are not
    (0x01C3, 0x01C3, "LATIN LETTER RETROFLEX CLICK (looks like !)", "confusable"),
    (0x02BC, 0x02BC, "MODIFIER LETTER APOSTROPHE (looks like ')", "confusable"),
    (0x037E, 0x037E, "GREEK QUESTION MARK (looks like ;)", "confusable"),
    (0x2024, 0x2024, "ONE DOT LEADER (looks like .)", "confusable"),
    (0x2044, 0x2044, "FRACTION SLASH (looks like /)", "confusable"),
    (0x2215, 0x2215, "DIVISION SLASH (looks like /)", "confusable"),
    (0x2223, 0x2223, "DIVIDES (looks like |)", "confusable"),
    (0xFF04, 0xFF04, "FULLWIDTH DOLLAR SIGN (looks like $)", "confusable"),
    (0xFF06, 0xFF06, "FULLWIDTH AMPERSAND (looks like &)", "confusable"),
    (0xFF1B, 0xFF1B, "FULLWIDTH SEMICOLON (looks like ;)", "confusable"),
    (0xFF5C, 0xFF5C, "FULLWIDTH VERTICAL LINE (looks like |)", "confusable"),
)
#: Emoji presentation selectors, left alone right after a symbol (``❤️``): only there they are ordinary.
EMOJI_SELECTORS = frozenset((0xFE0E, 0xFE0F))

#: short marks for the most common ones
_NAMES = {
    0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM", 0x2060: "WJ",
    0xFEFF: "BOM", 0x00AD: "SHY", 0x180E: "MVS", 0x061C: "ALM",
    0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO",
    0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
    0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR", 0x00A0: "NBSP",
}


def _build_marked() -> tuple[frozenset[int], list[tuple[int, int]]]:
    singles: set[int] = set()
    ranges: list[tuple[int, int]] = []
    for first, last, _name, _kind in MARKED:
        if last - first < 64:
            singles.update(range(first, last + 1))
        else:
            ranges.append((first, last))
    return frozenset(singles), ranges


_MARKED_SINGLES, _MARKED_RANGES = _build_marked()


def marked_table() -> list[dict[str, object]]:
    """:data:`MARKED` as JSON-ready entries (``first``, ``last``, ``name``, ``kind``), for front ends
    that mark characters themselves (the web page): one table for every front end."""
    return [{"first": a, "last": b, "name": name, "kind": kind} for a, b, name, kind in MARKED]


def _is_marked(code: int) -> bool:
    return code in _MARKED_SINGLES or any(a <= code <= b for a, b in _MARKED_RANGES)


def _mark(ch: str, keep_tabs: bool = False, after: str = "") -> str | None:
    """The visible form of ``ch`` (``after``: the character before it), or None when it shows as itself."""
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
    if code in EMOJI_SELECTORS and after and unicodedata.category(after) == "So":
        return None  # ❤️: an emoji's presentation, nothing hidden
    if _is_marked(code):
        name = _NAMES.get(code)
        return f"⟨{name}⟩" if name else f"⟨U+{code:04X}⟩"
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
    ``␡``, C1 controls, and every character of :data:`MARKED` (bidi
    overrides and isolates, zero-width and blank-looking characters such as
    the Hangul fillers and U+2800, variation selectors, look-alikes of shell
    syntax) and of the format, private-use and unassigned categories as
    ``⟨NAME⟩`` / ``⟨U+XXXX⟩``, and runs of
    ``space_run`` or more spaces as ``⟨N spaces⟩``. Newlines stay newlines.
    Nothing is removed: every character of ``text`` has a visible form.
    ``space_run=0`` leaves spaces alone; ``keep_tabs`` leaves tabs (for model
    text and command output, which are shown but not approved)."""
    text = str(text)
    if _SPECIAL.search(text):
        out: list[str] = []
        before = ""
        for ch in text:
            mark = _mark(ch, keep_tabs, before)
            out.append(ch if mark is None else mark)
            before = ch
        text = "".join(out)
    if space_run and " " * space_run in text:
        text = re.sub(f" {{{space_run},}}", lambda m: f"⟨{len(m.group(0))} spaces⟩", text)
    return text


def hidden_characters(text: str) -> int:
    """How many characters of ``text`` :func:`visible` has to mark (0 = it shows as itself)."""
    text = str(text)
    return sum(1 for i, ch in enumerate(text) if _mark(ch, after=text[i - 1] if i else "") is not None)


def length_note(text: str) -> str | None:
    """A warning line for long inputs (shown whole anyway), or None."""
    text = str(text)
    if len(text) < LONG_INPUT:
        return None
    lines = text.count("\n") + 1
    return f"long input: {len(text):,} characters, {lines:,} lines — all of it is shown; read it before approving"
