"""`docket power`: detectable drops and needed samples against closed forms and simulation.

Binary baselines with a known rate p have closed-form answers: with p = 1 (no spread) the
smallest drop an unchanged run can be shown not to exceed is 1 - (alpha/2)^(1/n); with p = 0.5
it is the exact Clopper-Pearson bound of the table an unchanged run reaches at its 80th
percentile. The simulations check that the n printed is the n at which an unchanged run passes
the gate 80 % of the time.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta, norm

from docket.cli import main
from docket.reports import build_runs, load_logs
from docket.reports.power import (
    design_effect,
    detectable,
    entry_power,
    icc_anova,
    needed_n,
    power_row,
)
from docket.reports.regress import read_baseline
from docket.reports.stats import paired_binary_bounds
from tests.reports.reports_synthetic import run_gate_task
from tests.reports.test_verdicts import first_passing_n


@pytest.mark.parametrize("n", [3, 20, 72, 500])
def test_no_spread_baseline_has_the_closed_form_detectable_drop(n: int) -> None:
    row = power_row("t", "m", "binary", {str(i): 1.0 for i in range(n)}, 0.05, 0.05)
    assert row.second_moment == 0.0  # p = 1: 2 p (1 - p)
    assert row.detectable == pytest.approx(1 - 0.025 ** (1 / n))


@pytest.mark.parametrize("drop", [0.01, 0.05, 0.1, 0.3])
def test_no_spread_needed_n_is_log_alpha_over_log_one_minus_drop(drop: float) -> None:
    assert needed_n("binary", 0.0, drop, 0.05) == math.ceil(math.log(0.025) / math.log(1 - drop))


def test_binary_p_half_matches_the_beta_quantiles_of_its_80th_percentile_table() -> None:
    n, p = 400, 0.5
    values = {str(i): float(i % 2) for i in range(n)}  # p = 0.5 exactly
    row = power_row("t", "m", "binary", values, 0.05, 0.1)
    psi = 2 * p * (1 - p)
    m = round(psi * n)
    worse = math.ceil(m / 2 + norm.ppf(0.8) * math.sqrt(m) / 2)
    psi_high = float(beta.ppf(0.975, m + 1, n - m))
    pi_high = float(beta.ppf(0.975, worse + 1, m - worse))
    assert row.second_moment == pytest.approx(0.5)
    assert row.detectable == pytest.approx(psi_high * (2 * pi_high - 1))
    assert row.needed == first_passing_n(psi, 0.1)


def test_the_printed_n_lets_an_unchanged_run_pass_about_80_percent_of_the_time() -> None:
    """Adversary: simulate independent re-runs of a baseline with p = 0.7 at the printed n."""
    p, drop = 0.7, 0.1
    psi = 2 * p * (1 - p)
    n = needed_n("binary", psi, drop, 0.05)
    assert n is not None
    rng = np.random.default_rng(3)
    base = rng.random((2000, n)) < p
    now = rng.random((2000, n)) < p
    worse = (base & ~now).sum(axis=1)
    better = (~base & now).sum(axis=1)
    passed = [
        paired_binary_bounds(int(w), int(b), n, 0.05).high <= drop
        for w, b in zip(worse, better, strict=True)
    ]
    assert 0.75 <= float(np.mean(passed)) <= 0.85


def test_continuous_needed_n_is_the_normal_formula_above_the_no_change_floor() -> None:
    values = {str(i): v for i, v in enumerate([0.2, 0.4, 0.6, 0.8] * 25)}
    variance = float(np.var(list(values.values()), ddof=1))
    row = power_row("t", "m", "continuous", values, 0.05, 0.05)
    assert row.second_moment == pytest.approx(2 * variance)
    z = norm.ppf(0.95) + norm.ppf(0.8)
    assert row.needed == math.ceil((z / 0.05) ** 2 * 2 * variance)
    assert row.detectable == pytest.approx(z * math.sqrt(2 * variance / 100))


def test_icc_and_design_effect_by_hand() -> None:
    # clusters A = [1, 0, 1], B = [0, 0, 1], C = [1, 1, 1]: MSB = 1/3, MSW = 2/9, m0 = 3
    values = dict(zip("abcdefghi", [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0], strict=True))
    clusters = dict(zip("abcdefghi", "AAABBBCCC", strict=True))
    assert icc_anova(values, clusters) == pytest.approx(1 / 7)
    assert design_effect(values, clusters) == (pytest.approx(9 / 7), pytest.approx(1 / 7))
    # constant within clusters: every sample of a cluster says the same (ICC 1, deff = m)
    same = dict(zip("abcd", [1.0, 1.0, 0.0, 0.0], strict=True))
    assert design_effect(same, dict(zip("abcd", "AABB", strict=True))) == (2.0, 1.0)
    assert design_effect(same, {"a": "A"}) == (1.0, None)
    assert icc_anova(same, {"a": "A"}) is None  # one cluster: unknown, no design effect


def test_clustered_task_scales_n_by_its_design_effect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task whose stderr clusters by `category` (odd/even ids, 10 each): odd ids 1-11 fail,
    so the clusters score 0.4 and 1.0 around 0.7; MSB 1.8, MSW 2.4/18: ICC 5/9, deff 6."""
    run_gate_task(tmp_path, clustered=True, failing={1, 3, 5, 7, 9, 11})
    [run] = build_runs(load_logs(tmp_path))
    assert run.cluster_field == "category" and run.clusters["3"] == "odd"
    baseline = tmp_path / "baseline.json"
    assert (
        main(["regress", "--baseline", str(baseline), "--logs", str(tmp_path), "--write-baseline"])
        == 0
    )
    [entry] = read_baseline(baseline)
    assert entry["clusters"]["field"] == "category" and len(entry["clusters"]["ids"]) == 20
    row = entry_power(entry, 0.05, 0.05)
    assert (row.icc, row.deff, row.clusters) == (pytest.approx(5 / 9), pytest.approx(6.0), 2)
    psi = 2 * 0.7 * 0.3
    assert row.needed == math.ceil(first_passing_n(psi, 0.05) * 6.0)
    assert row.detectable == pytest.approx(detectable("binary", psi, 20 // 6, 0.05))
    capsys.readouterr()
    assert main(["power", "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert "2 clusters by category, ICC 0.556, design effect 6.00" in out
    assert f"{row.needed} paired samples detect a drop of 0.05" in out


def test_power_from_logs_and_from_a_v2_baseline_with_its_assumption(
    gate_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["power", "--logs", str(gate_logs), "--drop", "0.1"]) == 0
    out = capsys.readouterr().out
    needed = first_passing_n(2 * 0.9 * 0.1, 0.1)
    assert "n = 20 (binary, mean 0.9): smallest detectable drop" in out
    assert f"(underpowered); {needed} paired samples detect a drop of 0.1" in out
    path = tmp_path / "b.json"
    assert (
        main(["regress", "--baseline", str(path), "--logs", str(gate_logs), "--write-baseline"])
        == 0
    )
    data = json.loads(path.read_text())
    data["format"] = "docket-baseline/2"
    for entry in data["entries"]:
        entry.pop("split"), entry.pop("clusters")
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["power", "--baseline", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"{path}: docket-baseline/2 records no data split and no clusters: assuming every entry "
        "ran on the current run's split, with independent samples (--write-baseline writes /3)"
    )


@pytest.mark.parametrize("args", [["--tolerance", "0"], ["--alpha", "1"], ["--drop", "-0.1"]])
def test_power_rejects_bad_flags_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["power", "--logs", str(tmp_path), *args]) == 2
    out = capsys.readouterr().out
    assert "must be > 0" in out and len(out.strip().splitlines()) == 1


def test_regress_bounds_a_clustered_drop_by_its_clusters_not_its_samples(tmp_path: Path) -> None:
    """20 questions on 2 clusters are 2 independent units: an unchanged run's bound is
    1 - 0.05^(1/2) = 0.7764 (20 independent samples: 0.1684), and its n needed is scaled by the
    design effect of the baseline (no spread: ICC unknown, deff 1)."""
    from docket.reports.regress import compare

    run_gate_task(tmp_path / "base", clustered=True)
    run_gate_task(tmp_path / "now", clustered=True, failing={1})
    path = tmp_path / "baseline.json"
    assert (
        main(
            [
                "regress",
                "--baseline",
                str(path),
                "--logs",
                str(tmp_path / "base"),
                "--write-baseline",
            ]
        )
        == 0
    )
    entries = read_baseline(path)
    [same] = compare(entries, build_runs(load_logs(tmp_path / "base")))
    assert same.ci_high == pytest.approx(1 - 0.05**0.5)
    assert (same.ci_method, same.verdict) == ("no sample changed (2 clusters)", "cannot decide")
    [moved] = compare(entries, build_runs(load_logs(tmp_path / "now")))
    # cluster means of the differences: odd 1/10, even 0; resampled means 0, 0.05 or 0.1
    assert moved.ci_method == "cluster bootstrap (2 clusters)"
    assert moved.ci_high == pytest.approx(0.05 + 1 - 0.05**0.5)
    assert moved.cluster_field == "category"
