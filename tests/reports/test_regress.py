"""`docket regress`: exit 1 on a shown drop, 0 only on a shown non-inferiority, 2 otherwise.

Every scenario is `synth_gate` (20 samples unless planted otherwise) with planted per-sample
values, so each verdict, drop, p-value, bound and flipped sample is known in advance. The bounds
and sample counts are recomputed here from their closed forms (Clopper-Pearson beta quantiles),
not read back from the code under test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import beta

from docket.cli import main
from docket.reports import build_runs, load_logs
from docket.reports.regress import BaselineError, compare, read_baseline
from tests.reports.reports_synthetic import (
    N_SAMPLES,
    SURVIVAL_HEADLINE,
    run_gate_task,
    run_gate_tasks,
)

SCENARIOS: dict[str, dict[str, Any]] = {
    "baseline": {"failing": set()},
    "drop": {"failing": set(range(1, 11))},  # 1.0 -> 0.5
    "noise": {"failing": {7}},  # 1.0 -> 0.95
    "all_fail": {"failing": set(range(1, N_SAMPLES + 1))},  # 1.0 -> 0.0
    "version": {"failing": set(), "version": "2-A"},
    "minor": {"failing": set(), "version": "1-B"},
    "args": {"failing": set(), "variant": "b"},
    "partial": {"failing": set(), "ids": [1, 2, 3]},  # a --limit 3 run
    "survival_base": {"headline": SURVIVAL_HEADLINE, "variant": "s"},
    "survival_worse": {"headline": SURVIVAL_HEADLINE, "variant": "s", "complying": range(1, 11)},
    "foreign": {"headline": None, "benchmark": None, "variant": "f"},
    "foreign_drop": {
        "headline": None,
        "benchmark": None,
        "variant": "f",
        "failing": set(range(1, 9)),
    },
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One log directory per scenario (one Inspect run for all) and two baseline files."""
    logs = run_gate_tasks(tmp_path_factory.mktemp("all"), list(SCENARIOS.values()))
    dirs: dict[str, Path] = {}
    for name, log in zip(SCENARIOS, logs, strict=True):
        dirs[name] = tmp_path_factory.mktemp(name)
        source = Path(log.location)
        source.rename(dirs[name] / source.name)
    for name in ("baseline", "survival_base", "foreign"):
        path = dirs[name] / "baseline.json"
        assert (
            main(
                ["regress", "--baseline", str(path), "--logs", str(dirs[name]), "--write-baseline"]
            )
            == 0
        )
        dirs[f"{name}_file"] = path
    return dirs


def _regress(runs: dict[str, Path], scenario: str, *extra: str, base: str = "baseline") -> int:
    return main(
        ["regress", "--baseline", str(runs[f"{base}_file"]), "--logs", str(runs[scenario]), *extra]
    )


def _compare(runs: dict[str, Path], scenario: str, base: str = "baseline", **kw: Any) -> Any:
    [result] = compare(
        read_baseline(runs[f"{base}_file"]), build_runs(load_logs(runs[scenario])), **kw
    )
    return result


def test_baseline_holds_declaration_setup_and_every_sample(runs: dict[str, Path]) -> None:
    [entry] = read_baseline(runs["baseline_file"])
    assert (entry["task"], entry["version"], entry["value"]) == ("synth_gate", "1-A", 1.0)
    assert entry["headline"]["direction"] == "higher" and entry["headline"]["value"] == "binary"
    assert entry["task_args"] == {"variant": "a"} and entry["setup"] == {}
    assert entry["samples"] == {str(i): 1.0 for i in range(1, N_SAMPLES + 1)}
    [survival] = read_baseline(runs["survival_base_file"])
    assert survival["samples"]["1"] == [[3.0, 0]]  # (turns observed, complied)


def cp_high(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper-Pearson upper bound (closed form as a beta quantile)."""
    return 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))


def cp_low(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper-Pearson lower bound."""
    return 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))


def unchanged_floor(tolerance: float, alpha: float = 0.05) -> int:
    """n at which no discordant pair bounds the drop by the tolerance: (alpha/2)^(1/n) >= 1-tol."""
    return math.ceil(math.log(alpha / 2) / math.log(1 - tolerance))


def test_same_run_on_20_samples_cannot_decide_and_says_how_many_it_needs(
    runs: dict[str, Path],
) -> None:
    assert _regress(runs, "baseline") == 2
    result = _compare(runs, "baseline")
    high = 1 - 0.025 ** (1 / 20)  # no discordant pair in 20: exact bound of psi at alpha/2
    assert (result.verdict, result.ci_low, result.ci_high) == (
        "cannot decide",
        pytest.approx(-high),
        pytest.approx(high),
    )
    assert result.n_needed == unchanged_floor(0.05) == 72
    assert result.detail == (
        "drop 0, 90 % CI [-0.1684, 0.1684] (exact (discordant pairs)): upper bound 0.1684 > "
        "tolerance 0.05 and drop 0 ≤ tolerance 0.05; about 72 paired samples would decide a "
        "drop of 0.05 at this run's variance (n = 20 now)"
    )
    assert _regress(runs, "baseline", "--tolerance", "0.17") == 0


def test_planted_drop_is_a_regression_with_mcnemar_and_flipped_samples(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "drop") == 1
    out = capsys.readouterr().out
    assert "regression" in out and "worse (10): 1, 10, 2, 3" in out
    result = _compare(runs, "drop")
    assert (result.verdict, result.drop) == ("regression", 0.5)
    assert result.test == "McNemar exact (n=20)" and result.p_value == pytest.approx(0.5**10)
    assert result.worse == [str(i) for i in sorted(map(str, range(1, 11)))]
    # 10 discordant pairs in 20, all worse: psi in [cp_low, cp_high], pi = 10/10 -> pi_low
    psi_low, psi_high = cp_low(10, 20, 0.025), cp_high(10, 20, 0.025)
    pi_low = cp_low(10, 10, 0.025)
    assert result.ci_low == pytest.approx(psi_low * (2 * pi_low - 1))
    assert result.ci_high == pytest.approx(psi_high)
    assert result.detail == (
        "drop 0.5 > tolerance 0.05 and McNemar exact p = 0.0009766 (Holm 0.0009766) < alpha "
        "0.05; 90 % CI [0.1042, 0.728] (exact (discordant pairs))"
    )


def test_one_to_zero_on_20_samples_is_a_regression(runs: dict[str, Path]) -> None:
    assert _regress(runs, "all_fail") == 1
    result = _compare(runs, "all_fail")
    assert (result.verdict, result.drop, result.n) == ("regression", 1.0, 20)
    assert result.p_value == result.p_holm == pytest.approx(0.5**20)
    psi_low = 0.025 ** (1 / 20)  # 20 of 20 discordant, 20 of them worse
    assert result.ci_low == pytest.approx(psi_low * (2 * psi_low - 1))
    assert result.ci_high == 1.0


def test_one_flip_in_20_cannot_decide_until_the_tolerance_covers_its_bound(
    runs: dict[str, Path],
) -> None:
    assert _regress(runs, "noise", "--tolerance", "0.05") == 2
    result = _compare(runs, "noise", tolerance=0.05)
    high = cp_high(1, 20, 0.025)  # one discordant pair, and it got worse: pi_high = 1
    assert (result.verdict, result.ci_high) == ("cannot decide", pytest.approx(high))
    assert result.ci_low == pytest.approx(high * (2 * cp_low(1, 1, 0.025) - 1))
    assert result.worse == ["7"]
    assert _regress(runs, "noise", "--tolerance", "0.25") == 0
    passed = _compare(runs, "noise", tolerance=0.25)
    assert passed.verdict == "pass"
    assert passed.detail == (
        "drop 0.05, 90 % CI [-0.2363, 0.2487] (exact (discordant pairs)): upper bound 0.2487 ≤ "
        "tolerance 0.25"
    )


def test_drop_beyond_tolerance_but_not_significant_cannot_decide(runs: dict[str, Path]) -> None:
    assert _regress(runs, "noise", "--tolerance", "0.01") == 2
    result = _compare(runs, "noise", tolerance=0.01)
    assert result.p_value == 0.5  # one discordant pair
    assert result.verdict == "cannot decide"
    assert "and McNemar exact p = 0.5 (Holm 0.5) ≥ alpha 0.05;" in result.detail


def test_a_partial_run_does_not_cover_the_baseline(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "partial") == 2
    out = capsys.readouterr().out
    assert "covers 3 of 20 baseline samples (15.0%), below --min-coverage 95%" in out
    assert "missing 85.0%" in out
    assert _regress(runs, "partial", "--min-coverage", "0.15", "--tolerance", "0.71") == 0
    assert _regress(runs, "partial", "--min-coverage", "0.15") == 2  # 3 samples decide nothing


def test_survival_headline_gates_lower_is_better(runs: dict[str, Path]) -> None:
    assert _regress(runs, "survival_worse", base="survival_base") == 1
    result = _compare(runs, "survival_worse", base="survival_base")
    assert (result.baseline_value, result.current_value) == (0.0, pytest.approx(0.5))
    assert result.direction == "lower" and result.drop == pytest.approx(0.5)
    assert result.test == "paired bootstrap (Kaplan-Meier) (n=20)" and result.p_value == 0.0
    assert sorted(result.worse, key=int) == [str(i) for i in range(1, 11)]


def test_survival_improvement_passes(runs: dict[str, Path], tmp_path: Path) -> None:
    base = tmp_path / "worse.json"
    assert (
        main(
            [
                "regress",
                "--baseline",
                str(base),
                "--logs",
                str(runs["survival_worse"]),
                "--write-baseline",
            ]
        )
        == 0
    )
    assert main(["regress", "--baseline", str(base), "--logs", str(runs["survival_base"])]) == 0


def test_unknown_direction_is_untestable_until_a_flag_gives_it(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "foreign_drop", base="foreign") == 2
    assert "direction of correct/accuracy unknown" in capsys.readouterr().out
    flag = ["--headline", "synth_gate=correct/accuracy:higher"]
    assert _regress(runs, "foreign_drop", *flag, base="foreign") == 1
    base = tmp_path / "flagged.json"
    assert (
        main(
            [
                "regress",
                "--baseline",
                str(base),
                "--logs",
                str(runs["foreign"]),
                "--write-baseline",
                *flag,
            ]
        )
        == 0
    )
    [entry] = read_baseline(base)
    assert entry["headline"]["direction"] == "higher"


def test_untestable_drop_is_exit_2_never_0(runs: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(runs["baseline_file"].read_text())
    data["entries"][0]["samples"] = {}
    path = tmp_path / "no-samples.json"
    path.write_text(json.dumps(data))
    assert main(["regress", "--baseline", str(path), "--logs", str(runs["drop"])]) == 2
    [result] = compare(read_baseline(path), build_runs(load_logs(runs["drop"])))
    assert result.verdict == "untestable"
    assert result.detail == "drop 0.5 cannot be tested: no per-sample values"


def test_different_setup_is_not_comparable(runs: dict[str, Path], tmp_path: Path) -> None:
    run_gate_task(tmp_path, eval_args={"epochs": 2})
    assert main(["regress", "--baseline", str(runs["baseline_file"]), "--logs", str(tmp_path)]) == 2
    [result] = compare(read_baseline(runs["baseline_file"]), build_runs(load_logs(tmp_path)))
    assert result.detail == "setup differs: epochs: (unset) in baseline, 2 now"


def test_version_major_change_is_not_comparable(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _regress(runs, "version") == 2
    assert "version 1-A in baseline, 2-A now (N changed)" in capsys.readouterr().out


def test_version_minor_change_is_comparable(runs: dict[str, Path]) -> None:
    assert _compare(runs, "minor").verdict == "cannot decide"  # compared: 20 equal samples
    assert _regress(runs, "minor", "--tolerance", "0.17") == 0


def test_different_task_args_are_not_comparable(runs: dict[str, Path]) -> None:
    assert _regress(runs, "args") == 2
    result = _compare(runs, "args")
    assert (result.verdict, result.detail) == (
        "not comparable",
        "task args {'variant': 'a'} in baseline, {'variant': 'b'} now",
    )
    assert result.current_value is None and result.drop is None


def test_no_run_of_the_row_is_missing(runs: dict[str, Path]) -> None:
    [result] = compare(read_baseline(runs["baseline_file"]), [])
    assert (result.verdict, result.detail) == (
        "missing",
        "no run of this task and model in the logs",
    )
    assert result.baseline_value == 1.0 and result.direction == "higher"


def test_missing_run_and_empty_log_dir_exit_2(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["regress", "--baseline", str(runs["baseline_file"]), "--logs", str(tmp_path)]) == 2
    assert "no Inspect logs" in capsys.readouterr().out
    assert _regress(runs, "survival_base") == 2  # a log, but not of the baseline's row


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
        (json.dumps({"format": "docket-baseline/1", "entries": []}), "write it again"),
        (
            json.dumps({"format": "docket-baseline/2", "entries": [{"task": "t"}]}),
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


def test_a_run_on_another_data_split_is_not_comparable_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped, private = "a" * 64, "b" * 64
    run_gate_task(tmp_path / "base", split=shipped)
    run_gate_task(tmp_path / "now", split=private)
    path = tmp_path / "baseline.json"
    args = ["regress", "--baseline", str(path)]
    assert main([*args, "--logs", str(tmp_path / "base"), "--write-baseline"]) == 0
    [entry] = read_baseline(path)
    assert entry["split"] == shipped and entry["clusters"] is None
    capsys.readouterr()
    assert main([*args, "--logs", str(tmp_path / "now"), "--tolerance", "0.5"]) == 2
    lines = [line for line in capsys.readouterr().out.splitlines() if "split" in line]
    assert lines == [
        "not comparable: synth_gate / docket/scripted policy=comply: split aaaaaaaaaaaa in "
        "baseline, bbbbbbbbbbbb now: rows from different data splits are never compared"
    ]
    assert main([*args, "--logs", str(tmp_path / "base"), "--tolerance", "0.5"]) == 0


def test_a_v2_baseline_is_read_with_one_line_saying_what_is_assumed(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(runs["baseline_file"].read_text())
    assert data["format"] == "docket-baseline/3"
    data["format"] = "docket-baseline/2"
    for entry in data["entries"]:
        del entry["split"], entry["clusters"]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(data))
    assert main(["regress", "--baseline", str(path), "--logs", str(runs["all_fail"])]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{path}: docket-baseline/2 records no data split and no clusters: assuming every entry "
        "ran on the current run's split, with independent samples (--write-baseline writes /3)"
    )
