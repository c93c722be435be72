"""`printable`: nothing from a log, a model or a server acts on the terminal it is printed on."""

from __future__ import annotations

import pytest

from docket.core.text import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain name/v1", "plain name/v1"),
        ("\x1b[2K\x1b[1Aok", "\\x1b[2K\\x1b[1Aok"),  # erase line, cursor up
        ("a\x1b[8mhidden", "a\\x1b[8mhidden"),  # conceal
        ("bell\x07del\x7f", "bell\\x07del\\x7f"),
        ("c1\x9bcsi\x85", "c1\\x9bcsi\\x85"),  # C1 CSI and NEL
        ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override
        ("tab\tnew\nline\rcr", "tab\\x09new\\x0aline\\x0dcr"),
        ("accents é ü 中文", "accents é ü 中文"),
    ],
)
def test_controls_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_lines_keeps_newlines_and_tabs_only() -> None:
    assert printable("a\tb\nc\r\x1b]0;title\x07", lines=True) == "a\tb\nc\\x0d\\x1b]0;title\\x07"


def test_non_strings_are_turned_into_text() -> None:
    assert printable(None) == "None"
    assert printable(3) == "3"
