"""The `docket` console script."""

from __future__ import annotations

from pathlib import Path

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


def test_report_on_an_empty_log_dir_writes_an_empty_leaderboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    assert main(["report", str(tmp_path / "logs"), "-o", str(tmp_path / "out")]) == 0
    assert "No scored logs found." in (tmp_path / "out" / "index.html").read_text()
    assert str(tmp_path / "out" / "index.html") in capsys.readouterr().out.replace("\n", "")


def test_regress_rejects_a_negative_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["regress", "--baseline", "b.json", "--logs", str(tmp_path), "--tolerance", "-1"])
    assert code == 2
    assert "--tolerance must be >= 0" in capsys.readouterr().out


def test_regress_without_a_baseline_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    assert main(["regress", "--baseline", str(missing), "--logs", str(tmp_path)]) == 2
    assert "missing.json: baseline file not found" in capsys.readouterr().out


def test_write_baseline_from_no_scored_runs_exits_2(tmp_path: Path) -> None:
    base = tmp_path / "b.json"
    assert (
        main(["regress", "--baseline", str(base), "--logs", str(tmp_path), "--write-baseline"]) == 2
    )
    assert not base.exists()
