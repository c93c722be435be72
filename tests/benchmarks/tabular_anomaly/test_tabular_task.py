"""`docket/tabular_anomaly`: data sets, splits, exact AUROC/AUPRC, the task end to end."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import get_args

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.tabular_anomaly.config import TabularConfig
from docket.benchmarks.tabular_anomaly.dataset import LOADERS, SHOP_KINDS, shop, split
from docket.benchmarks.tabular_anomaly.scorer import by_kind, ranking_metrics
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.core.inspect_private import PrerequisiteError
from docket.methods.anomaly.baselines import random_scores
from docket.methods.anomaly.fdiv import DIVERGENCES
from docket.methods.anomaly.serialize import parse, serialize
from tests.scores import sample_score, score_fields


def test_auroc_and_auprc_on_a_hand_case() -> None:
    values = ranking_metrics([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    assert values["auroc"] == 0.75
    assert values["auprc"] == pytest.approx(0.5 * (1 + 2 / 3))
    kinds = by_kind([0, 1, 1, 0], [0.2, 0.9, 0.1, 0.3], ["normal", "a", "b", "normal"])
    assert kinds == {"a": 1.0, "b": 0.0}


def test_every_data_set_loads_and_serializes() -> None:
    for name, load in LOADERS.items():
        table = load()
        assert table.normal and table.anomalies, name
        row = table.normal[0]
        text, _ = serialize(row, table.columns)
        assert serialize(parse(text, table.columns), table.columns)[0] == text


def test_splits_are_one_class_seeded_and_hold_the_anomaly_share() -> None:
    table = shop()
    part = split(table, seed=1)
    assert len(part.train) == 200 and len(part.test) == len(part.labels)
    assert sum(part.labels) / len(part.labels) == pytest.approx(0.1, abs=0.01)
    assert all(row in table.normal for row in part.train)
    assert set(part.kinds) == {"normal", *SHOP_KINDS}
    assert split(table, seed=1) == part and split(table, seed=2) != part


def test_the_random_detector_scores_exactly_what_sklearn_gives(tmp_path: Path) -> None:
    task = tabular_anomaly(detector="random", datasets="wine,shop", seeds=2)
    [log] = inspect_eval(
        task, model=get_model("docket/scripted", policy="refuse"), log_dir=str(tmp_path),
        display="none",
    )  # fmt: skip
    assert log.status == "success" and log.samples and len(log.samples) == 4
    expected = []
    for sample in log.samples:
        name, seed = sample.metadata["dataset"], sample.metadata["seed"]
        part = split(LOADERS[name](), seed)
        want = ranking_metrics(part.labels, list(random_scores(part.test, seed)))
        assert sample_score(sample, "detection_scorer").value == pytest.approx(want)
        expected.append(want["auroc"])
    assert log.results is not None
    auroc = next(s for s in log.results.scores if s.name == "auroc")
    assert auroc.metrics["mean"].value == pytest.approx(sum(expected) / 4)
    assert abs(auroc.metrics["mean"].value - 0.5) < 0.15


def test_a_pyod_detector_separates_the_minority_class(tmp_path: Path) -> None:
    task = tabular_anomaly(detector="copod", datasets="breast_cancer", seeds=1)
    [log] = inspect_eval(
        task, model=get_model("docket/scripted", policy="refuse"), log_dir=str(tmp_path),
        display="none",
    )  # fmt: skip
    assert log.samples and score_fields(log.samples[0], "detection_scorer")["auroc"] > 0.9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"detector": "svm"}, "-T detector='svm' is not accepted"),
        ({"datasets": "iris"}, "unknown 'iris'"),
        ({"config": {"f": "hellinger"}}, "-T config: f: Input should be 'js', 'kl', "),
        ({"anomaly_share": 1.5}, "must be in (0, 1)"),
    ],
)
def test_bad_arguments_are_one_line(args: dict, message: str) -> None:
    with pytest.raises(PrerequisiteError) as error:
        tabular_anomaly(**args)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_config_takes_the_divergences_dispat_has() -> None:
    assert sorted(get_args(TabularConfig.model_fields["f"].annotation)) == sorted(DIVERGENCES)


def test_the_experiment_table_marks_missing_cells_and_short_seed_counts() -> None:
    scripts = Path(__file__).resolve().parents[3] / "benchmarks" / "tabular_anomaly" / "scripts"
    table = runpy.run_path(str(scripts / "experiment.py"))["table"]

    results = {
        "wine": {
            "knn": [{"auroc": 0.9, "auprc": 0.5}, {"auroc": 0.7, "auprc": 0.3}],
            "anollm": [{"auroc": 0.8, "auprc": 0.4}],
        },
        "shop": {"knn": [{"auroc": 0.6, "auprc": 0.2}, {"auroc": 0.6, "auprc": 0.2}]},
    }
    lines = table(results).splitlines()
    assert lines[2] == "| knn | 0.800 ± 0.141 (0.400) | 0.600 ± 0.000 (0.200) | 0.700 |"
    assert lines[3] == "| anollm | 0.800 (0.400) [1 seed] | – | – |"


def test_the_experiment_differences_pair_each_row_with_anollm_seed_by_seed() -> None:
    scripts = Path(__file__).resolve().parents[3] / "benchmarks" / "tabular_anomaly" / "scripts"
    differences = runpy.run_path(str(scripts / "experiment.py"))["differences"]
    runs = {
        "anollm": [{"auroc": 0.8}, {"auroc": 0.9}, {"auroc": 0.7}],
        "dispat-implicit": [{"auroc": 0.9}, {"auroc": 0.8}],  # a third seed did not run
        "surface": [{"auroc": 0.8}, {"auroc": 0.9}, {"auroc": 0.7}],
    }
    lines = differences({"wine": runs}).splitlines()
    # +0.1 and −0.1: mean 0, sd 0.141; one below 0; only the seeds both rows ran count
    assert lines[2] == "| dispat-implicit | +0.000 ± 0.141 [+0.100, -0.100] | 1 of 2 |"
    assert lines[3] == "| dispat-variational | – | 0 of 0 |"
    assert lines[5] == "| surface | +0.000 ± 0.000 [+0.000, +0.000, +0.000] | 0 of 3 |"


def test_the_experiment_merges_runs_split_by_seed_in_seed_order() -> None:
    scripts = Path(__file__).resolve().parents[3] / "benchmarks" / "tabular_anomaly" / "scripts"
    merge = runpy.run_path(str(scripts / "experiment.py"))["merge"]
    old = {"shop": {"anollm": [{"auroc": 0.7}, {"auroc": 0.8}]}}  # no seed field: positions 0, 1
    later = {
        "shop": {"anollm": [{"auroc": 0.6, "seed": 2}]},
        "wine": {"anollm": [{"auroc": 0.9, "seed": 0}]},
    }
    redo = {"shop": {"anollm": [{"auroc": 0.75, "seed": 1}]}}  # replaces seed 1
    merged = merge([later, old, redo])
    assert [r["auroc"] for r in merged["shop"]["anollm"]] == [0.7, 0.75, 0.6]
    assert list(merged) == ["wine", "shop"]  # the data sets in DATASETS order
