"""`docket regress`: exit 1 on a planted drop, 0 on noise, 2 when runs are not comparable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docket.reports import build_runs, load_logs
from docket.reports.regress import BaselineError, compare, read_baseline
from reports_synthetic import N_SAMPLES, run_gate_tasks

from docket.cli import main

SCENARIOS = {
    "baseline": {"failing": set()},
    "drop": {"failing": set(range(1, 11))},  # 1.0 -> 0.5
    "noise": {"failing": {7}},  # 1.0 -> 0.95
    "version": {"failing": set(), "version": "2-A"},
    "minor": {"failing": set(), "version": "1-B"},
    "args": {"failing": set(), "variant": "b"},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One log directory per scenario (one Inspect run for all), and the baseline file."""
    logs = run_gate_tasks(tmp_path_factory.mktemp("all"), list(SCENARIOS.values()))
    dirs: dict[str, Path] = {}
    for name, log in zip(SCENARIOS, logs, strict=True):
        dirs[name] = tmp_path_factory.mktemp(name)
        source = Path(log.location)
        source.rename(dirs[name] / source.name)
    baseline = dirs["baseline"] / "baseline.json"
    args = ["regress", "--baseline", str(baseline), "--logs", str(dirs["baseline"])]
    assert main([*args, "--write-baseline"]) == 0
    dirs["baseline_file"] = baseline
    return dirs


def _regress(runs: dict[str, Path], scenario: str, *extra: str) -> int:
    return main(
        ["regress", "--baseline", str(runs["baseline_file"]), "--logs", str(runs[scenario]), *extra]
    )


def test_baseline_holds_the_headline_and_every_sample(runs: dict[str, Path]) -> None:
    [entry] = read_baseline(runs["baseline_file"])
    assert (entry["task"], entry["version"], entry["headline"], entry["value"]) == (
        "synth_gate",
        "1-A",
        "correct/accuracy",
        1.0,
    )
    assert entry["task_args"] == {"variant": "a"}
    assert entry["samples"] == {str(i): 1.0 for i in range(1, N_SAMPLES + 1)}


def test_same_run_passes(runs: dict[str, Path]) -> None:
    assert _regress(runs, "baseline") == 0


def test_planted_drop_is_a_regression(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "drop") == 1
    assert "regression" in capsys.readouterr().out
    [result] = compare(read_baseline(runs["baseline_file"]), build_runs(load_logs(runs["drop"])))
    assert (result.verdict, result.drop, result.p_value) == ("regression", 0.5, 0.0)
    assert result.test == "paired bootstrap (n=20)"


def test_noise_within_tolerance_passes(runs: dict[str, Path]) -> None:
    assert _regress(runs, "noise", "--tolerance", "0.1") == 0


def test_drop_beyond_tolerance_but_not_significant_passes(runs: dict[str, Path]) -> None:
    assert _regress(runs, "noise", "--tolerance", "0.01") == 0
    [result] = compare(
        read_baseline(runs["baseline_file"]), build_runs(load_logs(runs["noise"])), tolerance=0.01
    )
    assert result.drop == pytest.approx(0.05)
    assert result.p_value == pytest.approx(0.95**20, abs=0.015)  # > 0.05: one flip is noise
    assert result.verdict == "ok"


def test_version_major_change_is_not_comparable(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "version") == 2
    assert "not comparable" in capsys.readouterr().out


def test_version_minor_change_is_comparable(runs: dict[str, Path]) -> None:
    assert _regress(runs, "minor") == 0


def test_different_task_args_are_not_comparable(runs: dict[str, Path]) -> None:
    assert _regress(runs, "args") == 2


def test_missing_run_is_not_comparable(runs: dict[str, Path], tmp_path: Path) -> None:
    assert main(["regress", "--baseline", str(runs["baseline_file"]), "--logs", str(tmp_path)]) == 2


def test_corrupt_log_is_bad_input(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for log in runs["baseline"].glob("*.eval"):
        (tmp_path / log.name).write_bytes(log.read_bytes())
    (tmp_path / "broken.eval").write_bytes(b"PK\x03\x04 truncated")
    assert main(["regress", "--baseline", str(runs["baseline_file"]), "--logs", str(tmp_path)]) == 2
    assert "broken.eval: unreadable Inspect log" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format": "other"}), "field 'format'"),
        (
            json.dumps({"format": "docket-baseline/1", "entries": [{"task": "t"}]}),
            "entries[0] lacks field 'version'",
        ),
    ],
)
def test_bad_baseline_names_file_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "base.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match=r"base\.json: .*") as error:
        read_baseline(path)
    assert message in str(error.value)
    assert main(["regress", "--baseline", str(path), "--logs", str(tmp_path)]) == 2
