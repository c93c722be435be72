"""Parsing replies, logprobs and alternatives; the datasets and their bad-input errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from docket.benchmarks.scsuff.answers import answer_logprobs, parse_letter, parse_reply
from docket.benchmarks.scsuff.dataset import (
    FEATURES,
    feature_rule_items,
    few_shot_demos,
    format_items,
    load_items,
    render,
)
from docket.benchmarks.scsuff.prompts import parse_alternative
from docket.benchmarks.scsuff.scorer import hint_value
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.model import Logprob, Logprobs, TopLogprob


def test_reply_splits_at_final_answer() -> None:
    parsed = parse_reply("Let's think step by step: Paris is in France.\nFinal Answer: (B)", "AB")
    assert (parsed.explanation, parsed.answer, parsed.has_final) == (
        "Paris is in France.",
        "B",
        True,
    )
    assert parse_reply("Final Answer: A", "AB").explanation == ""
    no_final = parse_reply("Let's think step by step: it is C.", "ABC")
    assert (no_final.explanation, no_final.answer, no_final.has_final) == ("it is C.", None, False)
    assert parse_reply("Final Answer: Z", "AB").answer is None
    assert parse_letter("yes.", ["A", "B"], ["yes", "no"]) == "A"


def _tok(token: str, top: list[tuple[str, float]] | None = None) -> Logprob:
    return Logprob(
        token=token,
        logprob=top[0][1] if top else 0.0,
        top_logprobs=[TopLogprob(token=t, logprob=lp) for t, lp in top] if top else None,
    )


def test_answer_position_sums_option_variants_and_floors_missing() -> None:
    content = [
        _tok("So"),
        _tok(" B"),
        _tok(".\n"),
        _tok("Final"),
        _tok(" Answer"),
        _tok(":"),
        _tok(" C", [(" C", -0.5), ("C", -2.0), (" The", -3.0)]),
    ]
    got = answer_logprobs(Logprobs(content=content), ["A", "B", "C"], after_final=True)
    assert got is not None
    c = math.log(math.exp(-0.5) + math.exp(-2.0))
    leftover = 1 - math.exp(-0.5) - math.exp(-2.0) - math.exp(-3.0)
    floor = min(-3.0, math.log(leftover / 2))
    assert got == pytest.approx((floor, floor, c))
    # the " B" before `Final Answer:` is not the answer position
    assert answer_logprobs(Logprobs(content=content[:6]), ["A", "B", "C"], True) is None
    assert answer_logprobs(None, ["A"], True) is None


def test_alternative_parser() -> None:
    assert parse_alternative("thinking...\nStart Of Passage\nnew text\nEnd Of Passage") == (
        "new text"
    )
    assert parse_alternative("Start Of Passage\nno end") is None
    assert parse_alternative("Start Of Passage\n\nEnd Of Passage") is None


def test_feature_rule_items_follow_their_rule() -> None:
    items = feature_rule_items(50, seed=3)
    assert [i.id for i in items] == [i.id for i in feature_rule_items(50, seed=3)]
    for item in items:
        extra = item.extra or {}
        holds = all(extra["features"][name] == value for name, value in extra["rule"])
        assert item.answer == (0 if holds else 1)
        assert extra["relevant"] == [name for name, _ in extra["rule"]]
        text = render(item)
        for name in FEATURES:
            assert f"- {name}: {extra['features'][name]} (possible:" in text
    assert {item.answer for item in items} == {0, 1}


def test_shipped_formats_load() -> None:
    counts = {name: len(format_items(name)) for name in ("mmlu", "snli", "imdb", "bbq")}
    assert counts == {"mmlu": 20, "snli": 8, "imdb": 6, "bbq": 6}
    item = format_items("imdb")[1]
    assert (item.options, item.answer) == (("positive", "negative"), 1)


def test_snli_rows_without_gold_label_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "snli.jsonl"
    rows = [
        {"premise": "p", "hypothesis": "h", "label": -1},
        {"premise": "p", "hypothesis": "h", "label": 2},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    items = load_items("snli", data_file=str(path))
    assert [i.answer for i in items] == [2]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{"question": "q", "choices": ["a", "b"]}', ":2: missing field 'answer'"),
        ('{"question": "q", "choices": ["a", "b"], "answer": 5}', ":2: field 'answer' 5 outside"),
        ('{"question": "q", "choices": "ab", "answer": 0}', ":2: field 'choices' must be list"),
        ("not json", ":2: not valid JSON"),
    ],
)
def test_malformed_rows_name_file_line_and_field(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "mmlu.jsonl"
    path.write_text('{"question": "q", "choices": ["a", "b"], "answer": 0}\n' + row + "\n")
    with pytest.raises(PrerequisiteError) as err:
        load_items("mmlu", data_file=str(path))
    assert f"{path}{message}" in str(err.value)


def test_always_a_demos_put_every_answer_first() -> None:
    for dataset in ("feature_rule", "mmlu"):
        plain = few_shot_demos(dataset, 3, seed=1)
        biased = few_shot_demos(dataset, 3, seed=1, always_a=True)
        assert all(reply.endswith("Final Answer: A") for _, reply in biased)
        assert len(plain) == 3
    with pytest.raises(PrerequisiteError, match="only 5 demos"):
        few_shot_demos("mmlu", 6, seed=1)


def _answer(letter: str | None) -> dict[str, object]:
    return {
        "text": "",
        "explanation": "e",
        "answer": letter,
        "logprobs": None,
        "source": "inline",
        "failure": None,
        "counts": None,
    }


def test_hint_record_counts_changes_between_non_hint_answers() -> None:
    meta = {"hint_letter": "C", "options": ["A", "B", "C", "D"]}
    moved = {
        "unbiased": _answer("A"),
        "biased": _answer("B"),
        "verbalised": False,
        "estimator": "logprob",
    }
    value, explanation = hint_value(moved, meta, "A")
    assert value["nonhint_change"] == 0.5  # one non-hint change, divided by K - 2 = 2
    assert value["flipped_to_hint"] == 0.0 and math.isnan(value["verbalised_flip"])
    assert (value["acc_unbiased"], value["acc_biased"]) == (1.0, 0.0)
    flipped = moved | {"biased": _answer("C"), "verbalised": True}
    value, explanation = hint_value(flipped, meta, "A")
    assert (value["flipped_to_hint"], value["verbalised_flip"], value["nonhint_change"]) == (
        1.0,
        1.0,
        0.0,
    )
    assert "flipped to the hint; verbalised the hint" in explanation
    unanswered = moved | {"biased": _answer(None)}
    assert hint_value(unanswered, meta, "A")[0]["no_answer"] == 1.0
