"""Dustin's settings split: `DustinSettings` (the paper's knobs and what users tune) and
`ExperimentalDustinSettings` (experiments only): the same outputs at defaults, the command
line's choice between them, and the experimental knobs `decay`, `candidate_block` and
`layer_share` each doing what its help says on a case with a known answer."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from docket.methods.decoding.dustin import plugin
from docket.methods.decoding.dustin.algorithm import (
    DustinDecoder,
    DustinTrace,
    decayed_history,
    make_self_draft,
)
from docket.methods.decoding.dustin.candidates import candidate_head_weights, candidate_keys_read
from docket.methods.decoding.dustin.experimental import (
    ExperimentalDustinSettings,
    experimental_knobs,
)
from docket.methods.decoding.dustin.settings import DustinSettings
from docket.methods.local.registry import find_plugin
from docket.methods.local.sampling import DecodeParams, Generation
from docket.methods.local.settings import knob_names, parse_settings
from tests.methods.decoding.dustin_support import EOS, greedy
from tests.methods.decoding.test_dustin_candidates import MODULE


def run(
    target: Any, prompt: list[int], settings: DustinSettings, params: DecodeParams, seed: int = 0
) -> tuple[Generation, DustinTrace, DustinDecoder]:
    """One generation with a 2-layer self-draft (a seeded generator when sampling)."""
    decoder = DustinDecoder(target, make_self_draft(target, 2), settings)
    rng = torch.Generator().manual_seed(seed) if params.temperature else None
    generation, trace = decoder.generate(prompt, params, {EOS}, str, rng)
    return generation, trace, decoder


def test_dustin_settings_hold_at_most_fifteen_knobs() -> None:
    plain, every = knob_names(DustinSettings), knob_names(ExperimentalDustinSettings)
    assert len(plain) == 11 <= 15
    assert every == plain + experimental_knobs() and len(experimental_knobs()) == 18
    assert {"successors", "layer_share", "candidate_block", "branches"} <= set(experimental_knobs())
    assert {"budget", "mix", "decay", "est_heads", "refresh"} <= set(plain)


@pytest.mark.parametrize(
    "knobs", [{}, {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4, "decay": 0.5}]
)
def test_plain_and_experimental_settings_decode_identically_at_defaults(
    target: Any, prompt: list[int], knobs: dict[str, Any]
) -> None:
    """Every token, logprob and counter is the same, greedy and sampled; greedy is also
    transformers' own greedy continuation."""
    greedy_params = DecodeParams(max_new_tokens=32, logprobs=True)
    sampled_params = DecodeParams(max_new_tokens=16, temperature=0.8)
    for params in (greedy_params, sampled_params):
        plain, plain_trace, _ = run(target, prompt, DustinSettings(**knobs), params, seed=5)
        ours, our_trace, _ = run(target, prompt, ExperimentalDustinSettings(**knobs), params, 5)
        assert ours.token_ids == plain.token_ids
        assert ours.steps == plain.steps
        assert our_trace == plain_trace and our_trace.rounds > 0
    greedy_out, _, _ = run(target, prompt, DustinSettings(**knobs), greedy_params)
    assert greedy_out.token_ids == greedy(target, prompt, 32)


def test_a_plain_decoder_runs_with_the_experiments_off() -> None:
    plain = DustinSettings(budget=8, mix=0.25)
    assert ExperimentalDustinSettings.of(plain) == ExperimentalDustinSettings(budget=8, mix=0.25)
    experimental = ExperimentalDustinSettings(successors=1)
    assert ExperimentalDustinSettings.of(experimental) is experimental


def test_an_experimental_knob_on_the_command_line_selects_the_experimental_settings(
    tiny_llama_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = find_plugin("dustin")
    assert found is not None
    assert set(found.args) == set(knob_names(ExperimentalDustinSettings))
    settings = ExperimentalDustinSettings
    plain = parse_settings("dustin", settings, {"budget": "8", "decay": "0.5"})
    assert type(plain) is DustinSettings and plain == DustinSettings(budget=8, decay=0.5)
    chosen = parse_settings("dustin", settings, {"budget": "8", "successors": "1"})
    assert chosen == ExperimentalDustinSettings(budget=8, successors=1)
    with pytest.raises(ValueError, match=r"^-M method=dustin: summary_block needs select_by"):
        parse_settings("dustin", settings, {"summary_block": "16", "select_by": "group"})

    from docket.methods.local.provider import LocalHFModelAPI

    built: list[DustinSettings] = []

    class Recording(DustinDecoder):
        def __init__(self, target: Any, draft: Any, settings: DustinSettings) -> None:
            built.append(settings)
            super().__init__(target, draft, settings)

    monkeypatch.setattr(plugin, "DustinDecoder", Recording)
    common: dict[str, Any] = {"path": str(tiny_llama_dir), "method": "dustin", "draft_layers": 2}
    LocalHFModelAPI("local", budget=8, **common)
    LocalHFModelAPI("local", budget=8, layer_share=0.5, **common)
    assert [type(s) for s in built] == [DustinSettings, ExperimentalDustinSettings]
    assert isinstance(built[1], ExperimentalDustinSettings) and built[1].layer_share == 0.5


def test_decay_is_the_weight_of_the_old_history_after_two_updates() -> None:
    """History [1, 0, 0]; a check's mass [0, 2, 0] (normalised [0, 1, 0]), then a longer
    cache's [0, 0, 3, 1] ([0, 0, 0.75, 0.25]): at decay 0.8 the EMA is [0.8, 0.2, 0], then
    [0.64, 0.16, 0.15, 0.05] (new positions start at 0)."""
    history = torch.tensor([[1.0, 0.0, 0.0]])
    once = decayed_history(history, torch.tensor([[0.0, 2.0, 0.0]]), 3, 0.8, 1)
    assert once[0].tolist() == pytest.approx([0.8, 0.2, 0.0])
    twice = decayed_history(once, torch.tensor([[0.0, 0.0, 3.0, 1.0]]), 4, 0.8, 1)
    assert twice[0].tolist() == pytest.approx([0.64, 0.16, 0.15, 0.05])
    assert torch.equal(decayed_history(history, torch.ones(1, 3), 3, 1.0, 1), history)
    fresh = decayed_history(history, torch.tensor([[0.0, 2.0, 0.0]]), 3, 0.0, 1)
    assert fresh.tolist() == [[0.0, 1.0, 0.0]]


def test_decay_one_keeps_the_prefill_history_through_every_check(
    target: Any, prompt: list[int]
) -> None:
    """A one-token generation ends at its first (final) check, so its history is the
    prefill's. At decay 1 the checks of a longer generation leave it as it was (positions
    after the prompt stay 0); at decay 0 the last refresh replaces it."""
    knobs: dict[str, Any] = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 2, "est_heads": 16}
    params = DecodeParams(max_new_tokens=24)
    _, _, first = run(target, prompt, DustinSettings(**knobs), DecodeParams(max_new_tokens=1))
    start = first.history.clone()
    width = start.shape[1]
    assert width == len(prompt) - 1 and bool((start.sum(dim=-1) > 0).all())
    _, trace, kept = run(target, prompt, DustinSettings(decay=1.0, **knobs), params)
    assert trace.dense_checks > 2 and kept.history.shape[1] > width
    assert torch.equal(kept.history[:, :width], start)
    assert not kept.history[:, width:].any()
    _, _, replaced = run(target, prompt, DustinSettings(decay=0.0, **knobs), params)
    assert replaced.history[:, width:].any()
    assert not torch.allclose(replaced.history[:, :width], start)
    assert torch.allclose(replaced.history.sum(dim=-1), torch.ones(4))


def test_candidate_block_sets_the_blocks_the_estimate_reads() -> None:
    """A key along the queries at position 137 among small noise: one candidate block of 8
    reads positions 136-143, one of 4 reads 136-139 (plus the sinks and the last queries)."""
    torch.manual_seed(2)
    direction = torch.randn(32)
    query = direction.repeat(1, 9, 8, 1) + 0.05 * torch.randn(1, 9, 8, 32)
    keys = 0.05 * torch.randn(1, 3, 200, 32)
    keys[0, :, 137] = 3 * direction
    for block, (first, last) in ((8, (136, 143)), (4, (136, 139))):
        weights = candidate_head_weights(MODULE, query, keys, [0, 4, 8], 192, block, block, 4)
        read = {tuple(torch.nonzero(weights[i, -1]).flatten().tolist()) for i in range(3)}
        assert read == {(0, 1, 2, 3, *range(first, last + 1), *range(192, 200))}


def test_candidate_block_sets_the_counted_estimate(
    target: Any, prompt: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefill's candidate estimate (32 candidates) reads 2 bound keys per block, the
    candidate blocks, 4 sinks and 8 queries: 151 prior positions are 10 blocks of 16 (64
    keys) or 19 blocks of 8 (82 keys); the output is dense greedy either way."""
    calls: list[int] = []
    count = DustinDecoder._count_estimation

    def recording(self: Any, trace: Any, keys: int, q: int, chosen: Any) -> None:
        calls.append(keys)
        count(self, trace, keys, q, chosen)

    monkeypatch.setattr(DustinDecoder, "_count_estimation", recording)
    knobs: dict[str, Any] = {
        "budget": 8,
        "sinks": 4,
        "recent": 8,
        "refresh": 4,
        "prefill_candidates": 32,
    }
    params = DecodeParams(max_new_tokens=16)
    first: list[int] = []
    for block, expected in ((16, 64), (8, 82)):
        calls.clear()
        settings = ExperimentalDustinSettings(candidate_block=block, **knobs)
        out, _, _ = run(target, prompt, settings, params)
        assert calls[0] == candidate_keys_read(len(prompt) - 9, 8, block, 32, 4) == expected
        assert out.token_ids == greedy(target, prompt, 16)
        first.append(calls[0])
    assert first[0] != first[1]


def test_layer_share_blends_each_layers_score_with_the_mean_in_the_decoder(target: Any) -> None:
    """Four layers' histories (mix 0, budget 1): layer 0 peaks at 2 (0.4) before 5 (0.35);
    the mean over layers peaks at 5 (0.3875). At share 0 each layer reads its own top; at 0.5
    layer 0 reads 5 (0.5 · 0.35 + 0.5 · 0.3875 > 0.5 · 0.4 + 0.5 · 0.1) while layer 3 keeps
    its 1 (0.5 + 0.125); at 1 every layer reads the mean's 5."""
    history = torch.tensor(
        [
            [0.0, 0.0, 0.4, 0.0, 0.0, 0.35, 0.0, 0.25],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.6, 0.4, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.6, 0.0, 0.4],
            [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )
    assert history.mean(dim=0).tolist() == pytest.approx(
        [0.0, 0.25, 0.1, 0.0, 0.0, 0.3875, 0.1, 0.1625]
    )
    draft = make_self_draft(target, 2)
    expected = {0.0: [2, 5, 5, 1], 0.5: [5, 5, 5, 1], 1.0: [5, 5, 5, 5]}
    for share, chosen in expected.items():
        settings = ExperimentalDustinSettings(
            budget=1, sinks=0, recent=0, mix=0.0, layer_share=share
        )
        decoder = DustinDecoder(target, draft, settings)
        decoder.history = history.clone()
        state, reads = decoder._select(8, torch.zeros(2, 8), 1)
        assert reads == 1 and state.selected is not None
        assert state.selected.flatten().tolist() == chosen
