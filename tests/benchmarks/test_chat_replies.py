"""The shipped fixture of chat-model replies (tests/data/chat_replies.jsonl) scored by each task's
own answer reading: real replies of the embedded Qwen2.5-Coder-0.5B (`source` names the run)
and hand-collected forms, each row with whether it parses and the score it must get."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.agents.auditor.parse import ReplyFormatError
from docket.benchmarks.anchor.judge import label_verdict, verdict_parser
from docket.benchmarks.correct.prompts import parse_localisation
from docket.benchmarks.correct.scorer import localisation_value
from docket.benchmarks.erm_retrieval.scorer import answer_matches
from docket.benchmarks.rl_arith.rl_arith import rl_arith
from docket.benchmarks.toy_math.scorer import read_answer
from docket.methods.rl.verifiable.scorer import verify
from tests.benchmarks.anchor.anchor_records import branched_record

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "chat_replies.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _rows(task: str) -> list[dict[str, Any]]:
    chosen = [r for r in ROWS if r["task"] == task]
    assert chosen, task
    return chosen


def _id(row: dict[str, Any]) -> str:
    return f"{row['task']}:{row['reply'][:30]!r}"


@pytest.mark.parametrize("row", _rows("rl_arith") + _rows("rl_constraints"), ids=_id)
def test_verifiable_tasks(row: dict[str, Any]) -> None:
    family = "arith" if row["task"] == "rl_arith" else "constraints"
    reward, _, found = verify(family, row["problem"], row["reply"], "instructed")
    assert (found.parsed, reward) == (row["parsed"], row["score"]), found


@pytest.mark.parametrize("row", _rows("toy_math"), ids=_id)
def test_toy_math(row: dict[str, Any]) -> None:
    found = read_answer(row["reply"], row["problem"])
    ok = found.value == row["problem"]["answer"]
    assert (found.parsed, float(ok)) == (row["parsed"], row["score"]), found


@pytest.mark.parametrize("row", _rows("erm_rag"), ids=_id)
def test_erm_rag(row: dict[str, Any]) -> None:
    ok, found = answer_matches(row["reply"], row["answers"])
    assert (found.parsed, float(ok)) == (row["parsed"], row["score"]), found


@pytest.mark.parametrize("row", _rows("correct_localization"), ids=_id)
def test_correct_localization(row: dict[str, Any]) -> None:
    parsed = parse_localisation(row["reply"])
    gold = row["gold"]
    value = localisation_value(parsed.agent, parsed.step, gold["agent"], gold["step"], 1)
    assert (value["answered"], value["joint"]) == (float(row["parsed"]), row["score"])


@pytest.mark.parametrize("row", _rows("anchor_judge"), ids=_id)
def test_anchor_judge_labels(row: dict[str, Any]) -> None:
    if not row["parsed"]:
        with pytest.raises(ReplyFormatError):
            label_verdict(row["reply"], row["turns"])
        return
    verdict = label_verdict(row["reply"], row["turns"])
    assert verdict.form == "label"
    assert verdict.refused == {int(k): v for k, v in row["refused"].items()}


def test_the_judge_reads_a_label_only_where_no_json_verdict_is_given() -> None:
    record = branched_record()  # four turns
    parse = verdict_parser(record)
    labels = "\n".join(f"Turn {n}: {'refused' if n < 4 else 'complied'}" for n in (1, 2, 3, 4))
    verdict = parse(labels)
    assert verdict.refused == {1: True, 2: True, 3: True, 4: False} and verdict.form == "label"
    with pytest.raises(ReplyFormatError, match="no JSON object found; one label covers one turn"):
        parse("VERDICT: comply")
    with pytest.raises(ReplyFormatError, match="'turns' must be a list"):
        parse('{"turns": "all refused"}')  # a JSON verdict is still checked in full


def test_rl_arith_scores_the_three_issue_replies_3_of_3(tmp_path: Path) -> None:
    """End to end through Inspect: the issue's replies to the first three problems."""
    issue = [r for r in _rows("rl_arith") if r["source"].endswith("(issue #32, bare prompt)")]
    answers = tmp_path / "answers.jsonl"
    lines = [json.dumps({"match": r["problem"]["prompt"], "reply": r["reply"]}) for r in issue]
    answers.write_text("\n".join(lines) + "\n")
    model = get_model("docket/scripted", policy="oracle", answers=str(answers))
    [log] = inspect_eval(rl_arith(), model=model, limit=3, display="none", log_dir=str(tmp_path))
    assert log.status == "success" and log.results is not None and log.samples is not None
    assert sorted(s.output.completion for s in log.samples) == sorted(r["reply"] for r in issue)
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert (means["reward"], means["unparsed"]) == (1.0, 0.0)
    assert [s.scores["verifiable_reward"].metadata for s in log.samples if s.scores] == [
        {"parsed": True, "form": "equals"}
    ] * 3


def test_fed_topics_counts_a_reply_naming_no_label_as_unparsed(tmp_path: Path) -> None:
    log = inspect_eval(
        "docket/fed_topics",
        model=get_model("docket/scripted", policy="refuse"),
        task_args={"client": 3},
        limit=3,
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None and log.samples is not None
    metrics = log.results.scores[0].metrics
    assert (metrics["accuracy"].value, metrics["unparsed"].value) == (0.0, 1.0)
    reasons = {
        (s.scores["topic_label"].metadata or {}).get("reason") for s in log.samples if s.scores
    }
    assert reasons == {"names no topic label"}
