"""Private tabular_anomaly splits (`docket generate tabular_anomaly`, `-T data=DIR`): fresh per
seed, reproducible, and the surface chance row on them at its stated level through the task."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from docket.benchmarks.tabular_anomaly.attacks import surface_scores
from docket.benchmarks.tabular_anomaly.scorer import ranking_metrics
from docket.benchmarks.tabular_anomaly.splits import SPLIT_FILE, load_splits, private_splits
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl
from docket.core.splits import SPLIT_KEY, files_digest, secret_seed
from tests.benchmarks.generated import generator, manifest
from tests.scores import score_fields

#: README: the surface row's mean AUROC on private splits, 0.881 ± 0.009 over 10 seeds of 12.
PRIVATE_CHANCE = 0.881
_generate = generator("tabular_anomaly", 1)


def _tests(out: Path, dataset: str) -> list[object]:
    rows = read_jsonl(out / SPLIT_FILE, "t", ("dataset", "test"))
    return [r["test"] for r in rows if r["dataset"] == dataset]


def test_seeds_give_fresh_reproducible_splits(tmp_path: Path) -> None:
    first, again = _generate(tmp_path, "s1", "a"), _generate(tmp_path, "s1", "b")
    other = _generate(tmp_path, "s2", "c")
    assert files_digest(first) == files_digest(again) != files_digest(other)
    for dataset in ("breast_cancer", "wine", "shop", "pyod_categorical"):
        assert _tests(first, dataset) != _tests(other, dataset)
    ids = [s.id for s in load_splits(first / SPLIT_FILE)]
    assert all(re.fullmatch(r"ta-[0-9a-f]{12}", i) for i in ids) and len(ids) == 4
    assert "s1" not in (first / SPLIT_FILE).read_text()
    stored = load_splits(first / SPLIT_FILE)[2]  # the first shop split
    again_rows = private_splits(int(stored.id.removeprefix("ta-"), 16), 1)
    assert again_rows[2]["test"] != stored.part.test


def test_the_surface_row_holds_on_a_generated_split_through_the_task(tmp_path: Path) -> None:
    out = _generate(tmp_path, "a private seed", size=3)
    expected = {}
    for stored in load_splits(out / SPLIT_FILE):
        scores = surface_scores(stored.columns, stored.part.train, stored.part.test)
        expected[stored.id] = ranking_metrics(stored.part.labels, list(scores))["auroc"]
    log = inspect_eval(
        tabular_anomaly(detector="surface", data=str(out)),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.samples is not None and log.results is not None
    got = {str(s.id): score_fields(s, "detection_scorer")["auroc"] for s in log.samples}
    assert got == pytest.approx(expected, abs=1e-12) and len(got) == 12
    mean = log.results.scores[0].metrics["mean"].value
    assert abs(mean - PRIVATE_CHANCE) <= 0.05
    assert log.eval.metadata is not None and log.eval.metadata[SPLIT_KEY] == {
        "sha256": manifest(out)["sha256"], "source": "generated", "name": "split",
    }  # fmt: skip


def test_bad_splits_are_one_line(tmp_path: Path) -> None:
    shipped = tabular_anomaly(detector="surface").metadata
    assert shipped is not None and shipped[SPLIT_KEY]["source"] == "shipped"
    out = _generate(tmp_path, "x")
    rows = private_splits(secret_seed("x"), 1)
    rows[0]["labels"] = rows[0]["labels"][:-1]
    (out / SPLIT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PrerequisiteError, match="files changed since"):
        tabular_anomaly(data=str(out))
    (out / "split.json").write_text(json.dumps({**manifest(out), "sha256": files_digest(out)}))
    with pytest.raises(PrerequisiteError, match="labels and kinds differ in length") as error:
        tabular_anomaly(data=str(out))
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="--size 0 must be at least 1"):
        private_splits(1, 0)
