"""AnoLLM and DiSPaT on a tiny character-level model: fitting runs, scores average over column
orders, self-play records its bound; PyOD baselines and the row encoder."""

from __future__ import annotations

import random

import numpy as np
import pytest

from docket.core.tiny_models import ascii_tokenizer
from docket.methods.anomaly.baselines import Encoder, pyod_scores, random_scores
from docket.methods.anomaly.dispat import DiSPaT, LMConfig, SelfPlayConfig, TableLM
from docket.methods.anomaly.serialize import Column, permutations

COLUMNS = [Column("colour", "categorical"), Column("size", "numeric", 1)]


def rows(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        colour = rng.choice(["red", "blue"])
        out.append(
            {"colour": colour, "size": round(rng.gauss(1 if colour == "red" else 5, 0.3), 1)}
        )
    return out


TINY = LMConfig(hidden=32, layers=1, heads=2, steps=15, batch=8, score_permutations=2)


def test_the_char_tokenizer_round_trips_text_and_specials() -> None:
    tokenizer = ascii_tokenizer()
    text = "colour is red, size is 1.0\nQ: x"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert len(ids) == len(text) and tokenizer.decode(ids) == text
    assert tokenizer.encode("</s>", add_special_tokens=False) == [tokenizer.eos_token_id]


def test_anollm_score_is_the_value_nll_averaged_over_column_orders() -> None:
    model = TableLM(COLUMNS, TINY)
    report = model.fit(rows(40))
    assert len(report.sft_losses) == 15 and report.sft_losses[-1] < report.sft_losses[0]
    test = rows(6, seed=1)
    orders = permutations(2, 2, TINY.seed)
    expected = np.mean([model.value_nll(test, o) for o in orders], axis=0)
    np.testing.assert_allclose(model.score(test), expected)
    assert np.all(model.score(test) > 0)


@pytest.mark.parametrize("variant", ["implicit", "variational"])
def test_dispat_self_play_runs_each_variant_and_records_the_bound(variant: str) -> None:
    play = SelfPlayConfig(variant=variant, f="js", iterations=1, samples=8, steps=3, batch=4,
                          critic_steps=5)  # fmt: skip
    detector = DiSPaT(COLUMNS, TINY, play)
    report = detector.fit(rows(30))
    [round_] = report.rounds
    assert round_["generated"] >= 1 and np.isfinite(round_["bound_last"])
    scores = detector.score(rows(5, seed=2))
    assert scores.shape == (5,) and np.all(np.isfinite(scores))


def test_bad_variant_is_one_error() -> None:
    with pytest.raises(ValueError, match="implicit or variational"):
        DiSPaT(COLUMNS, TINY, SelfPlayConfig(variant="nope"))


def test_the_encoder_standardises_numbers_and_one_hots_categories() -> None:
    train: list[dict[str, float | str]] = [
        {"colour": "red", "size": 1.0},
        {"colour": "blue", "size": 3.0},
    ]
    encoded = Encoder(COLUMNS, train)(
        [{"colour": "blue", "size": 5.0}, {"colour": "green", "size": 2.0}]
    )
    # colour one-hot over sorted (blue, red, unseen); size (x - 2) / 1
    np.testing.assert_allclose(encoded, [[1.0, 0.0, 0.0, 3.0], [0.0, 0.0, 1.0, 0.0]])


def test_iforest_ranks_an_obvious_outlier_first_and_random_ignores_rows() -> None:
    train = rows(60)
    test = [*rows(9, seed=3), {"colour": "red", "size": 40.0}]
    scores = pyod_scores("iforest", COLUMNS, train, test, seed=0)
    assert int(np.argmax(scores)) == 9
    np.testing.assert_array_equal(random_scores(test, 4), random_scores(rows(10), 4))
