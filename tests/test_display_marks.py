"""One table of marked characters for every front end (issue 28 item 7): the
terminal marks every character the web page marks (the page reads the same
table), the Hangul fillers, U+2800, variation selectors and U+034F included;
an approval shows a command's env whole and marked."""

from __future__ import annotations

import pytest

from smoke_core.cli.describe import approval_warnings, describe_request
from smoke_core.display import MARKED, hidden_characters, marked_table, visible

#: what the terminal did not mark before issue 28
NEWLY_MARKED = [0x3164, 0x115F, 0xFFA0, 0x2800, 0xFE00, 0xFE0F, 0xE0100, 0x034F]


@pytest.mark.parametrize("first,last,name,kind", MARKED, ids=[m[2] for m in MARKED])
def test_every_entry_of_the_table_is_marked(first, last, name, kind):
    for code in {first, (first + last) // 2, last}:
        text = f"a{chr(code)}b"
        shown = visible(text)
        assert shown != text and shown.startswith("a⟨") and shown.endswith("⟩b"), (hex(code), shown)
        assert hidden_characters(text) == 1
    assert kind in ("invisible", "bidi", "space", "confusable")


@pytest.mark.parametrize("code", NEWLY_MARKED)
def test_the_characters_the_terminal_missed_are_marked(code):
    assert visible(f"rm{chr(code)} -rf") == f"rm⟨U+{code:04X}⟩ -rf"


def test_an_emoji_keeps_its_presentation_selector():
    assert visible("done ❤️") == "done ❤️"
    assert visible("r\ufe0fm") == "r⟨U+FE0F⟩m"  # after a letter it hides something
    assert hidden_characters("❤️") == 0 and hidden_characters("x\ufe0f") == 1


def test_look_alikes_of_shell_syntax_are_marked():
    assert visible("ls \u037e rm -rf ~") == "ls ⟨U+037E⟩ rm -rf ~"
    assert visible("cat a\u2215b") == "cat a⟨U+2215⟩b"


def test_the_table_the_web_page_reads_is_this_table():
    assert marked_table() == [{"first": a, "last": b, "name": n, "kind": k} for a, b, n, k in MARKED]


def test_the_approval_shows_every_env_entry_whole_and_marked():
    data = {"tool_name": "run_command", "input": {
        "command": "ls -la", "env": {"PAGER": "less", "X": "a\x1bMb\u3164"}, "background": True, "workdir": "sub"}}
    shown = describe_request(data)
    assert "$ ls -la" in shown and "with env (2 variables, approved with the command)" in shown
    assert "PAGER=less" in shown and "X=a␛Mb⟨U+3164⟩" in shown
    assert "in folder" in shown and "sub" in shown and "in the background" in shown
    assert any("2 control or invisible" in w for w in approval_warnings(data))
