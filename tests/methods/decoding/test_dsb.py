"""DSB: the schedule and transfer rule as pure functions, and the decoding loop's invariants on a
small random mask predictor: every answer position ends unmasked, nothing outside the window is
ever unmasked and the window stays within S_max; tau 1 with S_max 1 is left-to-right decoding;
forced block boundaries give the naive schedule; the cache with a full prefix window and a
refresh every step gives the same tokens; NFE counts global and window forwards; temperature 0
is deterministic."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from docket.core.jsonl import parse_lines
from docket.methods.decoding.dsb.algorithm import (
    UNBOUNDED,
    DSBSettings,
    DSBTrace,
    ToyMaskedLM,
    dsb_window,
    first_masked,
    generate,
    naive_window,
    quota_plan,
    transfer,
)
from docket.methods.decoding.dsb.toy_mdlm.model import ToyConfig, ToyMaskPredictor, init_weights
from docket.methods.local.settings import parse_settings

PROMPT = [5, 6, 7, 8, 9]
VOCAB = 40
MASK = 1
EOS = 0


@pytest.fixture(scope="module")
def model() -> ToyMaskedLM:
    """A random 2-layer mask predictor: confidences are spread, so schedules differ."""
    config = ToyConfig(
        vocab_size=VOCAB,
        mask_token_id=MASK,
        eos_token_id=EOS,
        hidden=32,
        layers=2,
        heads=2,
        mlp=64,
        max_length=128,
    )
    net = ToyMaskPredictor(config)
    init_weights(net, seed=3)
    with torch.no_grad():  # a wider init than training's: varied tokens and confidences
        for weight in net.parameters():
            if weight.dim() >= 2:
                weight.mul_(20)
    net.eval()
    return ToyMaskedLM(net, MASK)


# --- pure functions -----------------------------------------------------------------------------


def test_first_masked_and_windows_on_a_known_state() -> None:
    masked = [False] * 5 + [False, False, True, False, True, True, True, True]
    assert first_masked(masked, 5, 13) == 7
    assert first_masked(masked, 5, 7) == 7  # none before the end: the end
    # 3 tokens unmasked (positions 5, 6, 8): s = 7, e = P + S_init + U = 5 + 4 + 3
    assert dsb_window(masked, 5, 3, 4, UNBOUNDED, previous_end=9) == (7, 12)
    assert dsb_window(masked, 5, 3, 4, 2, previous_end=9) == (7, 9)  # const: s + S_max
    assert naive_window(masked, 5, 4) == (5, 9)
    assert naive_window([False] * 5 + [False] * 4 + [True] * 4, 5, 4) == (9, 13)
    assert naive_window([False] * 9, 5, 4) == (9, 9)


def test_window_end_never_passes_the_sequence() -> None:
    masked = [False] * 3 + [True] * 4
    assert dsb_window(masked, 3, 0, 32, UNBOUNDED, previous_end=35) == (3, 7)


def test_transfer_takes_confident_positions_and_the_best_one() -> None:
    # confidences: softmax of [a, 0, 0] = e^a / (e^a + 2)
    logits = torch.tensor([[4.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 9.0, 0.0], [0.0, 0.0, 2.0]])
    eligible = torch.tensor([True, True, False, True])
    step = transfer(logits, eligible, threshold=0.9)
    expected = [math.exp(4) / (math.exp(4) + 2), math.exp(1) / (math.exp(1) + 2)]
    assert step.proposals.tolist() == [0, 0, 1, 2]
    assert step.confidence[0].item() == pytest.approx(expected[0], abs=1e-12)
    assert step.confidence[1].item() == pytest.approx(expected[1], abs=1e-12)
    assert step.chosen.tolist() == [True, False, False, False]  # 0.965 >= 0.9; 9.0 not eligible
    low = transfer(logits, torch.tensor([False, True, False, True]), threshold=0.99)
    assert low.chosen.tolist() == [False, False, False, True]  # none confident: the best one
    none = transfer(logits, torch.zeros(4, dtype=torch.bool), threshold=0.5)
    assert not none.chosen.any()
    everything = transfer(logits, eligible, threshold=0.0)
    assert everything.chosen.tolist() == [True, True, False, True]


def test_transfer_by_quota_takes_the_most_confident_eligible_positions() -> None:
    logits = torch.tensor([[4.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 9.0, 0.0], [0.0, 0.0, 2.0]])
    eligible = torch.tensor([True, True, False, True])
    # confidences 0.965, 0.576, (0.9998 not eligible), 0.787
    assert transfer(logits, eligible, None, quota=1).chosen.tolist() == [
        True, False, False, False
    ]  # fmt: skip
    assert transfer(logits, eligible, None, quota=2).chosen.tolist() == [
        True, False, False, True
    ]  # fmt: skip
    assert transfer(logits, eligible, None, quota=9).chosen.tolist() == [
        True, True, False, True
    ]  # fmt: skip
    assert not transfer(logits, eligible, None, quota=0).chosen.any()
    for threshold, quota in ((None, None), (0.9, 1)):
        with pytest.raises(ValueError, match="threshold or a quota"):
            transfer(logits, eligible, threshold, quota=quota)


def test_quota_plan_spreads_the_remainder_over_the_first_steps() -> None:
    assert quota_plan(10, 4) == [3, 3, 2, 2]
    assert quota_plan(8, 8) == [1] * 8
    assert quota_plan(3, 5) == [1, 1, 1, 0, 0]
    with pytest.raises(ValueError):
        quota_plan(3, 0)


def test_transfer_sampling_is_seeded() -> None:
    logits = torch.zeros(6, 10)
    draws = [
        transfer(
            logits, torch.ones(6, dtype=torch.bool), 0.9, 1.0, torch.Generator().manual_seed(7)
        )
        for _ in range(2)
    ]
    assert torch.equal(draws[0].proposals, draws[1].proposals)
    assert len(set(draws[0].proposals.tolist())) > 1


@given(
    st.integers(1, 6),
    st.integers(1, 20),
    st.sampled_from(["dsb", "dsb_const"]),
    st.lists(st.lists(st.booleans(), min_size=8, max_size=8), min_size=40, max_size=40),
)
def test_dsb_windows_keep_their_bounds(
    block: int, length: int, schedule: str, draws: list[list[bool]]
) -> None:
    """Simulated with arbitrary transfers: the window holds exactly min(S_init, remaining)
    masked positions (greedy) or at most S_max positions (const), and never goes backwards."""
    prompt = 3
    masked = [False] * prompt + [True] * length
    unmasked, end, previous_s = 0, prompt + block, prompt
    bound = block if schedule == "dsb_const" else UNBOUNDED
    for draw in draws:
        if unmasked == length:
            break
        s, end = dsb_window(masked, prompt, unmasked, block, bound, end)
        assert s >= previous_s and s < end <= len(masked)
        assert all(not m for m in masked[prompt:s])
        assert not any(masked[p] is False and p >= end for p in range(end, len(masked)))
        inside = [p for p in range(s, end) if masked[p]]
        if schedule == "dsb":
            assert len(inside) == min(block, length - unmasked)
        else:
            assert end - s <= block
        chosen = [p for p, take in zip(inside, draw, strict=False) if take] or inside[:1]
        for p in chosen:
            masked[p] = False
        unmasked += len(chosen)
        previous_s = s


# --- the decoding loop --------------------------------------------------------------------------


def run(model: ToyMaskedLM, **settings: Any) -> tuple[list[int], DSBTrace]:
    result = generate(model, PROMPT, DSBSettings(**settings))
    return result.tokens, result.trace


@pytest.mark.parametrize("schedule", ["dsb", "dsb_const", "naive"])
@pytest.mark.parametrize("cache", ["none", "dsb"])
def test_every_position_is_unmasked_once_inside_its_window(
    model: ToyMaskedLM, schedule: str, cache: str
) -> None:
    tokens, trace = run(
        model,
        schedule=schedule,
        cache=cache,
        block_length=4,
        gen_length=16,
        threshold=0.3,
        prefix_window=2,
    )
    assert MASK not in tokens and len(tokens) == 16
    seen: list[int] = []
    for _, s, e, positions in trace.steps:
        assert all(s <= p < e for p in positions)
        if schedule == "dsb_const":
            assert e - s <= 4
        seen.extend(positions)
    assert sorted(seen) == list(range(len(PROMPT), len(PROMPT) + 16))
    assert trace.nfe == trace.global_forwards + trace.window_forwards == len(trace.steps)


def test_threshold_one_with_window_one_is_left_to_right(model: ToyMaskedLM) -> None:
    tokens, trace = run(model, block_length=1, max_block_length=1, threshold=1.0, gen_length=10)
    order = [positions for _, _, _, positions in trace.steps]
    assert order == [(len(PROMPT) + i,) for i in range(10)]
    assert trace.nfe == 10
    # each token is the argmax at the first masked position given everything to its left
    ids = PROMPT + [MASK] * 10
    with torch.no_grad():
        for i in range(10):
            logits, _ = model.full(torch.tensor(ids), use_cache=False)
            logits[:, MASK] = -math.inf  # the mask token is never proposed
            ids[len(PROMPT) + i] = int(logits[len(PROMPT) + i].argmax())
    assert tokens == ids[len(PROMPT) :]


@pytest.mark.parametrize(("steps", "per_step"), [(16, 1), (8, 2), (4, 4)])
def test_vanilla_naive_blocks_unmask_a_fixed_quota_per_step(
    model: ToyMaskedLM, steps: int, per_step: int
) -> None:
    """LLaDA's original decoder: no threshold, each block's tokens over steps / blocks."""
    tokens, trace = run(
        model, schedule="naive", block_length=4, threshold=None, steps=steps, gen_length=16
    )
    assert MASK not in tokens
    assert trace.nfe == steps
    for _, s, e, positions in trace.steps:
        assert len(positions) == per_step
        assert all(s <= p < e for p in positions) and e - s == 4


def test_dsb_with_a_quota_takes_it_from_each_window(model: ToyMaskedLM) -> None:
    """Greedy windows always hold S_init = 4 masked positions, so a quota of 2 spends exactly
    the 8 steps; const windows may hold fewer, and then take what they hold."""
    for schedule in ("dsb", "dsb_const"):
        tokens, trace = run(
            model, schedule=schedule, block_length=4, threshold=None, steps=8, gen_length=16
        )
        assert MASK not in tokens
        masked = set(range(len(PROMPT), len(PROMPT) + 16))
        for _, s, e, positions in trace.steps:
            assert len(positions) == min(2, len([p for p in masked if s <= p < e]))
            masked -= set(positions)
        if schedule == "dsb":
            assert trace.nfe == 8
    with pytest.raises(ValueError, match="steps >= 1"):
        run(model, threshold=None, steps=0, gen_length=8)


def test_steps_and_threshold_knobs_exclude_each_other() -> None:
    quota = parse_settings("dsb", DSBSettings, {"steps": 32})
    assert quota.threshold is None and quota.steps == 32
    assert parse_settings("dsb", DSBSettings, {}).threshold == 0.9
    with pytest.raises(ValueError, match="exclude each other"):
        parse_settings("dsb", DSBSettings, {"steps": 32, "threshold": 0.9})


def test_naive_blocks_are_recovered_when_every_window_is_decoded_at_once(
    model: ToyMaskedLM,
) -> None:
    dsb_tokens, dsb_trace = run(model, schedule="dsb", block_length=4, threshold=0.0, gen_length=16)
    naive_tokens, naive_trace = run(
        model, schedule="naive", block_length=4, threshold=0.0, gen_length=16
    )
    assert dsb_tokens == naive_tokens
    windows = [(s, e) for _, s, e, _ in dsb_trace.steps]
    assert windows == [(s, e) for _, s, e, _ in naive_trace.steps]
    assert windows == [(5 + 4 * k, 9 + 4 * k) for k in range(4)]
    assert dsb_trace.nfe == naive_trace.nfe == 4


def test_dsb_keeps_block_length_masked_positions_eligible(model: ToyMaskedLM) -> None:
    _, trace = run(model, schedule="dsb", block_length=4, threshold=0.3, gen_length=16)
    masked = set(range(5, 21))
    for _, s, e, positions in trace.steps:
        assert len([p for p in masked if s <= p < e]) == min(4, len(masked))
        masked -= set(positions)


@pytest.mark.parametrize("schedule", ["dsb", "dsb_const", "naive"])
@pytest.mark.parametrize("rule", [{"threshold": 0.3}, {"threshold": None, "steps": 8}])
def test_cache_with_full_windows_is_bit_identical_to_no_cache(
    model: ToyMaskedLM, schedule: str, rule: dict[str, Any]
) -> None:
    plain = generate(
        model, PROMPT, DSBSettings(schedule=schedule, block_length=4, gen_length=16, **rule)
    )
    full = DSBSettings(
        schedule=schedule,
        block_length=4,
        gen_length=16,
        **rule,
        cache="dsb",
        prefix_window=len(PROMPT) + 16,
        suffix_window=16,
    )
    cached = generate(model, PROMPT, full)
    assert cached.tokens == plain.tokens
    assert cached.logprobs == plain.logprobs  # the same logits, bit for bit
    assert cached.trace.nfe == plain.trace.nfe
    assert [s[1:] for s in cached.trace.steps] == [s[1:] for s in plain.trace.steps]
    assert cached.trace.window_forwards > 0
    every = generate(
        model,
        PROMPT,
        DSBSettings(**{**full.__dict__, "refresh": 1, "prefix_window": 0, "suffix_window": 0}),
    )
    assert every.tokens == plain.tokens and every.trace.window_forwards == 0


def test_cache_counts_global_and_window_forwards(model: ToyMaskedLM) -> None:
    result = generate(
        model,
        PROMPT,
        DSBSettings(block_length=4, gen_length=16, threshold=0.3, cache="dsb", prefix_window=2),
    )
    trace = result.trace
    kinds = [kind for kind, *_ in trace.steps]
    assert kinds[0] == "global"
    assert trace.global_forwards == kinds.count("global")
    assert trace.window_forwards == kinds.count("window")
    total = len(PROMPT) + 16
    window_sizes = trace.processed_tokens - trace.global_forwards * total
    assert 0 < window_sizes < trace.window_forwards * total  # windows are partial
    # a refresh after every S_init newly unmasked tokens: never more tokens between refreshes
    unmasked = 0
    for kind, _, _, positions in trace.steps:
        if kind == "global":
            unmasked = 0
        else:
            assert unmasked < 4
        unmasked += len(positions)


def test_decoding_is_deterministic_at_temperature_zero(model: ToyMaskedLM) -> None:
    first = generate(model, PROMPT, DSBSettings(block_length=4, gen_length=12))
    second = generate(model, PROMPT, DSBSettings(block_length=4, gen_length=12))
    assert first.tokens == second.tokens and first.trace.steps == second.trace.steps
    seeded = [
        generate(model, PROMPT, DSBSettings(block_length=4, gen_length=12, temperature=1.0, seed=4))
        for _ in range(2)
    ]
    assert seeded[0].tokens == seeded[1].tokens


def test_interruption_stops_before_the_next_forward(model: ToyMaskedLM) -> None:
    from docket.methods.local.sampling import GenerationInterrupted

    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(GenerationInterrupted):
        generate(model, PROMPT, DSBSettings(block_length=1, gen_length=12), stop)
    assert len(calls) == 3


def test_evaluate_with_a_preamble_decodes_longer_prompts(
    toy_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import runpy

    from docket.methods.decoding.dsb.toy_mdlm import data

    script = Path(__file__).parents[3] / "methods/decoding/scripts/evaluate_toy_mdlm.py"
    evaluate_main = runpy.run_path(str(script))["main"]
    shots = data.preamble(3)
    assert shots.count("\n> ") == 3 and shots.endswith("\n") and data.preamble(3) == shots
    args = ["--size", "2", "--gen-length", "8", "--only", "dsb", "dsb+cache"]
    evaluate_main([str(toy_dir), *args])
    evaluate_main([str(toy_dir), *args, "--preamble", "3"])
    rows = [row for _, row in parse_lines(capsys.readouterr().out.splitlines())]
    plain, long = rows[:2], rows[2:]
    for short_row, long_row in zip(plain, long, strict=True):
        assert long_row["mean_processed_tokens"] > short_row["mean_processed_tokens"]
