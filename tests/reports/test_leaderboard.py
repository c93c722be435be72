"""The leaderboard reproduces known scores, works on a non-docket task, survives bad logs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from docket.reports import build_report, build_runs, load_logs
from docket.reports.leaderboard import _entry
from docket.reports.runs import Run, ScoreMetric, choose_headline
from docket.reports.stats import Z95

from docket.cli import main


def _entries(data: dict[str, Any], task: str) -> dict[str, dict[str, Any]]:
    [bench] = [b for b in data["benchmarks"] if b["task"] == task]
    return {e["model"]: e for e in bench["entries"]}


def test_smoke_scores_equal_the_scripted_models_known_scores(
    smoke_logs: Path, tmp_path: Path
) -> None:
    files = build_report(smoke_logs, tmp_path / "out")
    data = json.loads(files.json.read_text())
    entries = _entries(data, "docket/smoke")
    comply = entries["docket/scripted policy=comply"]
    refuse = entries["docket/scripted policy=refuse"]
    assert (comply["value"], refuse["value"]) == (1.0, 0.0)
    assert comply["samples"] == refuse["samples"] == 3
    # Wilson at 3/3 and 0/3: [3/(3+z^2), 1] and [0, z^2/(3+z^2)]; they overlap, so ranks tie
    assert comply["ci_low"] == pytest.approx(3 / (3 + Z95**2))
    assert refuse["ci_high"] == pytest.approx(Z95**2 / (3 + Z95**2))
    assert comply["rank"] == refuse["rank"] == "=1"
    assert files.errors == []
    markdown = files.markdown.read_text()
    assert "| =1 | docket/scripted policy=comply | 1.000 | [0.439, 1.000] | 3 |" in markdown


def test_generic_table_for_a_task_of_another_package(gate_logs: Path, tmp_path: Path) -> None:
    data = json.loads(build_report(gate_logs, tmp_path / "out").json.read_text())
    [bench] = data["benchmarks"]
    assert (bench["task"], bench["version"], bench["headline"]) == (
        "synth_gate",
        "1-A",
        "correct/accuracy",
    )
    [entry] = bench["entries"]
    assert entry["value"] == pytest.approx(0.9)
    assert entry["metrics"]["iou_mean"] == pytest.approx(0.525)  # mean of i/20, i = 1..20
    assert bench["category_field"] == "category"
    assert entry["categories"]["odd"] == {"mean": pytest.approx(0.8), "n": 10}
    assert entry["categories"]["even"] == {"mean": 1.0, "n": 10}


def test_html_has_tables_and_plots(mixed_logs: Path, tmp_path: Path) -> None:
    html = build_report(mixed_logs, tmp_path / "out").html.read_text()
    assert len(re.findall(r'<table class="leaderboard"', html)) == 2
    assert len(re.findall(r'<table class="categories"', html)) == 1
    kinds = re.findall(r'<figure class="plot plot-(\w+)"><svg', html)
    assert sorted(kinds) == ["headline", "headline", "iou", "survival"]


def test_corrupted_and_truncated_logs_are_named_and_the_rest_is_reported(
    mixed_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = sorted(mixed_logs.glob("*.eval"))[0]
    truncated = mixed_logs / "truncated.eval"
    truncated.write_bytes(good.read_bytes()[:4000])
    (mixed_logs / "garbage.eval").write_text("not a zip file")
    out = tmp_path / "out"
    assert main(["report", str(mixed_logs), "-o", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "truncated.eval: unreadable Inspect log" in printed
    assert "garbage.eval: unreadable Inspect log" in printed
    data = json.loads((out / "leaderboard.json").read_text())
    assert sorted(Path(e["path"]).name for e in data["errors"]) == [
        "garbage.eval",
        "truncated.eval",
    ]
    assert {b["task"] for b in data["benchmarks"]} == {"docket/smoke", "synth_gate"}
    assert "truncated.eval" in (out / "index.html").read_text()
    assert "garbage.eval" in (out / "leaderboard.md").read_text()


def test_missing_log_dir_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "out")]) == 2
    assert "nope: log directory not found" in capsys.readouterr().out


def test_bundle_links_point_into_the_log_viewer(gate_logs: Path, tmp_path: Path) -> None:
    files = build_report(gate_logs, tmp_path / "out", bundle=True)
    assert files.bundle is not None and (files.bundle / "index.html").is_file()
    [log] = list(gate_logs.glob("*.eval"))
    assert (files.bundle / "logs" / log.name).is_file()
    assert f'href="bundle/index.html#/logs/{log.name}"' in files.html.read_text()


def test_survival_and_iou_inputs_are_read_from_sample_score_dicts(gate_logs: Path) -> None:
    [run] = build_runs(load_logs(gate_logs))
    # ids 1..20: complied at turn i mod 4 (never when 0), five ids per residue
    assert run.survival == [0.75, 0.5, 0.25]
    assert (
        sorted(run.compliance_turns, key=lambda t: t or 0)
        == [None] * 5 + [1] * 5 + [2] * 5 + [3] * 5
    )
    assert sorted(run.ious) == pytest.approx([i / 20 for i in range(1, 21)])
    assert run.sample_count == 20


def test_samples_column_counts_samples_when_the_headline_is_no_sample_mean() -> None:
    # e.g. ANCHOR's R(1): a metric over the samples, not a mean of one value per sample
    run = Run("log", "t", "1-A", {}, "m", {}, "success", "", headline_value=0.5, sample_count=7)
    assert run.samples == {} and _entry(run, None, "1")["samples"] == 7


def test_headline_falls_back_to_the_first_metric_with_a_value() -> None:
    def run(values: Mapping[tuple[str, str], float | None]) -> Run:
        metrics = [ScoreMetric(s, "scorer", m, v) for (s, m), v in values.items()]
        return Run("log", "t", "1-A", {}, "m", {}, "success", "", score_metrics=metrics)

    nan_first = {("refusal", "mean"): None, ("refusal", "stderr"): None, ("harm", "mean"): 0.5}
    assert choose_headline([run(nan_first)]) == ScoreMetric("harm", "scorer", "mean", 0.5)
    # the headline is chosen per benchmark: one model's value is enough
    other = {("refusal", "mean"): 1.0, ("refusal", "stderr"): 0.0, ("harm", "mean"): 0.0}
    assert choose_headline([run(nan_first), run(other)]) == ScoreMetric(
        "refusal", "scorer", "mean", None
    )
    assert choose_headline([run({("x", "stderr"): 0.1})]) is None
