"""Text from logs, models and servers, made safe to print on a terminal.

A task name, a model name or a server's error text is written by whoever made the log or runs
the server. Printed raw, an ESC sequence in it can erase lines, move the cursor, hide text or
retitle the window; a bidi override can reorder what the reader sees. `printable` shows every
such character as a visible escape (`\\x1b`, `\\u202e`) instead, so nothing in the text acts on
the terminal and the reader still sees that something was there.
"""

from __future__ import annotations

import re

#: C0 controls (ESC included), DEL and C1 controls, and the Unicode bidi embeddings, overrides
#: and isolates (U+202A-U+202E, U+2066-U+2069), which reorder what a terminal shows.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: The same, less the newline and the tab, for text shown over several lines.
_CONTROLS_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, lines: bool = False) -> str:
    """`text` with every control character shown as a visible escape.

    Args:
        text: Any value; it is turned into a string first (`str(text)`).
        lines: Keep newlines and tabs (for text shown over several lines); otherwise they are
            escaped too, so the result is one line.

    Returns:
        The text, with C0 controls (ESC among them), DEL, C1 controls and bidi controls
        written as `\\xNN` or `\\uNNNN`.
    """
    pattern = _CONTROLS_KEEP_LINES if lines else _CONTROLS
    return pattern.sub(_escape, str(text))
