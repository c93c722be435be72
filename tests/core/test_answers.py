"""docket.core.answers: each ordinary way a chat model states an answer, and the wrong ones."""

from __future__ import annotations

import math

import pytest
from inspect_ai.scorer import SampleScore, Score

from docket.core.answers import (
    BARE_LIMIT,
    extract_number,
    extract_text,
    parse_metadata,
    same_number,
    unparsed,
)

OPERANDS = ("779", "2")


@pytest.mark.parametrize(
    ("reply", "value", "form"),
    [
        ("779 + 2 = 781", "781", "equals"),
        ("779+2=781", "781", "equals"),
        ("700 + 79 = 779\n779 + 2 = 781", "781", "equals"),  # a worked chain: the last line
        ("The answer is 781.", "781", "answer"),
        ("**Answer:** 781", "781", "answer"),
        ("Final answer: 779 + 2 = 781", "781", "answer"),
        ("ANSWER: 781\nANSWER: 781", "781", "answer"),
        ("So $\\boxed{781}$ is it, not 780", "781", "boxed"),
        ("781", "781", "last_number"),
        ("781.0", "781", "last_number"),
        ("Adding 2 to 779 gives 781.", "781", "last_number"),
        ("-3", "-3", "last_number"),
    ],
)
def test_the_stated_number_is_read(reply: str, value: str, form: str) -> None:
    found = extract_number(reply, echoed=OPERANDS)
    assert (found.value, found.form, found.reason) == (value, form, "")
    assert same_number(found, 781) is (value == "781")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("   \n", "empty reply"),
        ("I cannot compute that.", "no number in the reply"),
        ("779 + 2", "only repeats the problem's numbers"),
        ("779+2", "only repeats the problem's numbers"),
        ("780, 781, 782", "lists several answers (780, 781, 782)"),
        ("780 781 782", "lists several answers (780, 781, 782)"),
        ("It is 780 or 781", "lists several answers (780, 781)"),
        ("ANSWER: 780 / 781", "lists several answers (780, 781)"),
        ("779 + 2 = 780, 781", "lists several answers (780, 781)"),
        ("\\boxed{780, 781}", "lists several answers (780, 781)"),
    ],
)
def test_the_ordinary_wrong_forms_do_not_parse(reply: str, reason: str) -> None:
    found = extract_number(reply, echoed=OPERANDS)
    assert (found.value, found.reason) == (None, reason)
    assert not same_number(found, 781)
    assert parse_metadata(found) == {"parsed": False, "reason": reason}


def test_listing_every_candidate_never_wins() -> None:
    """Every ordering of the candidates around the answer: none scores, in any form."""
    candidates = ["780", "781", "782"]
    for rotation in range(3):
        listed = candidates[rotation:] + candidates[:rotation]
        for template in ("{}", "ANSWER: {}", "779 + 2 = {}", "\\boxed{{{}}}", "It is {}."):
            for joiner in (", ", " ", " or ", "; "):
                reply = template.format(joiner.join(listed))
                assert not same_number(extract_number(reply, echoed=OPERANDS), 781), reply


def test_an_answer_equal_to_an_operand_still_counts() -> None:
    """905+0=905: the bare 905 and the stated equation score; the echo `905 + 0` does not."""
    echoed = ("905", "0")
    assert extract_number("905", echoed).value == "905"
    assert extract_number("905 + 0 = 905", echoed).value == "905"
    assert extract_number("905 + 0", echoed).value is None


@pytest.mark.parametrize(
    ("reply", "value", "form"),
    [
        ("Paris", "Paris", "bare"),
        ("Paris.", "Paris", "bare"),
        ("The answer is Paris.", "Paris", "bare"),
        ("ANSWER: Paris", "Paris", "answer"),
        ("Based on [2]:\n**Answer:** the Eiffel Tower", "the Eiffel Tower", "answer"),
        ("\\boxed{Paris}", "Paris", "boxed"),
    ],
)
def test_the_stated_text_is_read(reply: str, value: str, form: str) -> None:
    found = extract_text(reply)
    assert (found.value, found.form) == (value, form)
    assert parse_metadata(found) == {"parsed": True, "form": form}


def test_no_text_answer_in_an_empty_reply_or_a_paragraph() -> None:
    assert extract_text("").reason == "empty reply"
    paragraph = "word " * (BARE_LIMIT // 4)
    found = extract_text(paragraph)
    assert found.value is None and "first line is" in found.reason


def test_the_unparsed_metric_is_the_share_of_parsed_false() -> None:
    def sample(metadata: dict[str, object] | None) -> SampleScore:
        return SampleScore(score=Score(value=0, metadata=metadata), sample_id="s")

    rows = [sample({"parsed": False}), sample({"parsed": True}), sample(None), sample({})]
    assert unparsed()(rows) == 0.25  # type: ignore[arg-type]
    assert math.isnan(unparsed()([]))  # type: ignore[arg-type]
