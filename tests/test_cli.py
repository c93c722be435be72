"""The `docket` console script."""

from __future__ import annotations

import pytest

from docket import __version__
from docket.cli import main


def test_list_shows_tasks_providers_sandboxes_and_policies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("docket/smoke", "docket/docket", "docket/bwrap", "comply", "refuse"):
        assert name in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert __version__ in capsys.readouterr().out
