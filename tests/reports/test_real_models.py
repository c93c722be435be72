"""The READMEs' real-model rows: read from a leaderboard, merged, rendered without drift."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docket.core.results_tables import load_results, table_block
from docket.reports.real_models import (
    BENCHMARKS,
    BLOCK,
    RESULTS,
    merge,
    model_free_tasks,
    readmes,
    render,
    rows_from_leaderboard,
)

RUN = "docket suite local --limit 10"
#: Task -> benchmark folder (the script takes it from the listings).
FOLDERS = {"docket/rl_arith": "rl_arith", "docket/erm_retrieval": "erm_retrieval"}


def _leaderboard() -> dict[str, Any]:
    entry = {
        "model": "docket/qwen",
        "value": 0.25,
        "ci_low": 0.0891,
        "ci_high": 0.53333,
        "n": 12,
        "errored": 1,
        "errored_text": "errored 1/12",
        "behaviour": ["unparsed 3/12", "truncated at max_tokens 2/12", "message limit 1/12"],
        "log": "/logs/a.eval",
    }
    table = {
        "task": "docket/rl_arith",
        "version": "2-A",
        "headline": {"name": "reward/mean", "direction": "higher"},
        "entries": [entry, entry | {"model": "docket/smollm2", "value": None, "log": "/b"}],
    }
    method = {"task": "docket/erm_retrieval", "kind": "method", "entries": [entry]}
    unscored = {
        "task": "docket/rl_arith",
        "model": "docket/judged",
        "reason": "headline reward/mean is NaN: no sample has a value for it (judge_failure 2/2)",
        "health": {"samples": 2},
        "log": "/logs/c.eval",
    }
    return {
        "benchmarks": [
            {"benchmark": "rl_arith", "tables": [table]},
            {"benchmark": "erm_retrieval", "tables": [method]},
        ],
        "unscored": [unscored],
    }


def test_rows_carry_the_headline_interval_n_date_and_health() -> None:
    dates = {"/logs/a.eval": "2026-12-07", "/logs/c.eval": "2026-12-06"}
    rows = rows_from_leaderboard(_leaderboard(), dates, RUN, FOLDERS, {"/logs/c.eval": "2-A"})
    assert [r["model"] for r in rows] == ["docket/judged", "docket/qwen", "docket/smollm2"]
    judged = rows.pop(0)  # a run the report could not score: its row says why
    assert (judged["value"], judged["n"], judged["version"], judged["date"]) == (
        None,
        2,
        "2-A",
        "2026-12-06",
    )
    assert judged["health"].startswith("headline reward/mean is NaN")
    assert rows[0] == {
        "benchmark": "rl_arith",
        "task": "docket/rl_arith",
        "version": "2-A",
        "model": "docket/qwen",
        "headline": "reward/mean",
        "direction": "higher",
        "value": 0.25,
        "interval": [0.0891, 0.5333],
        "n": 12,
        "errored": 1,
        "health": "errored 1/12; unparsed 3/12; truncated at max_tokens 2/12",
        "date": "2026-12-07",
        "run": RUN,
    }
    assert rows[1]["value"] is None and rows[1]["date"] == ""
    text = render(rows, "rl_arith")
    row = "| `docket/rl_arith` | `docket/qwen` | 2-A | 12 | reward/mean ↑ 0.250 [0.089, 0.533] |"
    assert row in text
    assert "| `docket/smollm2` | 2-A | 12 | reward/mean ↑ no score |" in text
    unscored = render([judged], "rl_arith")
    assert "| `docket/judged` | 2-A | 2 | no score | headline reward/mean is NaN" in unscored
    assert "2026-12-06" not in unscored and "2026-12-07" not in text  # dates: the file only
    assert render(rows, "toy_math").startswith("No real model has been run")
    free = model_free_tasks(_leaderboard(), FOLDERS)  # a method's table gives no model row
    assert free == [{"benchmark": "erm_retrieval", "task": "docket/erm_retrieval"}]
    assert render(rows, "erm_retrieval", free) == (
        "`docket/erm_retrieval`: the model under test makes no call, so a run scores the method "
        "and has no real-model row."
    )


def test_a_rerun_replaces_its_own_rows_and_keeps_the_others() -> None:
    old = rows_from_leaderboard(_leaderboard(), {}, RUN, FOLDERS)[1:]
    new = [old[0] | {"value": 0.5, "run": "docket suite local --limit 20"}]
    merged = merge(old, new)
    values = [(r["model"], r["value"]) for r in merged]
    assert values == [("docket/qwen", 0.5), ("docket/smollm2", None)]


def test_every_benchmark_readme_holds_the_block() -> None:
    expected = {p.parent.name for p in BENCHMARKS.glob("*/README.md")} - {"perf"}
    assert set(readmes()) == expected


@pytest.mark.parametrize("benchmark", sorted(readmes()))
def test_the_readme_block_is_rendered_from_the_committed_file(benchmark: str) -> None:
    results = load_results(RESULTS)
    readme: Path = readmes()[benchmark]
    held = table_block(readme.read_text(encoding="utf-8"), BLOCK)
    assert held == render(results["rows"], benchmark, results["model_free"]).strip(), (
        f"{readme}: run `python reports/scripts/real_models.py --render`"
    )
