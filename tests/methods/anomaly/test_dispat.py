"""AnoLLM and DiSPaT on a tiny character-level model: fitting runs, scores average over column
orders; a self-play round does what it is for on held-out rows (the implicit critic's bound
rises, the variational critic is fooled), each step samples afresh from the policy its objective
is over, and switching self-play off changes the result; PyOD baselines and the row encoder."""

from __future__ import annotations

import copy
import functools
import random
from typing import Any

import numpy as np
import pytest
import torch

from docket.core.tiny_models import ascii_tokenizer
from docket.methods.anomaly.baselines import Encoder, pyod_scores, random_scores
from docket.methods.anomaly.dispat import DiSPaT, LMConfig, SelfPlayConfig, TableLM
from docket.methods.anomaly.serialize import Column, permutations
from docket.methods.anomaly.tiny_lm import sample_texts

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
    assert round_["generated"] == 3 * 4 and np.isfinite(round_["bound_last"])
    if variant == "implicit":  # π_θ = π_t at the start: T ≡ 0, the bound 0, no better than chance
        assert (round_["eval_bound_start"], round_["eval_accuracy_start"]) == (0.0, 0.5)
    scores = detector.score(rows(5, seed=2))
    assert scores.shape == (5,) and np.all(np.isfinite(scores))


def test_check_gives_the_bound_and_the_balanced_accuracy_of_a_known_case() -> None:
    detector = DiSPaT(COLUMNS, TINY, SelfPlayConfig(f="js"))
    real, fake = torch.tensor([1.0, 1.0]), torch.tensor([-1.0, 0.0, 0.0, 0.0])
    bound, accuracy = detector.check(real, fake)
    # JS: f'(1) = 0 and a(0) = 0, so the three zeros are ties (half each): (2 / 2 + 2.5 / 4) / 2
    assert accuracy == pytest.approx(0.8125, abs=1e-12)
    activation, conjugate = detector.fdiv.activation, detector.fdiv.conjugate
    expected = activation(real).mean() - conjugate(activation(fake)).mean()
    assert bound == pytest.approx(float(expected), abs=1e-7)


@functools.cache
def fine_tuned() -> DiSPaT:
    """AnoLLM's fine-tuning of a tiny model on 60 rows (copied, never changed, by the tests)."""
    config = LMConfig(hidden=32, layers=1, heads=2, steps=60, batch=8, score_permutations=2)
    detector = DiSPaT(COLUMNS, config)
    super(DiSPaT, detector).fit(rows(60))
    return detector


def played(variant: str, play_weight: float, steps: int) -> tuple[DiSPaT, Any, list[str]]:
    """One self-play round from a copy of `fine_tuned` (the same π_0 and row RNG each time);
    with a frozen copy of π_0 and 64 of its samples that no step saw (a seed of their own)."""
    detector = copy.deepcopy(fine_tuned())
    detector.play = SelfPlayConfig(variant=variant, iterations=1, samples=32, steps=steps,
                                   batch=8, critic_steps=50, play_weight=play_weight)  # fmt: skip
    start = copy.deepcopy(detector.model).eval()
    held_out_fake = sample_texts(start, detector.tokenizer, 64, 40, seed=12345)
    detector.self_play(rows(60))
    return detector, start, held_out_fake


def held_out_real(detector: DiSPaT) -> list[str]:
    """64 real rows no fit saw, in seeded column orders (the same texts after any round)."""
    orders = random.Random(7)
    return [detector.text(r, orders.sample(range(2), 2)) for r in rows(64, seed=99)]


def test_an_implicit_round_raises_the_bound_on_held_out_rows_and_self_play_causes_it() -> None:
    bounds = {}
    for play_weight in (1.0, 0.0):
        detector, start, fake = played("implicit", play_weight, steps=10)
        real = held_out_real(detector)
        # before the round π_θ = π_t, so T ≡ 0: the bound is exactly 0, the accuracy 0.5
        [round_] = detector.report.rounds
        assert (round_["eval_bound_start"], round_["eval_accuracy_start"]) == (0.0, 0.5)
        with torch.no_grad():
            bounds[play_weight] = detector.check(
                detector.implicit_critic(start, real), detector.implicit_critic(start, fake)
            )
    # measured 0.086 / 0.049 (accuracy 0.96 / 0.84)
    (on_bound, on_accuracy), (off_bound, _) = bounds[1.0], bounds[0.0]
    assert on_bound > 0.06 and on_accuracy > 0.8
    assert on_bound - off_bound > 0.02  # the anchor alone raises it far less


def test_a_variational_round_fools_its_fixed_critic_on_held_out_rows_and_self_play_causes_it() -> (
    None
):
    checks = {}
    for play_weight in (1.0, 0.0):
        detector, start, fake_before = played("variational", play_weight, steps=30)
        fake_after = sample_texts(detector.model, detector.tokenizer, 64, 40, seed=12345)
        real = held_out_real(detector)
        with torch.no_grad():
            values = detector.critic_values(real)
            checks[play_weight] = [
                detector.check(values, detector.critic_values(fake))
                for fake in (fake_before, fake_after)
            ]
    # measured (bound, accuracy) before → after: on 0.184, 0.797 → 0.074, 0.641; off → 0.186, 0.797
    [(bound_0, accuracy_0), (bound_on, accuracy_on)] = checks[1.0]
    [same_start, (bound_off, accuracy_off)] = checks[0.0]
    assert same_start == (bound_0, accuracy_0)  # the same π_0 and critic either way
    assert accuracy_0 > 0.75 and accuracy_on < accuracy_0 - 0.08  # toward 0.5
    assert bound_on < bound_0 - 0.05 and bound_off > bound_0 - 0.02
    assert accuracy_off > accuracy_0 - 0.02


@pytest.mark.parametrize("variant", ["implicit", "variational"])
def test_every_step_samples_afresh_from_the_policy_its_objective_is_over(variant: str) -> None:
    play = SelfPlayConfig(variant=variant, iterations=1, samples=8, steps=3, batch=4,
                          critic_steps=5)  # fmt: skip
    detector = DiSPaT(COLUMNS, TINY, play)
    super(DiSPaT, detector).fit(rows(30))
    calls: list[tuple[str, int, float]] = []
    generate = detector.generate

    def recording(model: Any, n: int, max_new_tokens: int) -> list[str]:
        checksum = float(sum(p.detach().double().sum() for p in model.parameters()))
        calls.append(("policy" if model is detector.model else "frozen π_t", n, checksum))
        return generate(model, n, max_new_tokens)

    detector.generate = recording  # type: ignore[method-assign]
    detector.self_play(rows(30))
    per_step = calls[2:-1] if variant == "variational" else calls[1:]
    assert [(who, n) for who, n, _ in per_step] == (
        [("policy", 4)] * 3 if variant == "variational" else [("frozen π_t", 4)] * 3
    )
    checksums = [c for _, _, c in per_step]
    if variant == "variational":  # π_θ after 0, 1, 2 updates: three different policies
        assert len(set(checksums)) == 3
    else:  # the round's opponent does not move
        assert len(set(checksums)) == 1 and checksums[0] == calls[0][2]


def test_without_rounds_dispat_is_anollm_and_with_them_its_scores_move() -> None:
    train, test = rows(40), rows(8, seed=5)
    anollm = TableLM(COLUMNS, TINY)
    anollm.fit(train)
    off = DiSPaT(COLUMNS, TINY, SelfPlayConfig(iterations=0))
    off.fit(train)
    np.testing.assert_array_equal(off.score(test), anollm.score(test))
    on = DiSPaT(COLUMNS, TINY, SelfPlayConfig(iterations=1, samples=8, steps=5, batch=4))
    on.fit(train)
    assert np.abs(on.score(test) - anollm.score(test)).max() > 0.05


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
