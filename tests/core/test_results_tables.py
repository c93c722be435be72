"""README tables generated from results files: the block between markers is read and replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from docket.core.results_tables import (
    GeneratedTable,
    attacker_scores,
    block,
    chance_entry,
    chance_metadata,
    chance_source,
    chance_table,
    load_results,
    markers,
    replace_table,
    score_pairs_table,
    strongest,
    table_block,
    write_results,
)


def test_a_table_is_replaced_between_its_markers_and_read_back(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    start, end = markers("chance")
    readme.write_text(f"# B\n\nbefore\n{start}\nold\n{end}\nafter\n", encoding="utf-8")
    replace_table(readme, "chance", "| a |\n|---|")
    assert readme.read_text(encoding="utf-8") == (
        f"# B\n\nbefore\n{start}\n| a |\n|---|\n{end}\nafter\n"
    )
    assert table_block(readme.read_text(encoding="utf-8"), "chance") == "| a |\n|---|"


def test_missing_markers_and_bad_files_give_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no <!-- x:start -->"):
        table_block("no table here", "x")
    path = tmp_path / "r.json"
    write_results(path, {"a": 1})
    assert load_results(path) == {"a": 1}
    path.write_text("[1]", encoding="utf-8")
    with pytest.raises(ValueError, match="one JSON object"):
        load_results(path)


def test_a_generated_table_publishes_its_results_and_reads_back(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    start, end = markers("t")
    readme.write_text(f"{start}\n{end}\n", encoding="utf-8")
    table = GeneratedTable(tmp_path / "results" / "r.json", readme, "t")
    lines = score_pairs_table(("a", "b", "c", "d"), [("x", "y", [0.1, 0.25], [1.0, 0.0])])
    assert lines == [
        "| a | b | c | d |",
        "|---|---|---|---|",
        "| x | y | 0.100 / 0.250 | 1.000 / 0.000 |",
    ]
    table.publish({"k": 2}, "\n".join(lines))
    assert table.load() == {"k": 2} and table.held() == "\n".join(lines)


def test_replace_table_rewrites_only_the_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("head\n<!-- t:start -->\nold\n<!-- t:end -->\ntail\n", encoding="utf-8")
    replace_table(readme, "t", "new")
    assert readme.read_text(encoding="utf-8") == "head\n" + block("t", "new") + "\ntail\n"
    with pytest.raises(ValueError, match="no <!-- u:start -->"):
        replace_table(readme, "u", "x")


def test_chance_table_names_the_best_blind_row() -> None:
    rows = [{"name": "a", "acc": 0.1}, {"name": "b", "acc": 0.25}]
    table = chance_table(rows, "acc", {"a": "A", "b": "B"}, "| x | y |", "| oracle | 1.000 |")
    assert table.splitlines() == [
        "| x | y |",
        "|---|---|",
        "| A | 0.100 |",
        "| B | 0.250 |",
        "| **chance row** (the best of the above) | **0.250** |",
        "| oracle | 1.000 |",
    ]


def test_the_strongest_attacker_is_the_highest_or_lowest_first_of_ties() -> None:
    rows = [("a", 0.2), ("b", 0.5), ("c", 0.5), ("d", 0.1)]
    assert strongest(rows) == ("b", 0.5)
    assert strongest(rows, "lower") == ("d", 0.1)
    assert strongest([("x", 0.3), ("y", 0.3)], "lower") == ("x", 0.3)
    with pytest.raises(ValueError, match="no blind attacker row"):
        strongest([])
    with pytest.raises(ValueError, match="direction must be"):
        strongest(rows, "up")


def test_a_committed_chance_file_becomes_task_metadata(tmp_path: Path) -> None:
    path = tmp_path / "bench" / "results" / "chance.json"
    path.parent.mkdir(parents=True)
    path.write_text('[{"name": "a", "f1": 0.1}, {"name": "b", "f1": 0.4}]', encoding="utf-8")
    assert chance_source(path) == "benchmarks/bench/results/chance.json"
    assert chance_metadata(path, lambda rows: attacker_scores(rows, "f1")) == {
        "chance": {"value": 0.4, "attacker": "b", "source": "benchmarks/bench/results/chance.json"}
    }
    lowest = chance_metadata(path, lambda rows: attacker_scores(rows, "f1"), "lower")
    assert lowest["chance"]["attacker"] == "a" and lowest["chance"]["value"] == 0.1
    assert chance_entry(path, lambda rows: None) == {}  # no row for the task's setting
    # an install without the results file records no chance row (the leaderboard draws no line)
    assert chance_metadata(path.with_name("absent.json"), lambda rows: [("a", 1.0)]) == {}


def test_mean_stderr_shows_the_stderr_only_when_there_is_one() -> None:
    from docket.core.results_tables import mean_stderr

    assert mean_stderr(0.5, None) == "0.500"
    assert mean_stderr(0.12345, 0.0449) == "0.123 ± 0.045"
