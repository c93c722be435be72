"""`docket.core.duplicates`: keys, duplicate counts and reject-and-redraw."""

import random

import pytest

from docket.core.duplicates import DuplicateReport, distinct_draws, duplicate_report, text_key


def test_text_key_folds_case_and_spaces_and_masks_digits_only_when_asked() -> None:
    assert text_key("  What is\tThe  TOTAL?\n") == "what is the total?"
    assert text_key("Add 12 then 7") == "add 12 then 7"
    assert text_key("Add 12 then 7", mask_digits=True) == "add # then #"
    masked = text_key("add 12 then 7", mask_digits=True)
    assert text_key("Add 3 then 85", mask_digits=True) == masked


def test_duplicate_report_counts_repeats_and_seen_keys_apart() -> None:
    report = duplicate_report(["a", "b", "a", "c", "a", "d"], seen=["c", "x", "d"])
    assert (report.within, report.across, report.total) == (2, 2, 4)
    assert report.examples == ("'a'", "'c'", "'a'")
    assert str(report).startswith("2 repeated within the test split, 2 seen (e.g. 'a'")
    # a repeated key that is also seen counts in both
    assert duplicate_report(["s", "s"], seen=["s"]) == DuplicateReport(1, 2, ("'s'", "'s'"))
    assert duplicate_report(["a", "b"], seen=["c"]) == DuplicateReport(0, 0)
    assert str(DuplicateReport(0, 0)) == "0 repeated within the test split, 0 seen"


def test_distinct_draws_redraw_repeats_and_taken_keys_and_keep_the_size() -> None:
    stream = iter([1, 2, 1, 3, 2, 4, 5])
    positions: list[int] = []

    def draw(position: int) -> int:
        positions.append(position)
        return next(stream)

    assert distinct_draws(draw, 3, key=lambda n: n, taken=[3]) == [1, 2, 4]
    # the position is the place the draw would take: a rejected draw's is asked again
    assert positions == [0, 1, 2, 2, 2, 2]


def test_distinct_draws_give_up_in_one_line_when_the_world_is_too_small() -> None:
    rng = random.Random(0)
    with pytest.raises(ValueError, match="found only 4 distinct items of 5 in 50 draws"):
        distinct_draws(lambda _: rng.randrange(4), 5, key=lambda n: n, attempts=10)
    assert distinct_draws(lambda _: 0, 0, key=lambda n: n) == []
