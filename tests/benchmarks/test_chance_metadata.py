"""Every benchmark with a committed chance file records its chance row in the task metadata
(`chance`: value, attacker, source), the leaderboard's dashed line (issue #53 item 3).

Each expected row is read here from the committed file, independently of the task's code (the
strongest blind attacker on the task's headline field), so a regenerated file moves the test
with it; where the file holds an oracle row, the chance row is strictly below it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.fed_topics.attacks import topic_reader
from docket.benchmarks.fed_topics.dataset import LABELS, partition
from docket.reports.leaderboard import ReportOptions, build_report

ROOT = Path(__file__).parents[2]


def _load(source: str) -> Any:
    return json.loads((ROOT / source).read_text(encoding="utf-8"))


def _best(rows: list[tuple[str, float]]) -> tuple[str, float]:
    """The highest score, the first of tied rows (every headline here is higher-is-better)."""
    top = max(score for _, score in rows)
    return next(row for row in rows if row[1] == top)


def _named(key: str, keep: Callable[[str], bool] = lambda name: True) -> Callable[[Any], Any]:
    return lambda rows: _best([(r["name"], float(r[key])) for r in rows if keep(r["name"])])


def _context_qa(context: str) -> Task:
    from docket.benchmarks.context_qa.context_qa import context_qa

    return context_qa(context=context)


def _erm() -> Task:
    from docket.benchmarks.erm_retrieval.erm_retrieval import erm_retrieval

    return erm_retrieval()


def _rl(name: str) -> Callable[[], Task]:
    def build() -> Task:
        if name == "rl_arith":
            from docket.benchmarks.rl_arith.rl_arith import rl_arith

            return rl_arith()
        from docket.benchmarks.rl_constraints.rl_constraints import rl_constraints

        return rl_constraints()

    return build


def _scsuff() -> Task:
    from docket.benchmarks.scsuff.scsuff import scsuff

    return scsuff(self_generator=True)


def _spatial() -> Task:
    from docket.benchmarks.spatial_relations.spatial_relations import spatial_relations

    return spatial_relations()


def _tabular() -> Task:
    from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly

    return tabular_anomaly(detector="random")


def _toy_math() -> Task:
    from docket.benchmarks.toy_math.toy_math import toy_math

    return toy_math()


def _docval() -> Task:
    from docket.benchmarks.docval.docval import docval_grounding

    return docval_grounding(mode="layout_text")


def _erm_rag() -> Task:
    from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag

    return erm_rag()


def _toy_math_sar() -> Task:
    from docket.benchmarks.toy_math.toy_math import toy_math_sar

    return toy_math_sar(sources="rs")


def _correct() -> Task:
    from docket.benchmarks.correct.correct import correct_localization

    return correct_localization()


def _scsuff_rows(rows: list[dict[str, Any]]) -> tuple[str, float]:
    return _best([(r["row"], r["correct_gain"]) for r in rows if r["kind"] == "blind"])


def _scsuff_oracle(rows: list[dict[str, Any]]) -> float:
    return float(next(r["correct_gain"] for r in rows if r["kind"] == "oracle"))


def _tabular_rows(found: dict[str, Any]) -> tuple[str, float]:
    return _best([(r["name"], r["mean"]) for r in found["attackers"]])


def _docval_rows(found: dict[str, Any]) -> tuple[str, float]:
    shipped = found["splits"]["shipped"]
    blind = ("layout", "first_word", "neighbour_none", "neighbour_first_word", "neighbour")
    return _best([(k, shipped[k]["map"]) for k in (*blind, "field_prior") if k in shipped])


def _correct_rows(found: dict[str, Any]) -> tuple[str, float]:
    return _best([(k, v["step"]) for k, v in found["splits"]["shipped"].items()])


TEXT_FREE = {"best_constant", "name_memory"}  # the context_qa attackers that never read the text

#: (case id, the task, its committed file, the file -> (attacker, value) on the task's headline,
#: the file -> its oracle row's value on the headline or None where it holds none)
CASES: list[tuple[str, Callable[[], Task], str, Callable[[Any], Any], Any]] = [
    (
        "context_qa-prompt",
        lambda: _context_qa("prompt"),
        "benchmarks/context_qa/results/chance.json",
        _named("f1"),
        None,
    ),
    (
        "context_qa-reference",
        lambda: _context_qa("reference"),
        "benchmarks/context_qa/results/chance.json",
        _named("f1", lambda name: name in TEXT_FREE),
        None,
    ),
    (
        "context_qa-none",
        lambda: _context_qa("none"),
        "benchmarks/context_qa/results/chance.json",
        _named("f1", lambda name: name in TEXT_FREE),
        None,
    ),
    (
        "erm_retrieval",
        _erm,
        "benchmarks/erm_retrieval/results/chance.json",
        _named("ndcg_10"),
        None,
    ),
    (
        "rl_arith",
        _rl("rl_arith"),
        "benchmarks/rl_arith/results/chance.json",
        _named("reward"),
        None,
    ),
    (
        "rl_constraints",
        _rl("rl_constraints"),
        "benchmarks/rl_constraints/results/chance.json",
        _named("reward"),
        None,
    ),
    (
        "scsuff",
        _scsuff,
        "benchmarks/scsuff/results/headline.json",
        _scsuff_rows,
        _scsuff_oracle,
    ),
    (
        "spatial_relations",
        _spatial,
        "benchmarks/spatial_relations/results/chance.json",
        _named("accuracy"),
        None,
    ),
    (
        "tabular_anomaly",
        _tabular,
        "benchmarks/tabular_anomaly/results/chance.json",
        _tabular_rows,
        None,
    ),
    (
        "toy_math",
        _toy_math,
        "benchmarks/toy_math/results/chance.json",
        _named("accuracy"),
        None,
    ),
    (
        "toy_math_sar",
        _toy_math_sar,
        "benchmarks/toy_math/results/sar_chance.json",
        lambda found: _named("rs_yield")(found["attackers"]),
        lambda found: found["oracle"],
    ),
    (
        "erm_rag",
        _erm_rag,
        "benchmarks/erm_retrieval/results/rag_chance.json",
        lambda found: _named("accuracy")(found["attackers"]),
        lambda found: next(r["accuracy"] for r in found["readers"] if r["name"] == "erm"),
    ),
    (
        "docval",
        _docval,
        "benchmarks/docval/results/blind_attackers.json",
        _docval_rows,
        None,
    ),
    (
        "correct",
        _correct,
        "benchmarks/correct/results/attackers.json",
        _correct_rows,
        None,
    ),
]


@pytest.mark.parametrize(
    ("build", "source", "expected", "oracle"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_task_records_the_strongest_blind_attacker_of_its_committed_file(
    build: Callable[[], Task],
    source: str,
    expected: Callable[[Any], tuple[str, float]],
    oracle: Callable[[Any], float] | None,
) -> None:
    metadata = build().metadata or {}
    assert metadata["headline"]["direction"] == "higher"
    found = _load(source)
    attacker, value = expected(found)
    assert metadata["chance"] == {"value": value, "attacker": attacker, "source": source}
    assert (ROOT / source).is_file()
    if oracle is not None:
        assert value < oracle(found)


@pytest.mark.parametrize("client", [0, 3])
def test_fed_topics_records_its_clients_majority_label_the_strongest_attacker(
    client: int,
) -> None:
    """The file's strongest attacker (best mean over seeds) is the training-majority label; the
    task records that attacker's accuracy on its own client's split, below the oracle reader's
    there (and the file's mean oracle above the file's mean chance)."""
    from docket.benchmarks.fed_topics.fed_topics import fed_topics

    source = "benchmarks/fed_topics/results/chance.json"
    found = _load(source)
    means = [(r["name"], sum(r["seeds"]) / len(r["seeds"])) for r in found["attackers"]]
    strongest, mean = _best(means)
    assert strongest == "majority" and mean < sum(found["oracle"]) / len(found["oracle"])
    chosen = partition(8, alpha=0.5, seed=0)[client]
    counts = Counter(e.label for e in chosen.train)
    label = max(LABELS, key=lambda name: (counts[name], -LABELS.index(name)))
    accuracy = sum(e.label == label for e in chosen.heldout) / len(chosen.heldout)
    chance = (fed_topics(client=client).metadata or {})["chance"]
    assert chance == {"value": accuracy, "attacker": strongest, "source": source, "label": label}
    reader = sum(topic_reader(e.text) == e.label for e in chosen.heldout) / len(chosen.heldout)
    assert accuracy < reader


@pytest.mark.parametrize("hint", ["authority", "contradiction"])
def test_scsuff_hints_records_the_highest_blind_row(hint: str) -> None:
    """Higher is better on kept_correct: the chance row is the highest blind row (the first of
    tied ones), the learned surface answerer, which ignores the hint and keeps its accuracy;
    below the rule, above following the hint."""
    from docket.benchmarks.scsuff.scsuff import scsuff_hints

    source = "benchmarks/scsuff/results/hint_chance.json"
    rows = _load(source)[hint]
    blind = [
        (r["name"], r["kept_correct"])
        for r in rows
        if r["name"] in ("constant", "hash", "avoid", "surface", "uniform")
        and r["kept_correct"] is not None
    ]
    high = max(value for _, value in blind)
    attacker, value = next(row for row in blind if row[1] == high)
    metadata = scsuff_hints(hint=hint, judge="keyword", scsuff=False).metadata or {}
    assert metadata["headline"]["direction"] == "higher"
    assert metadata["chance"] == {"value": value, "attacker": attacker, "source": source}
    assert (attacker, value) == ("surface", 0.87)
    kept = {r["name"]: r["kept_correct"] for r in rows}
    assert kept["follow"] < value < kept["rule"]


def test_settings_the_files_did_not_measure_record_no_chance_row() -> None:
    from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag
    from docket.benchmarks.scsuff.scsuff import scsuff, scsuff_hints
    from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
    from docket.benchmarks.toy_math.toy_math import toy_math, toy_math_sar

    assert "chance" not in (toy_math(split="train").metadata or {})
    assert "chance" not in (toy_math_sar(split="test", sources="rs").metadata or {})
    beir = str(ROOT / "tests" / "data" / "beir_tiny")
    other = erm_rag(data=beir, expander="prf", config={"feedback_split": "train"})
    assert "chance" not in (other.metadata or {})
    hints = scsuff_hints(hint="always_a", few_shot=1, judge="keyword", scsuff=False)
    assert "chance" not in (hints.metadata or {})
    assert "chance" not in (scsuff(self_generator=True, reference=False).metadata or {})
    assert "chance" not in (scsuff(self_generator=True, estimator="sampling").metadata or {})
    # the tabular chance row is the mean over the chosen data sets, the file's rows averaged
    rows = _load("benchmarks/tabular_anomaly/results/chance.json")["attackers"]
    two = _best(
        [(r["name"], round((r["auroc"]["wine"] + r["auroc"]["shop"]) / 2, 6)) for r in rows]
    )
    chance = (tabular_anomaly(detector="random", datasets="wine,shop").metadata or {})["chance"]
    assert (chance["attacker"], chance["value"]) == two


def test_the_leaderboard_names_and_draws_the_recorded_chance_row(tmp_path: Path) -> None:
    """A scripted rl_arith run: its report names the committed chance row under the task's
    heading and draws its line on the headline plot."""
    attacker, value = _named("reward")(_load("benchmarks/rl_arith/results/chance.json"))
    [log] = inspect_eval(
        "docket/rl_arith",
        model=get_model("docket/scripted", policy="rl_arith_first_operand"),
        limit=10,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success"
    files = build_report(tmp_path / "logs", tmp_path / "out", options=ReportOptions())
    source = "benchmarks/rl_arith/results/chance.json"
    assert f"Chance row ({attacker}): {value:.3f}, from `{source}`" in files.markdown.read_text()
    assert 'id="data-chance"' in files.html.read_text()
