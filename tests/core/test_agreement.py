"""`docket.core.agreement.match_share`: exact shares on known cases, a length mismatch refused."""

import pytest

from docket.core.agreement import match_share


def test_match_share_counts_exact_matches() -> None:
    assert match_share(["a", "b", "c", "d"], ["a", "x", "c", "y"]) == 0.5
    assert match_share([1, 2, 3], [1, 2, 3]) == 1.0
    assert match_share([], []) == 0.0


def test_a_length_mismatch_is_refused() -> None:
    with pytest.raises(ValueError):
        match_share(["a"], ["a", "b"])
