"""What a run's samples did, on constructed logs with known events: errored samples are never
scores, model-free tasks are method tables, every NaN names its failures, and the model's
behaviour stands beside its score (issue #33 items 1, 4, 6; issue #32 item 4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.scorer import Score

from docket.cli import main
from docket.reports import build_runs, load_logs
from docket.reports.health import (
    HEALTH_FORMAT,
    HEALTH_KEY,
    read_health,
    read_log_health,
    summarise,
)
from docket.reports.leaderboard import HEALTHY, ReportOptions, budget_text, build_report
from docket.reports.runs import MODEL_FREE, Run
from tests.reports.constructed import planned, write_log

DEAD = "no successful model call"


def _runs(log_dir: Path) -> dict[str, Run]:
    loaded = load_logs(log_dir)
    assert loaded.errors == []
    return {r.task: r for r in build_runs(loaded)}


def _report(log_dir: Path, out: Path, **options: Any) -> dict[str, Any]:
    files = build_report(log_dir, out, options=ReportOptions(**options))
    data: dict[str, Any] = json.loads(files.json.read_text())
    return data


def _tables(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task"]: t for bench in data["benchmarks"] for t in bench["tables"]}


# --- item 1: an infrastructure failure is never a score ---------------------------------------


def test_a_dead_endpoint_is_errored_never_scored_zero(tmp_path: Path) -> None:
    """Both samples end with no model answer: one at the time limit (Inspect scored it 0), one
    when every retry failed. Nothing is scored; the reason names both causes."""
    write_log(
        tmp_path,
        [
            planned(1, 0, calls=0, failed_calls=1, limit="time"),
            planned(2, 0, calls=0, failed_calls=3, error="RetryError(APIConnectionError)"),
        ],
        task="dead",
    )
    run = _runs(tmp_path)["dead"]
    assert not run.scored and run.errored_samples == 2 and run.n == 0
    assert run.unscored_reason == (
        f"2/2 samples errored: {DEAD} (time limit; Connection error.) (1); "
        f"{DEAD} (Connection error.) (1)"
    )
    data = _report(tmp_path, tmp_path / "out")
    assert data["benchmarks"] == [] and data["errored"]["total"] == 2
    [unscored] = data["unscored"]
    assert unscored["errored"] == 2


def test_errored_samples_leave_the_metric_and_the_mean_is_recomputed(tmp_path: Path) -> None:
    """Inspect's accuracy counted the time-limited sample as 0 (1/3); without it the headline
    is 1/2. A sample that answered and then hit the message limit stays scored."""
    write_log(
        tmp_path,
        [
            planned(1, 1),
            planned(2, 0),
            planned(3, 0, calls=0, failed_calls=1, limit="time", judge_calls=1),
            planned(4, 0, calls=0, failed_calls=1, error="RetryError(APIConnectionError)"),
            planned(5, 1, calls=2, limit="message"),
        ],
        task="partial",
    )
    run = _runs(tmp_path)["partial"]
    assert run.headline_value == pytest.approx(2 / 3)  # samples 1, 2, 5
    assert run.n == 3 and run.errored_samples == 2 and run.health.no_model_answer == 2
    assert run.headline_stderr is None
    entry = _tables(_report(tmp_path, tmp_path / "out"))["partial"]["entries"][0]
    assert entry["errored"] == 2 and entry["n"] == 3
    assert entry["behaviour"] == ["message limit 1/3"]


def test_regress_exits_2_when_errored_samples_exceed_max_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, now = tmp_path / "base", tmp_path / "now"
    base.mkdir()
    now.mkdir()
    write_log(base, [planned(i, 1) for i in range(1, 21)], task="gate")
    samples = [planned(i, 1) for i in range(1, 20)]
    write_log(now, [*samples, planned(20, 0, calls=0, failed_calls=1, limit="time")], task="gate")
    baseline = tmp_path / "baseline.json"
    assert (
        main(["regress", "--baseline", str(baseline), "--logs", str(base), "--write-baseline"]) == 0
    )
    gate = ["regress", "--baseline", str(baseline), "--logs", str(now), "--tolerance", "0.2"]
    assert main(gate) == 2
    out = capsys.readouterr().out
    assert "errored: gate / docket/scripted: 1/20 samples errored" in out
    assert "1 errored samples (left out of every metric) exceeds --max-errors 0" in out
    assert main([*gate, "--max-errors", "1"]) == 0  # the 19 others pass
    assert main([*gate, "--max-errors", "-1"]) == 2


def test_write_baseline_refuses_errored_samples_and_lists_what_it_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(tmp_path, [planned(1, 1), planned(2, 1)], task="good")
    write_log(tmp_path, [planned(1, 0, calls=0, failed_calls=1, limit="time")], task="dead")
    baseline = tmp_path / "baseline.json"
    command = ["regress", "--baseline", str(baseline), "--logs", str(tmp_path), "--write-baseline"]
    assert main(command) == 2 and not baseline.exists()
    out = capsys.readouterr().out
    assert f"left out: dead / docket/scripted: 1/1 samples errored: {DEAD} (time limit;" in out
    assert main([*command, "--max-errors", "1"]) == 0
    assert "Baseline with 1 entries (of 2 runs)" in capsys.readouterr().out


# --- item 4: what is ranked is the model's -----------------------------------------------------


def test_a_model_free_task_is_a_method_table_whatever_the_model(tmp_path: Path) -> None:
    """Declared model-free, no model call: the rows are methods (task args), one per method
    however many models ran it, never ranked side by side with the models' rows."""
    free = {"model_free": True}
    for model in ("docket/scripted", "docket/other"):
        for k in (5, 10):
            write_log(
                tmp_path,
                [planned(i, int(i <= k), calls=0) for i in range(1, 13)],
                task="retrieval",
                model=model,
                metadata={**free, "method": "bm25"},
                task_args={"k": k, "depth": 3},
            )
    write_log(tmp_path, [planned(1, 1), planned(2, 0)], task="modelled")
    write_log(tmp_path, [planned(1, 1), planned(2, 1)], task="modelled2")
    data = _report(tmp_path, tmp_path / "out")
    table = _tables(data)["retrieval"]
    assert table["kind"] == "method" and table["task_args"] == {"depth": 3}  # shared: header
    labels = sorted(e["model"] for e in table["entries"])
    assert labels == ["bm25 k=10", "bm25 k=5"]
    assert {e["ran_with"] for e in table["entries"]} == {"docket/other"}  # the newest logs
    assert len(data["superseded"]) == 2  # the same method under another model
    [bench] = [b for b in data["benchmarks"] if b["benchmark"] == "retrieval"]
    assert bench["side_by_side"] is None
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "| rank | method |" in markdown and "Model-free: the score does not depend" in markdown
    assert "| 0 | no model call |" in markdown
    html = (tmp_path / "out" / "index.html").read_text()
    assert 'data-kind="method"' in html and "<th>method</th>" in html


def test_the_log_guards_the_declaration_and_no_calls_at_all_is_model_free(tmp_path: Path) -> None:
    write_log(tmp_path, [planned(1, 1)], task="claims", metadata={"model_free": True})
    write_log(tmp_path, [planned(1, 1, calls=0), planned(2, 0, calls=0)], task="silent")
    runs = _runs(tmp_path)
    assert not runs["claims"].model_free and runs["claims"].row_model == "docket/scripted"
    assert runs["claims"].notes == [
        "declares model_free, but its samples made 1 model calls: shown as the model's row"
    ]
    assert runs["silent"].model_free and runs["silent"].row_model == MODEL_FREE


def test_regress_does_not_attribute_a_model_free_task_to_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, now = tmp_path / "base", tmp_path / "now"
    base.mkdir()
    now.mkdir()
    samples = [planned(i, 1, calls=0) for i in range(1, 31)]
    write_log(base, samples, task="free", model="docket/a", metadata={"model_free": True})
    write_log(now, samples, task="free", model="docket/b", metadata={"model_free": True})
    baseline = tmp_path / "baseline.json"
    assert (
        main(["regress", "--baseline", str(baseline), "--logs", str(base), "--write-baseline"]) == 0
    )
    [entry] = json.loads(baseline.read_text())["entries"]
    assert entry["model"] == MODEL_FREE
    assert (
        main(["regress", "--baseline", str(baseline), "--logs", str(now), "--tolerance", "0.15"])
        == 0
    )
    # an older baseline that named a model for it is refused in one line
    entry["model"] = "docket/a"
    baseline.write_text(json.dumps(json.loads(baseline.read_text()) | {"entries": [entry]}))
    capsys.readouterr()
    assert main(["regress", "--baseline", str(baseline), "--logs", str(now)]) == 2
    assert "not comparable: free / docket/a: the task is model-free now" in capsys.readouterr().out


# --- item 6: every NaN says why ----------------------------------------------------------------


def test_a_nan_headline_names_the_failures_behind_it(tmp_path: Path) -> None:
    nan = float("nan")
    write_log(
        tmp_path,
        [
            planned(
                1,
                {"score": nan, "judge_failure": 1.0},
                judge_calls=1,
                truncated=1,
                truncated_role="judge",
            ),
            planned(
                2,
                {"score": nan, "judge_failure": 1.0},
                judge_calls=1,
                score_metadata={"auditor_failure": "no JSON object found"},
            ),
            planned(3, {"score": nan, "judge_failure": 0.0}, no_logprobs=1),
        ],
        task="judged",
        key="score",
    )
    run = _runs(tmp_path)["judged"]
    assert run.unscored_reason == (
        "headline score/mean is NaN: no sample has a value for it (auditor_failure 1/3; "
        "judge_failure 2/3; no logprobs 1/3; replies truncated at max_tokens in 1 samples "
        "(judge 1))"
    )


def test_samples_without_a_value_are_counted_with_their_flags(tmp_path: Path) -> None:
    nan = float("nan")
    write_log(
        tmp_path,
        [
            planned(1, {"score": 0.5, "no_alternatives": 0.0}),
            planned(2, {"score": 1.0, "no_alternatives": 0.0}),
            planned(3, {"score": nan, "no_alternatives": 1.0}, max_tokens=512),
        ],
        task="suff",
        key="score",
        metadata={"docket_max_tokens": {"run": 256, "calls": {"model": [512]}}},
    )
    data = _report(tmp_path, tmp_path / "out")
    [entry] = _tables(data)["suff"]["entries"]
    assert entry["value"] == pytest.approx(0.75) and entry["valueless"] == 1
    assert entry["failures"] == ["no_alternatives 1/3"]
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "1 scored samples without a value: no_alternatives 1/3" in markdown
    assert (
        "the task set its own reply limit (max_tokens): calls carried the model under test's "
        "512 where the run asked for 256" in (markdown)
    )
    assert (
        "1 scored samples without a value: no_alternatives 1/3"
        in (tmp_path / "out" / "index.html").read_text()
    )


# --- issue #32 item 4: the model's behaviour beside its score -----------------------------------


def test_model_health_counts_unparsed_tool_errors_refusals_and_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(
        tmp_path,
        [
            planned(1, 0, score_metadata={"parsed": False}),
            planned(2, 0, score_metadata={"parsed": False}),
            planned(3, 0, calls=3, tool_errors=2, parse_errors=1),
            planned(4, 0, content_filter=True),
            planned(5, 0, calls=4, limit="message"),
            planned(6, 0, calls=2, limit="token", truncated=1),
            planned(7, 1, score_metadata={"parsed": True}),
        ],
        task="behaviour",
    )
    run = _runs(tmp_path)["behaviour"]
    health = run.health
    assert (health.unparsed, health.tool_errors, health.tool_error_samples) == (2, 3, 1)
    assert (health.refusals, health.limits, health.truncated) == (1, {"message": 1, "token": 1}, 1)
    assert run.headline_value == pytest.approx(1 / 7) and run.errored_samples == 0
    data = _report(tmp_path, tmp_path / "out")
    [entry] = _tables(data)["behaviour"]["entries"]
    expected = (
        "unparsed 2/7; tool-call errors 3 (1/7); refusals 1/7; message limit 1/7; "
        "token limit 1/7; truncated at max_tokens 1/7 (replies: model 1)"
    )
    markdown = (tmp_path / "out" / "leaderboard.md").read_text()
    assert f"| 0 | {expected} |" in markdown
    assert expected in (tmp_path / "out" / "index.html").read_text()
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "out2")]) == 0
    terminal = capsys.readouterr().out
    assert "unparsed 2/7" in terminal and "tool-call errors 3" in terminal
    assert entry["health"]["model_calls"] == 13


def test_an_unparsed_value_counts_like_parsed_false(tmp_path: Path) -> None:
    """DocVAL's scorers state an unreadable answer as `unparsed: 1.0` in the value dict, not as
    `parsed: false` metadata: docval_teacher on docket/qwen (2/2 traces unparsed, Q 0.158) read
    `unparsed 0/2` beside its score until the health counted the value key too."""
    write_log(
        tmp_path,
        [
            planned(1, {"q": 0.2, "unparsed": 1.0}),
            planned(2, {"q": 0.1, "unparsed": 1.0}),
            planned(3, {"q": 0.9, "unparsed": 0.0}),
            planned(4, {"q": 0.5, "unparsed": float("nan")}),
        ],
        task="docval_like",
        key="q",
    )
    run = _runs(tmp_path)["docval_like"]
    assert run.health.unparsed == 2
    assert run.headline_value == pytest.approx(0.425)
    _report(tmp_path, tmp_path / "out")
    assert "| unparsed 2/4 |" in (tmp_path / "out" / "leaderboard.md").read_text()


def test_a_clean_run_is_ok(tmp_path: Path) -> None:
    write_log(tmp_path, [planned(1, 1), planned(2, 0)], task="clean")
    [entry] = _tables(_report(tmp_path, tmp_path / "out"))["clean"]["entries"]
    assert entry["behaviour"] == [] and entry["errored"] == 0 and entry["health_known"]
    assert f"| 0 | {HEALTHY} |" in (tmp_path / "out" / "leaderboard.md").read_text()


def test_an_errored_epoch_leaves_only_that_epoch_out(tmp_path: Path) -> None:
    """Sample 1 answered in epoch 1 (1) and never in epoch 2: its value is epoch 1's alone."""
    write_log(
        tmp_path,
        [
            planned(1, 1, epoch=1),
            planned(1, 0, epoch=2, calls=0, failed_calls=1, limit="time"),
            planned(2, 0, epoch=1),
            planned(2, 0, epoch=2),
        ],
        task="epochs",
    )
    run = _runs(tmp_path)["epochs"]
    assert run.samples == {"1": 1.0, "2": 0.0} and run.errored_samples == 1
    assert run.headline_value == pytest.approx(0.5)


def test_a_run_whose_samples_all_failed_before_the_model_is_not_model_free(tmp_path: Path) -> None:
    write_log(tmp_path, [planned(1, 0, calls=0, error="RuntimeError('sandbox failed')")], task="t")
    run = _runs(tmp_path)["t"]
    assert not run.model_free and run.row_model == "docket/scripted"
    assert run.unscored_reason == "1/1 samples errored: RuntimeError('sandbox failed') (1)"


def test_a_log_the_suite_marked_errored_keeps_its_other_samples_scored(tmp_path: Path) -> None:
    """`docket suite` writes the reason into an unanswered sample and ends the log as `error`
    (so the next run resumes it): the row still scores the clean samples, recomputed without it."""
    from docket.suite import settle_errors

    path = write_log(
        tmp_path,
        [
            planned(1, 1),
            planned(2, 1),
            planned(3, 0),
            planned(4, 0, calls=0, failed_calls=1, limit="time"),  # Inspect scored it 0
        ],
        task="resumable",
    )
    errored = settle_errors(str(path), "resumable", "s")
    assert errored is not None and errored.ids == ["4"]
    run = _runs(tmp_path)["resumable"]
    assert run.status == "error" and run.scored
    assert run.headline_value == pytest.approx(2 / 3)  # samples 1-3; Inspect's was 2/4
    assert run.n == 3 and run.errored_samples == 1


def test_the_reply_limit_note_is_a_sentence() -> None:
    """Issue #54 item 6: not `ok calls carried max_tokens model 256`."""
    entry = {"forced_max_tokens": None, "max_tokens_seen": {"model": [256], "judge": [64]}}
    assert budget_text(entry) == (
        "replies were limited to (max_tokens) the model under test's 256, the judge's 64"
    )
    forced = {"run": 256, "calls": {"model": [8]}}
    assert budget_text({"forced_max_tokens": forced, "max_tokens_seen": {"model": [8]}}) == (
        "the task set its own reply limit (max_tokens): calls carried the model under test's 8 "
        "where the run asked for 256"
    )
    assert budget_text({"forced_max_tokens": None, "max_tokens_seen": {}}) == ""


# --- the suite's health record: a report reads headers and summaries, not every sample -------


def _recorded_log(tmp_path: Path) -> Path:
    """A log with calls, truncation, tool errors, a judge, failure flags and an unanswered
    sample, settled by the suite (which stores its health record)."""
    from docket.suite import settle_errors

    path = write_log(
        tmp_path,
        [
            planned(1, 1, judge_calls=2, truncated=1, truncated_role="judge"),
            planned(2, 0, tool_errors=2, score_metadata={"parsed": False}),
            planned(3, 1, score_metadata={"judge_failure": True}, max_tokens=64),
            planned(4, 0, calls=0, failed_calls=1, limit="time"),  # Inspect scored it 0
            planned(5, 1, epoch=2, content_filter=True),
        ],
        task="recorded",
    )
    assert read_log_health(path).samples is not None  # no record yet: every sample is read
    assert settle_errors(str(path), "recorded", "s") is not None
    return path


def test_the_suites_health_record_spares_the_samples_and_says_the_same(tmp_path: Path) -> None:
    path = _recorded_log(tmp_path)
    header = read_eval_log(str(path), header_only=True)
    record = (header.eval.metadata or {})[HEALTH_KEY]
    assert record["format"] == HEALTH_FORMAT and record["errored"] == [["4", 1]]
    recorded = read_log_health(path)
    assert recorded.samples is None  # read from the header and the summaries
    eval_id, samples = read_health(path)  # every sample's events
    assert recorded.eval_id == eval_id
    assert recorded.run == summarise(list(samples.values()))
    assert recorded.errored == {k for k, h in samples.items() if h.errored} == {("4", 1)}
    assert recorded.run.truncated == 1 and recorded.run.unparsed == 1
    assert recorded.run.failures == {"judge_failure": 1} and recorded.run.refusals == 1
    run = _runs(tmp_path)["recorded"]
    assert run.errored_samples == 1 and run.n == 4
    assert run.headline_value == pytest.approx(3 / 4)  # samples 1, 3 and 5 of 1, 2, 3, 5


def test_a_health_record_that_no_longer_matches_its_samples_is_not_used(tmp_path: Path) -> None:
    """A sample re-run (a new uuid), a score edited, the record copied into another log or
    malformed: the digest does not match, and every sample is read again."""

    def changed(name: str, change: Callable[[EvalLog], None]) -> Path:
        (tmp_path / name).mkdir()
        log = read_eval_log(str(_recorded_log(tmp_path / name)))
        change(log)
        write_eval_log(log, str(tmp_path / f"{name}.eval"))
        return tmp_path / f"{name}.eval"

    def rerun(log: EvalLog) -> None:
        (log.samples or [])[0].uuid = "another-run"

    def edit(log: EvalLog) -> None:
        (log.samples or [])[1].scores = {"verdict": Score(value=1)}

    def copy(log: EvalLog) -> None:
        log.eval.eval_id = "another-eval"

    def malformed(log: EvalLog) -> None:
        log.eval.metadata = {**(log.eval.metadata or {}), HEALTH_KEY: {"format": HEALTH_FORMAT}}

    assert read_log_health(changed("same", lambda log: None)).samples is None
    for change in (rerun, edit, copy, malformed):
        assert read_log_health(changed(change.__name__, change)).samples is not None, change
