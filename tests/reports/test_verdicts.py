"""The three verdicts of `docket regress` on the cases of issue #31, with their exact figures.

The expected bounds and sample counts are closed forms recomputed here (Clopper-Pearson as beta
quantiles, the power quantile from scipy's normal), never read back from the code under test.
Large cases (200 and 2 000 paired samples) are built as `Run`s directly: Inspect needs minutes
to evaluate 2 000 samples, and the log reading is covered by `test_regress.py`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta, norm

from docket.cli import main
from docket.core.headline import HeadlineSpec
from docket.reports.logs import LogError
from docket.reports.regress import Comparison, baseline_entry, compare, exit_code
from docket.reports.runs import Run
from docket.reports.stats import paired_binary_bounds

BINARY = HeadlineSpec(
    metric="accuracy", scorer="s", direction="higher", value="binary", source="task"
)


def binary_run(values: dict[str, float], model: str = "m") -> Run:
    """A scored run of task `t` with these per-sample 0/1 values."""
    run = Run(
        log=f"{model}.eval",
        task="t",
        version="1-A",
        task_args={},
        model=model,
        model_args={},
        status="success",
        created="2026-12-01T00:00:00",
        headline=BINARY,
        headline_value=sum(values.values()) / len(values),
        samples=dict(values),
    )
    return run


def ones(n: int, failing: int = 0) -> dict[str, float]:
    """n samples scoring 1, the first `failing` of them 0."""
    return {str(i): 0.0 if i < failing else 1.0 for i in range(n)}


def _one(base: dict[str, float], now: dict[str, float], tolerance: float = 0.05) -> Comparison:
    [result] = compare([baseline_entry(binary_run(base))], [binary_run(now)], tolerance=tolerance)
    return result


def first_passing_n(psi: float, tolerance: float, alpha: float = 0.05) -> int:
    """Smallest n at which an unchanged run with discordance psi passes at its 80th percentile,
    scanning every n with the beta quantiles (the code under test bisects)."""
    for n in range(1, 20_000):
        m = round(psi * n)
        worse = min(m, math.ceil(m / 2 + norm.ppf(0.8) * math.sqrt(m) / 2))
        psi_high = 1.0 if m == n else float(beta.ppf(1 - alpha / 2, m + 1, n - m))
        if m == 0:
            high = psi_high
        else:
            pi_high = 1.0 if worse == m else float(beta.ppf(1 - alpha / 2, worse + 1, m - worse))
            high = psi_high * (2 * pi_high - 1)
        if high <= tolerance:
            return n
    raise AssertionError("no n found")


def test_smoke_collapse_at_n_3_cannot_decide_and_says_how_many_samples_it_needs(
    smoke_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Baseline docket/smoke comply 3/3 against the same row now scoring 0/3 (issue #31)."""
    path = tmp_path / "baseline.json"
    assert (
        main(["regress", "--baseline", str(path), "--logs", str(smoke_logs), "--write-baseline"])
        == 0
    )
    data = json.loads(path.read_text())
    [comply] = [e for e in data["entries"] if e["model"] == "docket/scripted policy=comply"]
    data["entries"] = [{**comply, "model": "docket/scripted policy=refuse"}]  # same row, now 0/3
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["regress", "--baseline", str(path), "--logs", str(smoke_logs)]) == 2
    out = capsys.readouterr().out
    low = 2 * 0.025 ** (1 / 3) - 1  # psi = 3/3, pi = 3/3: pi_low = (alpha/2)^(1/3) < 1/2
    needed = first_passing_n(1.0, 0.05)
    assert needed == 3194
    line = (
        "cannot decide: docket/smoke / docket/scripted policy=refuse: drop 1, 90 % CI "
        f"[{low:.4f}, 1] (exact (discordant pairs)): upper bound 1 > tolerance 0.05 and McNemar "
        "exact p = 0.125 (Holm 0.125) ≥ alpha 0.05; about 3194 paired samples would decide a "
        "drop of 0.05 at this run's variance (n = 3 now)"
    )
    assert line in out
    assert "1 compared: 1 cannot decide" in out


def test_equal_runs_on_200_samples_pass_at_tolerance_005() -> None:
    result = _one(ones(200), ones(200), tolerance=0.05)
    high = 1 - 0.025 ** (1 / 200)  # no discordant pair: psi_high at alpha/2
    assert (result.verdict, result.drop, result.n) == ("pass", 0.0, 200)
    assert result.ci_high == pytest.approx(high) and high == pytest.approx(0.018275, abs=1e-6)
    assert result.detail == (
        "drop 0, 90 % CI [-0.0183, 0.0183] (exact (discordant pairs)): upper bound 0.0183 ≤ "
        "tolerance 0.05"
    )
    assert exit_code([result], []) == 0


def test_equal_runs_on_5_samples_cannot_decide() -> None:
    result = _one(ones(5), ones(5), tolerance=0.05)
    high = 1 - 0.025 ** (1 / 5)
    assert (result.verdict, result.ci_high) == ("cannot decide", pytest.approx(high))
    assert result.n_needed == math.ceil(math.log(0.025) / math.log(0.95)) == 72
    assert result.n_needed == first_passing_n(0.0, 0.05)
    assert exit_code([result], []) == 2


def test_drop_of_003_on_2000_paired_samples_passes_at_tolerance_005() -> None:
    result = _one(ones(2000), ones(2000, failing=60), tolerance=0.05)
    high = float(beta.ppf(0.975, 61, 1940))  # psi_high of 60/2000; all 60 worse: pi_high = 1
    low = float(beta.ppf(0.025, 60, 1941)) * (2 * 0.025 ** (1 / 60) - 1)
    assert result.drop == pytest.approx(0.03)
    assert result.p_value == pytest.approx(0.5**60)  # significant, but within the tolerance
    assert result.verdict == "pass"
    assert (result.ci_low, result.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert high == pytest.approx(0.03845, abs=1e-5)
    assert exit_code([result], []) == 0


def test_collapse_on_20_samples_is_a_regression() -> None:
    result = _one(ones(20), ones(20, failing=20))
    assert (result.verdict, result.p_value) == ("regression", pytest.approx(0.5**20))
    assert exit_code([result], []) == 1


def test_holm_across_rows_keeps_two_borderline_drops_from_failing() -> None:
    """5 of 20 flipped in each of two rows: p = 1/32 alone (regression), Holm 1/16 together."""
    alone = _one(ones(20), ones(20, failing=5))
    assert (alone.verdict, alone.p_holm) == ("regression", pytest.approx(1 / 32))
    entries = [baseline_entry(binary_run(ones(20), model)) for model in ("a", "b")]
    now = [binary_run(ones(20, failing=5), model) for model in ("a", "b")]
    both = compare(entries, now)
    assert [c.p_holm for c in both] == [pytest.approx(1 / 16)] * 2
    assert [c.verdict for c in both] == ["cannot decide"] * 2
    assert exit_code(both, []) == 2


@pytest.mark.parametrize(
    ("verdicts", "errors", "code"),
    [
        (["regression", "cannot decide", "not comparable"], 0, 1),
        (["regression", "pass"], 1, 1),
        (["cannot decide", "pass"], 0, 2),
        (["pass", "missing"], 0, 2),
        (["pass", "pass"], 1, 2),
        (["pass", "pass"], 0, 0),
    ],
)
def test_a_regression_wins_then_anything_that_did_not_pass(
    verdicts: list[str], errors: int, code: int
) -> None:
    rows = [Comparison("t", "m", verdict, "") for verdict in verdicts]
    unreadable = [LogError("x.eval", "unreadable")] * errors
    assert exit_code(rows, unreadable) == code


def test_exact_binary_bound_never_passes_a_drop_of_the_tolerance_too_often() -> None:
    """Adversary: the true drop is exactly the tolerance. With the fewest discordant pairs
    (only losses) and with churn, the gate may pass at most alpha of such runs."""
    rng = np.random.default_rng(7)
    for n, worse_p, better_p in ((72, 0.05, 0.0), (400, 0.15, 0.10)):
        draws = rng.multinomial(n, [worse_p, better_p, 1 - worse_p - better_p], size=4000)
        passed = [paired_binary_bounds(int(w), int(b), n, 0.05).high <= 0.05 for w, b, _ in draws]
        assert float(np.mean(passed)) <= 0.05 + 0.01, (n, worse_p, better_p)


def _continuous(values: dict[str, float], model: str = "m") -> Run:
    run = binary_run(values, model)
    run.headline = HeadlineSpec(
        metric="mean", scorer="s", direction="higher", value="continuous", source="task"
    )
    return run


def test_one_small_change_in_3_continuous_samples_does_not_pass_where_no_change_cannot() -> None:
    """Adversary: a bootstrap of 3 samples sees only the one that moved (by 0.01) and would put
    the bound at 0.0067; the drop plus the bound of a change nobody saw,
    (1 - 0.05^(1/3)) x range, holds."""
    base = {"0": 0.2, "1": 0.5, "2": 0.8}
    for now, drop in ((dict(base), 0.0), ({**base, "0": 0.19}, 0.01 / 3)):
        [result] = compare([baseline_entry(_continuous(base))], [_continuous(now)])
        scale = 0.8 - 0.19 if drop else 0.6  # the values' range over both runs
        assert result.ci_high == pytest.approx(drop + (1 - 0.05 ** (1 / 3)) * scale)
        assert result.verdict == "cannot decide"
    improved = {k: v + 0.2 for k, v in base.items()}  # better by 0.2 on every sample
    [result] = compare([baseline_entry(_continuous(base))], [_continuous(improved)])
    assert result.ci_high == pytest.approx(-0.2 + (1 - 0.05 ** (1 / 3)) * 0.8)
    assert result.verdict == "cannot decide"  # 3 samples: -0.2 + 0.506 > 0.05


def test_continuous_bound_is_the_larger_of_the_bootstrap_and_the_unseen_change() -> None:
    for n, method in (
        (100, "paired bootstrap, plus an unseen change"),
        (2000, "paired bootstrap"),
    ):
        base = {str(i): (i % 10) / 10 for i in range(n)}
        now = {k: v - 0.1 if int(k) % 2 else v + 0.095 for k, v in base.items()}  # drop 0.0025
        [result] = compare([baseline_entry(_continuous(base))], [_continuous(now)])
        values = [*base.values(), *now.values()]
        unseen = (1 - 0.05 ** (1 / n)) * (max(values) - min(values))
        diffs = np.asarray([base[k] - now[k] for k in base])
        normal = 0.0025 + norm.ppf(0.95) * diffs.std() / math.sqrt(n)  # the bootstrap's target
        assert result.drop == pytest.approx(0.0025)
        assert (result.ci_method, result.verdict) == (method, "pass")
        assert result.ci_high == pytest.approx(max(0.0025 + unseen, normal), rel=0.05)
