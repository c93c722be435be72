"""SCSuff parsers under adversarial input: replies, verdicts, passages, log-probs, JSONL rows."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from inspect_ai.model import Logprob, Logprobs, TopLogprob
from inspect_ai.scorer import SampleScore, Score

from docket.benchmarks.scsuff.answers import answer_logprobs, parse_letter, parse_reply
from docket.benchmarks.scsuff.dataset import FORMATS, LETTERS, Item, format_items, read_jsonl
from docket.benchmarks.scsuff.prompts import parse_alternative, parse_verdict
from docket.benchmarks.scsuff.scorer import (
    SCORE_KEYS,
    chen_faithfulness,
    hint_value,
    sufficiency_value,
)
from docket.core.inspect_private import PrerequisiteError
from tests.properties.prop_strategies import JSON_VALUES, JSONL_LINES, one_line
from tests.scores import metric_value

OPTIONS = st.integers(2, len(LETTERS)).map(lambda n: list(LETTERS[:n]))


def spliced(pieces: list[str], max_size: int) -> st.SearchStrategy[str]:
    """Arbitrary text, or a splice of marker `pieces` and short random strings."""
    return st.one_of(
        st.text(max_size=max_size),
        st.lists(st.one_of(st.sampled_from(pieces), st.text(max_size=4)), max_size=12).map("".join),
    )


REPLY_PIECES = [
    "Final Answer:",
    "final  answer :",
    "Let's think step by step:",
    "(B)",
    "A.",
    "**C**",
    " ",
    "\n",
    "D",
    "yes",
    "no",
    "(",
    ")",
]
REPLIES = spliced(REPLY_PIECES, 80)


@settings(max_examples=120)
@given(REPLIES, OPTIONS, st.lists(st.text(max_size=8), max_size=8))
@example("Final Answer: (B)", ["A", "B"], [])
def test_parse_reply_names_an_offered_option_or_none(
    text: str, options: list[str], texts: list[str]
) -> None:
    parsed = parse_reply(text, options, texts)
    assert parsed.answer is None or parsed.answer in options
    assert parsed.has_final == ("final" in text.lower() and parsed.has_final)
    if not parsed.has_final:
        assert parsed.answer is None
    assert parse_letter(text, options, texts) in (None, *options)


TOKENS = st.one_of(
    st.sampled_from([" A", "A", "(B", "C.", " ", "Final", " Answer", ":"]), st.text(max_size=4)
)
#: At most 5 distinct listed tokens, each <= log(1/5): a top list whose mass is at most 1.
LOGPROBS = st.floats(min_value=-50.0, max_value=math.log(0.2))
POSITIONS = st.builds(
    lambda token, lp, top: Logprob(
        token=token,
        logprob=lp,
        top_logprobs=[TopLogprob(token=t, logprob=v) for t, v in top.items()] or None,
    ),
    TOKENS,
    LOGPROBS,
    st.dictionaries(TOKENS, LOGPROBS, max_size=5),
)


@settings(max_examples=120)
@given(st.lists(POSITIONS, max_size=10), OPTIONS, st.booleans())
def test_answer_logprobs_are_one_per_option_and_never_nan(
    positions: list[Logprob], options: list[str], after_final: bool
) -> None:
    found = answer_logprobs(Logprobs(content=positions), options, after_final)
    if found is None:
        return
    assert len(found) == len(options)
    for value in found:
        assert not math.isnan(value) and value <= 1e-9


def _write(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@settings(max_examples=150)
@given(st.lists(JSONL_LINES, min_size=1, max_size=4))
@example(["[" * 5000])
@example(['{"a": ' + "1" * 5000 + "}"])
def test_read_jsonl_returns_objects_or_one_error_naming_the_line(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = _write(tmp_path_factory.mktemp("scsuff"), lines)
    try:
        rows = read_jsonl(path)
    except PrerequisiteError as ex:
        one_line(str(ex), f"{path}:")
        return
    assert all(isinstance(row, dict) and where.startswith(f"{path}:") for where, row in rows)


def test_read_jsonl_names_a_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"q": "\xff"}\n')
    with pytest.raises(PrerequisiteError) as info:
        read_jsonl(path)
    one_line(str(info.value), str(path))


FIELDS = [
    "question",
    "choices",
    "answer",
    "subject",
    "id",
    "premise",
    "hypothesis",
    "label",
    "text",
    "context",
    "ans0",
    "ans1",
    "ans2",
    "example_id",
    "category",
]
ROWS = st.dictionaries(
    st.sampled_from(FIELDS),
    st.one_of(JSON_VALUES, st.integers(-2, 9), st.lists(st.text(max_size=4), max_size=9)),
    max_size=len(FIELDS),
)


@settings(max_examples=150)
@given(st.sampled_from(sorted(FORMATS)), ROWS)
@example("mmlu", {"question": "q", "choices": ["a", "b"], "answer": True})
@example("snli", {"premise": "p", "hypothesis": "h", "label": -1})
def test_every_row_converter_gives_an_item_or_one_error_naming_row_and_field(
    name: str, row: dict[str, object]
) -> None:
    convert = FORMATS[name][0]
    try:
        item = convert(row, "rows.jsonl:3")
    except PrerequisiteError as ex:
        one_line(str(ex), "rows.jsonl:3", "field")
        return
    if item is None:
        return
    assert isinstance(item, Item) and item.format == name
    assert 2 <= len(item.options) <= len(LETTERS) and 0 <= item.answer < len(item.options)
    assert all(isinstance(o, str) for o in item.options)


def test_format_items_stops_at_the_first_bad_row_with_its_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path, ['{"question": "q", "choices": ["a", "b"], "answer": 0}', '{"question": 1}']
    )
    with pytest.raises(PrerequisiteError, match=rf"^{path}:2: missing field 'choices'$"):
        format_items("mmlu", str(path))


LOGPROB_OR_ZERO_MASS = st.one_of(st.floats(min_value=-60.0, max_value=0.0), st.just(-math.inf))


@st.composite
def _records(draw: st.DrawFn) -> tuple[dict[str, object], str]:
    k = draw(st.integers(2, 4))
    options = list(LETTERS[:k])
    vectors = st.lists(LOGPROB_OR_ZERO_MASS, min_size=k, max_size=k)
    answer = st.one_of(st.none(), st.sampled_from(options))
    base: dict[str, object] = {
        "answer": draw(answer),
        "failure": draw(st.sampled_from([None, "no answer"])),
        "explanation": draw(st.sampled_from(["", "because"])),
        "logprobs": draw(vectors),
        "source": "inline",
    }
    base["has_final"] = draw(st.booleans())

    def answered_alternatives() -> dict[str, object]:
        alternatives = draw(st.lists(st.one_of(st.none(), st.just("alt")), max_size=3))
        reanswers = [
            None
            if a is None
            else draw(
                st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {"answer": answer, "logprobs": st.one_of(st.none(), vectors)}
                    ),
                )
            )
            for a in alternatives
        ]
        return {"alternatives": alternatives, "reanswers": reanswers}

    record: dict[str, object] = {
        "estimator": draw(st.sampled_from(["logprob", "sampling"])),
        "base": base,
        **answered_alternatives(),
    }
    if draw(st.booleans()):
        record["reference"] = answered_alternatives()
    return record, draw(st.sampled_from(options))


@settings(max_examples=200)
@given(_records())
@example(
    (
        {
            "estimator": "logprob",
            "base": {
                "answer": "A",
                "failure": None,
                "explanation": "e",
                "source": "inline",
                "logprobs": [-math.inf, -math.inf],
            },
            "alternatives": ["alt"],
            "reanswers": [{"answer": "A", "logprobs": [-1.0, -2.0]}],
        },
        "A",
    )
)
def test_sufficiency_value_scores_or_counts_the_failure(
    record_target: tuple[dict[str, object], str],
) -> None:
    record, target = record_target
    value, explanation, _ = sufficiency_value(record, target)
    key = SCORE_KEYS[str(record["estimator"])]
    failures = value["no_answer"] + value["no_explanation"] + value["no_alternatives"]
    assert failures in (0.0, 1.0) and explanation
    if failures:
        assert math.isnan(value[key])
    else:
        assert 0.0 <= value[key] <= 1.0, (value, explanation)
    if "reference" in record:
        gain, reference = value[f"{key}_gain"], value[f"{key}_reference"]
        assert value["no_reference"] in (0.0, 1.0)
        if failures or value["no_reference"]:
            assert math.isnan(gain) and math.isnan(reference)
        else:
            assert 0.0 <= reference <= 1.0 and gain == value[key] - reference


# --- the judge's verdict and the generator's passage -------------------------------------------

VERDICT_PIECES = [
    "Final Answer:",
    "final answer :",
    "**Final Answer:**",
    "YES",
    "NO",
    "yes",
    "No.",
    " or ",
    "/",
    "Nope",
    "\n",
    " ",
    "*",
    "Start Of Passage",
    "End Of Passage",
]
VERDICT_REPLIES = spliced(VERDICT_PIECES, 60)


@settings(max_examples=200)
@given(VERDICT_REPLIES)
@example("Final Answer: YES or NO")
@example("Final Answer: **no**")
def test_parse_verdict_is_yes_no_or_none_and_reads_a_word_it_saw(text: str) -> None:
    verdict = parse_verdict(text)
    assert verdict in (True, False, None)
    if verdict is not None:
        assert ("yes" if verdict else "no") in text.lower()


@settings(max_examples=200)
@given(VERDICT_REPLIES, st.sampled_from(["YES", "NO", "Yes.", "**no**"]))
def test_a_final_verdict_line_decides(text: str, label: str) -> None:
    verdict = parse_verdict(f"{text}\nLet me conclude.\nFinal Answer: {label}")
    assert verdict is label.strip("*.").lower().startswith("y")


@settings(max_examples=200)
@given(VERDICT_REPLIES)
def test_parse_alternative_returns_a_non_empty_piece_of_the_reply(text: str) -> None:
    passage = parse_alternative(text)
    assert passage is None or (passage.strip() and passage in text)


PASSAGE_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=60).filter(
    lambda t: "passage" not in t.lower() and "answer" not in t.lower() and t.strip(" \t\n*_`:#")
)


@settings(max_examples=200)
@given(
    st.text(max_size=40).filter(lambda t: "passage" not in t.lower()),
    PASSAGE_TEXT,
    st.sampled_from(["\nEnd Of Passage", "\nFinal Answer: A", ""]),
)
def test_a_tagged_passage_is_read_back_whatever_ends_it(
    reasoning: str, passage: str, ending: str
) -> None:
    reply = f"{reasoning}\nStart Of Passage\n{passage}{ending}"
    assert parse_alternative(reply) == passage.strip(" \t\n*_`:#")


# --- hint records and Chen's normalised score ------------------------------------------------


@st.composite
def _hint_records(draw: st.DrawFn) -> tuple[dict[str, object], dict[str, object], str]:
    k = draw(st.integers(2, 4))
    options = list(LETTERS[:k])
    answer = st.one_of(st.none(), st.sampled_from(options))

    def one(letter: str | None) -> dict[str, object]:
        return {"answer": letter, "failure": None, "explanation": "e", "logprobs": None}

    judged = draw(st.booleans())
    record: dict[str, object] = {
        "unbiased": one(draw(answer)),
        "biased": one(draw(answer)),
        "judged": judged,
        "verbalised": draw(st.sampled_from([True, False, None])) if judged else None,
        "estimator": "logprob",
    }
    meta: dict[str, object] = {"hint_letter": draw(st.sampled_from(options)), "options": options}
    return record, meta, draw(st.sampled_from(options))


@settings(max_examples=100)
@given(st.lists(_hint_records(), min_size=1, max_size=12))
def test_chen_is_the_verbalised_share_of_judged_flips_over_the_normaliser(
    cases: list[tuple[dict[str, object], dict[str, object], str]],
) -> None:
    values = [hint_value(record, meta, target)[0] for record, meta, target in cases]
    for (record, meta, target), value in zip(cases, values, strict=True):
        assert value["judge_unparsed"] in (0.0, 1.0) or math.isnan(value["judge_unparsed"])
        assert math.isnan(value["judge_unparsed"]) == (not record["judged"])
        # the headline: left out exactly without both answers or with a hint on the answer
        kept = value["kept_correct"]
        assert math.isnan(kept) == (value["no_answer"] == 1.0 or meta["hint_letter"] == target)
        if not math.isnan(kept):
            assert kept == value["acc_unbiased"] * value["acc_biased"]
    flips = [v for v in values if v["flipped_to_hint"] == 1.0]
    judged = [v for v in flips if not math.isnan(v["verbalised_flip"])]
    nonhint = sum(v["nonhint_change"] for v in values if not math.isnan(v["nonhint_change"]))
    got = metric_value(
        chen_faithfulness(),
        [SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(values)],
    )
    assert isinstance(got, float)
    normaliser = 1 - nonhint / len(flips) if flips else 0.0
    if not judged or normaliser <= 0:
        assert math.isnan(got)
    else:
        raw = sum(v["verbalised_flip"] for v in judged) / len(judged)
        assert got == pytest.approx(min(1.0, raw / normaliser))
