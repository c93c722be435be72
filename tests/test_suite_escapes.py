"""A model server's error text carries terminal escapes: `docket suite` prints them as visible
escapes, never raw (#52 item 6). The server is a local fake (`tests/fake_openai.py`)."""

from __future__ import annotations

from contextvars import copy_context
from pathlib import Path

import pytest

from docket.cli import main
from tests.fake_openai import error_body, fake_openai

#: Erase the line, move up, conceal, retitle the window: what a hostile server might send.
REASON = "no such model\x1b[2K\x1b[1A\x1b[8m\x1b]0;pwned\x07"


def test_a_servers_escapes_reach_the_terminal_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with fake_openai(lambda _: (404, error_body(REASON, "NotFoundError")), None) as server:
        args = ["api", "--task", "docket/context_qa", "--model", "openai/nope"]
        args += ["--base-url", server.base_url, "--log-dir", str(tmp_path), "--display", "none"]
        code = copy_context().run(main, ["suite", *args])
    shown = capsys.readouterr()
    assert code == 1
    assert "\x1b" not in shown.out + shown.err and "\x07" not in shown.out + shown.err
    shown_reason = "no such model\\x1b[2K\\x1b[1A\\x1b[8m\\x1b]0;pwned\\x07"
    line = f"error: {server.base_url} (openai/nope): HTTP 404: {shown_reason}"
    assert line in shown.out.splitlines()
