"""The leaderboard reproduces known scores, honours declared headlines, keeps rows apart by their
identity, ranks by pairwise tests, says why a run has no score, and survives bad logs."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.cli import main
from docket.core.headline import HeadlineError
from docket.reports import build_runs, load_logs
from docket.reports.headline import parse_flag, parse_flags
from docket.reports.leaderboard import ReportOptions, build_report
from docket.reports.runs import Run, newest_only
from docket.reports.serve import make_server, url_of
from docket.reports.stats import Z95
from tests.reports.reports_synthetic import run_gate_task, run_gate_tasks, synth_broken
from tests.reports.test_verdicts import first_passing_n


def _report(log_dir: Path, out: Path, **options: Any) -> dict[str, Any]:
    files = build_report(log_dir, out, options=ReportOptions(**options))
    data: dict[str, Any] = json.loads(files.json.read_text())
    return data


def _tables(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for bench in data["benchmarks"] for t in bench["tables"]]


def _entries(data: dict[str, Any], task: str) -> dict[str, dict[str, Any]]:
    [table] = [t for t in _tables(data) if t["task"] == task]
    return {e["label"]: e for e in table["entries"]}


def test_smoke_scores_cis_and_an_honest_tie_at_n_3(smoke_logs: Path, tmp_path: Path) -> None:
    data = _report(smoke_logs, tmp_path / "out")
    entries = _entries(data, "docket/smoke")
    comply = entries["docket/scripted policy=comply"]
    refuse = entries["docket/scripted policy=refuse"]
    assert (comply["value"], refuse["value"]) == (1.0, 0.0)
    assert comply["n"] == refuse["n"] == 3 and comply["small_n"] and refuse["small_n"]
    assert comply["ci_low"] == pytest.approx(3 / (3 + Z95**2))
    assert refuse["ci_high"] == pytest.approx(Z95**2 / (3 + Z95**2))
    # exact McNemar on 3 discordant pairs: p = 0.25 two-sided, so 3 samples cannot separate them
    [pair] = _tables(data)[0]["pairwise"]
    assert (pair["test"], pair["p"], pair["p_holm"]) == ("McNemar exact", 0.25, 0.25)
    assert comply["rank"] == refuse["rank"] == "=1"
    [table] = _tables(data)
    assert table["headline"]["direction"] == "higher" and table["headline"]["source"] == "task"
    assert comply["tokens"]["total"] > 0 and comply["cost"] == 0.0
    assert comply["wall_seconds"] is not None


def test_declared_binary_headline_with_categories_and_ci(gate_logs: Path, tmp_path: Path) -> None:
    data = _report(gate_logs, tmp_path / "out")
    [bench] = data["benchmarks"]
    assert bench["benchmark"] == "synth"
    [table] = bench["tables"]
    assert (table["task"], table["version"], table["headline"]["name"]) == (
        "synth_gate",
        "1-A",
        "correct/accuracy",
    )
    [entry] = table["entries"]
    assert entry["value"] == pytest.approx(0.9) and entry["n"] == 20 and not entry["small_n"]
    assert entry["metrics"]["iou/mean"] == pytest.approx(0.525)  # mean of i/20, i = 1..20
    assert table["category_field"] == "category"
    assert entry["categories"]["odd"] == {"mean": pytest.approx(0.8), "n": 10}
    assert entry["categories"]["even"] == {"mean": 1.0, "n": 10}
    assert entry["ci_method"] == "wilson"


def test_survival_headline_is_kaplan_meier_lower_is_better(
    survival_logs: Path, tmp_path: Path
) -> None:
    data = _report(survival_logs, tmp_path / "out")
    [table] = _tables(data)
    assert table["headline"]["value"] == "survival" and table["headline"]["arrow"] == "↓"
    assert table["common_setup"] == {}
    by_temp = {e["setup"]["temperature"]: e for e in table["entries"]}
    complying, never = by_temp["0.1"], by_temp["0.2"]
    assert complying["value"] == pytest.approx(0.3) and never["value"] == 0.0
    # lower is better: the run where nobody complied ranks first, significantly
    assert (never["rank"], complying["rank"]) == ("1", "2")
    curve = table["survival"][complying["label"]]
    assert curve["turns"] == [0, 1, 2, 3]
    assert curve["survival"] == pytest.approx([1.0, 0.9, 0.8, 0.7])
    assert complying["ci_method"] == "kaplan-meier"
    assert complying["ci_low"] < 0.3 < complying["ci_high"]
    assert complying["categories"]["odd"] == {"mean": pytest.approx(0.3), "n": 10}


def test_foreign_task_has_unknown_direction_until_a_flag_gives_it(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    run_gate_task(logs, headline=None, benchmark=None)
    data = _report(logs, tmp_path / "a")
    [table] = _tables(data)
    assert table["headline"]["direction"] is None and table["headline"]["source"] == "inspect"
    assert table["entries"][0]["rank"] == "–"
    flagged = _report(
        logs, tmp_path / "b", headline_flags=parse_flags(["synth_gate=iou/mean:higher"])
    )
    [table] = _tables(flagged)
    assert table["headline"]["name"] == "iou/mean" and table["headline"]["direction"] == "higher"
    assert table["entries"][0]["value"] == pytest.approx(0.525)
    assert table["entries"][0]["ci_method"] == "bootstrap"  # IoUs are not 0/1


@pytest.mark.parametrize(
    "text", ["synth_gate", "synth_gate=accuracy", "=accuracy:higher", "t=accuracy:up"]
)
def test_bad_headline_flag_is_one_line(text: str) -> None:
    with pytest.raises(HeadlineError) as error:
        parse_flag(text)
    assert "\n" not in str(error.value) and "--headline" in str(error.value)


def test_runs_differing_in_setup_are_separate_rows_and_repeats_are_superseded(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    first = run_gate_task(logs, failing={1})
    second = run_gate_task(logs, failing={1, 2})  # same identity, newer: replaces the first
    run_gate_task(logs, eval_args={"epochs": 2})
    run_gate_task(logs, eval_args={"temperature": 0.7, "system_message": "be brief"})
    data = _report(logs, tmp_path / "out")
    [table] = _tables(data)
    setups = sorted(json.dumps(e["setup"], sort_keys=True) for e in table["entries"])
    assert setups == [
        '{"epochs": "2"}',
        '{"system_message": "be brief", "temperature": "0.7"}',
        "{}",
    ]
    plain = next(e for e in table["entries"] if not e["setup"])
    assert plain["value"] == pytest.approx(0.9) and plain["log"] == second.location
    [old] = data["superseded"]
    assert (old["log"], old["replaced_by"]) == (first.location, second.location)
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "## Superseded runs" in markdown and Path(first.location).name in markdown


def test_every_unscored_run_states_why(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    model = get_model("docket/scripted", policy="comply")
    for kind in ("nan", "errored", "noscorer"):
        inspect_eval(
            synth_broken(kind=kind),
            model=model,
            log_dir=str(logs),
            display="none",
            fail_on_error=False,
        )
    data = _report(logs, tmp_path / "out")
    reasons = sorted(u["reason"] for u in data["unscored"])
    assert reasons == [
        "3/3 samples errored: RuntimeError('planted solver failure') (3)",
        "headline nan_scorer/mean is NaN: no sample has a value for it",
        "no scorer: the log has no scores",
    ]
    assert data["benchmarks"] == []


def test_html_has_sections_tables_and_plots(
    mixed_logs: Path, survival_logs: Path, tmp_path: Path
) -> None:
    for log in survival_logs.glob("*.eval"):
        shutil.copy2(log, mixed_logs / log.name)
    html = build_report(mixed_logs, tmp_path / "out").html.read_text()
    assert len(re.findall(r'<section class="benchmark"', html)) == 2  # docket/smoke, synth
    assert len(re.findall(r'<table class="leaderboard"', html)) == 3
    assert len(re.findall(r'<table class="side-by-side"', html)) == 1  # synth has two tables
    # smoke samples carry no category, though other logs of the same directory do
    assert len(re.findall(r'<table class="categories"', html)) == 2
    kinds = re.findall(r'<figure class="plot plot-([\w-]+)"><svg', html)
    assert sorted(kinds) == ["headline", "headline", "headline", "iou", "iou", "survival"]
    assert 'id="data-survival-0"' in html and 'id="data-band-0"' in html


def test_single_turn_survival_is_drawn_as_bars(tmp_path: Path) -> None:
    from tests.reports.reports_synthetic import SURVIVAL_HEADLINE

    logs = tmp_path / "logs"
    run_gate_task(logs, headline={**SURVIVAL_HEADLINE, "horizon": 1}, complying={3, 6})
    html = build_report(logs, tmp_path / "out").html.read_text()
    assert "plot-survival-bars" in html and 'plot-survival"' not in html
    data = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    [entry] = _tables(data)[0]["entries"]
    assert entry["value"] == pytest.approx(0.1)  # ids 3 and 6 comply at turn 1


def test_corrupted_and_truncated_logs_are_named_and_the_rest_is_reported(
    mixed_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = sorted(mixed_logs.glob("*.eval"))[0]
    (mixed_logs / "truncated.eval").write_bytes(good.read_bytes()[:4000])
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
    assert {t["task"] for t in _tables(data)} == {"docket/smoke", "synth_gate"}
    assert "garbage.eval" in (out / "leaderboard.md").read_text()


def test_missing_or_empty_log_dir_is_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "out")]) == 2
    assert "nope: log directory not found" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "-o", str(tmp_path / "out")]) == 2
    assert "no Inspect logs" in capsys.readouterr().out
    assert not (tmp_path / "out" / "index.html").exists()


def test_overrides_change_the_headline_and_mark_the_cell(
    gate_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "overrides.yaml"
    entry = {"task": "synth_gate", "key": "correct", "value": 1, "reviewer": "ana"}
    path.write_text(
        yaml.safe_dump(
            {
                "format": "docket-overrides/1",
                "overrides": [
                    {**entry, "sample_id": "1", "reason": "the answer was right"},
                    {**entry, "sample_id": "99", "reason": "no such sample"},
                ],
            }
        )
    )
    data = _report(gate_logs, tmp_path / "out", overrides=str(path))
    [e] = _tables(data)[0]["entries"]
    assert e["value"] == pytest.approx(0.95)  # 19/20 after the reviewer's correction
    assert [o["sample_id"] for o in e["overrides"]] == ["1"]
    assert any("override not applied: no sample '99'" in n for n in data["notes"])
    html = (tmp_path / "out" / "index.html").read_text()
    assert 'class="num overridden"' in html and "ana: the answer was right" in html
    path.write_text("format: docket-overrides/1\noverrides: [{task: t}]\n")
    assert (
        main(["report", str(gate_logs), "-o", str(tmp_path / "x"), "--overrides", str(path)]) == 2
    )
    out = capsys.readouterr().out
    assert "overrides[0] lacks field 'sample_id'" in out and len(out.strip().splitlines()) == 1


def test_cost_comes_from_the_editable_price_table(gate_logs: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "format: docket-prices/1\nmodels:\n  docket/scripted: {input: 1000000, output: 0}\n"
    )
    [run] = build_runs(load_logs(gate_logs))
    data = _report(gate_logs, tmp_path / "out", prices=str(prices))
    [e] = _tables(data)[0]["entries"]
    assert e["cost"] == pytest.approx(run.tokens["input"])  # $1 per input token
    prices.write_text("format: docket-prices/1\nmodels: {}\n")
    [e] = _tables(_report(gate_logs, tmp_path / "o2", prices=str(prices)))[0]["entries"]
    assert e["cost"] is None and e["cost_missing"] == ["docket/scripted"]


def test_history_and_baseline_sections(gate_logs: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    history.mkdir()
    older = tmp_path / "older"
    run_gate_task(older)  # 1.0
    for name, logs in (("2026-01.json", older), ("2026-02.json", gate_logs)):
        assert (
            main(
                [
                    "regress",
                    "--baseline",
                    str(history / name),
                    "--logs",
                    str(logs),
                    "--write-baseline",
                ]
            )
            == 0
        )
    data = _report(
        gate_logs, tmp_path / "out", history=str(history), baseline=str(history / "2026-01.json")
    )
    [series] = data["history"]
    assert series["values"] == pytest.approx([1.0, 0.9, 0.9])
    [comparison] = data["comparison"]["comparisons"]
    assert comparison["worse"] == ["1", "3"]
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "worse (2): 1, 3" in markdown and "## History" in markdown
    assert "plot-history" in (tmp_path / "out" / "index.html").read_text()


def test_serve_answers_on_localhost(gate_logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build_report(gate_logs, out, bundle=True)
    server = make_server(out, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = url_of(server)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "index.html", timeout=10) as page:
            assert b"docket leaderboard" in page.read()
        with urllib.request.urlopen(url + "bundle/index.html", timeout=10) as page:
            assert page.status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_bundle_links_point_into_the_log_viewer(gate_logs: Path, tmp_path: Path) -> None:
    files = build_report(gate_logs, tmp_path / "out", bundle=True)
    assert files.bundle is not None and (files.bundle / "index.html").is_file()
    [log] = list(gate_logs.glob("*.eval"))
    assert (files.bundle / "logs" / log.name).is_file()
    assert f'href="bundle/index.html#/logs/{log.name}"' in files.html.read_text()


def test_multi_task_benchmark_shows_headlines_side_by_side(tmp_path: Path) -> None:
    from tests.reports.reports_synthetic import SURVIVAL_HEADLINE

    logs = tmp_path / "logs"
    run_gate_tasks(
        logs,
        [
            {"failing": {2}, "variant": "direct"},
            {"headline": SURVIVAL_HEADLINE, "complying": {3}, "variant": "audit"},
        ],
    )
    data = _report(logs, tmp_path / "out")
    [bench] = data["benchmarks"]
    sbs = bench["side_by_side"]
    assert len(sbs["columns"]) == 2 and "↑" in sbs["columns"][0] + sbs["columns"][1]
    [row] = sbs["rows"]
    assert sorted(c["value"] for c in row["cells"]) == pytest.approx([0.05, 0.95])


def test_metric_names_are_inspects_keys_not_registry_names() -> None:
    """A package metric is stored as {"accuracy_drop": {"name": "docket/accuracy_drop"}};
    Inspect's headline names the key, so docket must too."""
    from docket.reports.runs import ScoreMetric, _score_metrics

    raw = json.dumps(
        [
            {
                "name": "hint_scorer",
                "scorer": "hint_scorer",
                "metrics": {"accuracy_drop": {"name": "docket/accuracy_drop", "value": 0.25}},
            }
        ]
    )
    assert _score_metrics(raw) == [ScoreMetric("hint_scorer", "hint_scorer", "accuracy_drop", 0.25)]


def test_logs_created_in_the_same_second_keep_the_last_written(tmp_path: Path) -> None:
    def run(name: str, written_ns: int) -> Run:
        path = tmp_path / name
        path.write_text("")
        os.utime(path, ns=(written_ns, written_ns))
        created = "2026-11-30T16:00:07+00:00"
        return Run(str(path), "t", "1-A", {}, "m", {}, "success", created)

    older, newer = run("a.eval", 1_000_000_000), run("b.eval", 2_000_000_000)
    for order in ([older, newer], [newer, older]):
        [kept] = newest_only([replace(r, superseded=[]) for r in order])
        assert kept.log == newer.log and [s.log for s in kept.superseded] == [older.log]


def test_every_underpowered_pair_is_marked_the_same_way_and_ranks_stay_honest(
    tmp_path: Path,
) -> None:
    """Three rows on 20 samples: all pass (A), one flip (B), all fail (C). A-C and B-C are
    separated (McNemar); A-B is not, and one discordant pair in 20 cannot tell 0.05."""
    logs = tmp_path / "logs"
    for temperature, failing in ((0.1, set()), (0.2, {7}), (0.3, set(range(1, 21)))):
        run_gate_task(logs, eval_args={"temperature": temperature}, failing=failing)
    data = _report(logs, tmp_path / "out")
    [table] = _tables(data)
    by_temp = {e["setup"]["temperature"]: e for e in table["entries"]}
    assert [by_temp[t]["rank"] for t in ("0.1", "0.2", "0.3")] == ["=1", "=1", "3"]
    assert [by_temp[t]["underpowered"] for t in ("0.1", "0.2", "0.3")] == [True, True, False]
    status = {tuple(sorted((r["a"][-3:], r["b"][-3:]))): r for r in table["pairwise"]}
    weak = status[("0.1", "0.2")]
    assert weak["status"] == "underpowered" and weak["p_holm"] == 1.0
    assert weak["n_needed"] == first_passing_n(1 / 20, 0.05) and weak["n_needed"] > 20
    assert {status[("0.1", "0.3")]["status"], status[("0.2", "0.3")]["status"]} == {"separated"}
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert markdown.count("| 20 (underpowered) |") == 2
    assert f"| 20 | McNemar exact | 1.000 | {weak['n_needed']} | underpowered |" in markdown
    html = (tmp_path / "out" / "index.html").read_text()
    assert html.count('<span class="small underpowered">underpowered</span>') == 3  # 2 rows, 1 pair


def test_smoke_pair_at_n_3_is_underpowered_with_the_samples_it_needs(
    smoke_logs: Path, tmp_path: Path
) -> None:
    [table] = _tables(_report(smoke_logs, tmp_path / "out"))
    [pair] = table["pairwise"]
    assert (pair["status"], pair["n_needed"]) == ("underpowered", first_passing_n(1.0, 0.05))
    assert all(e["underpowered"] for e in table["entries"])


def test_rows_of_different_splits_are_never_ranked_against_each_other(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shipped, private = "a" * 64, "b" * 64
    run_gate_task(logs, split=shipped)
    run_gate_task(logs, split=private, failing=set(range(1, 21)))
    data = _report(logs, tmp_path / "out")
    tables = _tables(data)
    assert sorted(t["split"] for t in tables) == ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]
    for t in tables:
        [entry] = t["entries"]  # one row each: no pair, no rank between the splits
        assert t["pairwise"] == [] and entry["rank"] == "1"
        assert entry["split"] == t["split"] and entry["split_sha256"] == t["split"][0] * 64
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "Data split `aaaaaaaaaaaa`" in markdown and "| bbbbbbbbbbbb |" in markdown
    html = (tmp_path / "out" / "index.html").read_text()
    assert f'<code title="sha256 {private}">bbbbbbbbbbbb</code>' in html


def test_a_v2_baseline_in_the_report_notes_what_is_assumed(gate_logs: Path, tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    args = ["regress", "--baseline", str(path), "--logs", str(gate_logs), "--write-baseline"]
    assert main(args) == 0
    data = json.loads(path.read_text())
    data["format"] = "docket-baseline/2"
    path.write_text(json.dumps(data))
    report = _report(gate_logs, tmp_path / "out", baseline=str(path))
    assert report["notes"][0].startswith(f"{path}: docket-baseline/2 records no data split")
    [comparison] = report["comparison"]["comparisons"]
    assert comparison["verdict"] == "cannot decide"  # 20 equal samples: bound 0.1684 > 0.05
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "(exit 2)" in markdown and "**cannot decide** (exit 2)" in markdown
