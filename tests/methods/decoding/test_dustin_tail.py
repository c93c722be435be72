"""Dustin's tail samples: a stratified, count-weighted sample of the entries a sparse round
does not select, as an estimate of their attention (`tail_samples`)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from docket.methods.decoding.dustin.algorithm import DustinDecoder, stratified_tail
from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
from tests.methods.decoding.dustin_support import decode


def test_one_sample_per_stratum_of_the_unselected_positions() -> None:
    selected = torch.tensor([[0, 1, 2, 3, 40, 41, 90, 99], [0, 1, 2, 3, 10, 50, 60, 98]])
    generator = torch.Generator().manual_seed(3)
    sampled, bias = stratified_tail(selected, 100, 23, generator)
    assert sampled.shape == (2, 23)
    # each sample stands for the 4 entries of its stratum
    assert torch.allclose(bias, torch.full((2, 23), -math.log(23 / 92)))
    for row, taken in zip(sampled.tolist(), selected.tolist(), strict=True):
        assert not set(row) & set(taken)
        rest = [p for p in range(100) if p not in taken]
        strata = [rest.index(p) // 4 for p in row]
        assert strata == list(range(23))  # one in each stratum of 4, in order


def test_as_many_samples_as_the_rest_read_it_all_unweighted() -> None:
    selected = torch.tensor([[0, 5, 9]])
    sampled, bias = stratified_tail(selected, 10, 64, torch.Generator().manual_seed(0))
    assert sorted(sampled[0].tolist()) == [1, 2, 3, 4, 6, 7, 8]
    assert torch.allclose(bias, torch.zeros(1, 7), atol=1e-6)


def test_score_proposal_samples_by_score_and_stays_unbiased() -> None:
    """With a score proposal, high-scored positions are drawn more often, each weighted by
    1 / (count · density) (the exponential of its bias): the weighted sum of any function
    over the samples is, on average, its sum over the unselected positions (4,000 draws)."""
    context, count = 60, 6
    selected = torch.tensor([[0, 1, 58, 59]])
    proposal = torch.zeros(1, context)
    proposal[0, 30:34] = 10.0  # four positions hold almost all of the score
    values = torch.linspace(0.0, 3.0, context) ** 2
    values[30:34] = 40.0
    generator = torch.Generator().manual_seed(4)
    totals, hits = [], 0
    for _ in range(4000):
        sampled, bias = stratified_tail(selected, context, count, generator, proposal)
        assert not set(sampled[0].tolist()) & {0, 1, 58, 59}
        totals.append(float((torch.exp(bias[0]) * values[sampled[0]]).sum()))
        hits += int(((sampled[0] >= 30) & (sampled[0] < 34)).sum())
    truth = float(values[2:58].sum())
    assert sum(totals) / len(totals) == pytest.approx(truth, rel=0.02)
    # half the density sits on the four scored positions: about half the samples are there
    assert hits / (4000 * count) == pytest.approx(0.5 + 0.5 * 4 / 56, abs=0.02)


def _attention(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, bias: Any = None
) -> torch.Tensor:
    mask = None if bias is None else bias[None, None, None]
    return torch.nn.functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask)


def test_weighted_samples_are_exact_where_each_stratum_is_flat_and_estimate_otherwise() -> None:
    """Where the unselected keys and values are equal within each stratum, the selected entries
    plus one weighted sample per stratum give exactly the attention over the whole cache; on
    random keys the estimate is closer to it than the selected entries alone."""
    torch.manual_seed(0)
    dim, context = 8, 64
    selected = torch.tensor([[0, 1, 2, 3, 20, 45, 62, 63]])
    rest = [p for p in range(context) if p not in selected[0].tolist()]  # 56: 8 strata of 7
    keys, values = torch.randn(1, 1, context, dim), torch.randn(1, 1, context, dim)
    for stratum in range(8):
        members = rest[stratum * 7 : (stratum + 1) * 7]
        keys[0, 0, members] = torch.randn(dim)
        values[0, 0, members] = torch.randn(dim)
    query = torch.randn(1, 1, 2, dim)
    exact = _attention(query, keys, values)
    sampled, bias = stratified_tail(selected, context, 8, torch.Generator().manual_seed(1))
    read = torch.cat([selected, sampled], dim=1)[0]
    weights = torch.cat([torch.zeros(8), bias[0]])
    estimate = _attention(query, keys[:, :, read], values[:, :, read], weights)
    assert torch.allclose(estimate, exact, atol=1e-5)

    # random keys: over many draws, weighted samples beat dropping the tail
    keys, values = torch.randn(1, 1, context, dim) * 0.5, torch.randn(1, 1, context, dim)
    exact = _attention(query, keys, values)
    dropped = _attention(query, keys[:, :, selected[0]], values[:, :, selected[0]])
    generator = torch.Generator().manual_seed(2)
    errors = []
    for _ in range(50):
        sampled, bias = stratified_tail(selected, context, 8, generator)
        read = torch.cat([selected, sampled], dim=1)[0]
        weights = torch.cat([torch.zeros(8), bias[0]])
        estimate = _attention(query, keys[:, :, read], values[:, :, read], weights)
        errors.append(float((estimate - exact).norm()))
    assert sum(errors) / len(errors) < 0.8 * float((dropped - exact).norm())


def test_tail_samples_stay_dense_greedy_count_their_reads_and_change_the_sparse_pass(
    target: Any, prompt: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `tail_samples` the output is still the dense target's; each sparse round reads its
    16 samples beyond its 4 + 8 + 8 selected entries per layer (counted), and the sparse pass
    agrees with dense more often on the random target (the ablation: switched off, the
    checks fail more)."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4}
    dense, _ = decode(target, prompt, 40, verify="dense")
    off_out, off = decode(target, prompt, 40, **common)
    rounds: list[tuple[int, int]] = []
    count = DustinDecoder._count

    def recording(self: Any, trace: Any, reads: int, dense: int, q: int) -> None:
        if dense:  # a sparse round: `dense` is the context dense verification reads
            rounds.append((reads, dense))
        count(self, trace, reads, dense, q)

    monkeypatch.setattr(DustinDecoder, "_count", recording)
    on_out, on = decode(target, prompt, 40, tail_samples=16, **common)
    monkeypatch.undo()
    again_out, again = decode(target, prompt, 40, tail_samples=16, **common)
    assert on_out.token_ids == off_out.token_ids == dense.token_ids
    assert again_out.token_ids == on_out.token_ids and again.kv_read_sparse == on.kv_read_sparse
    assert on.check_accepted / on.checked > off.check_accepted / off.checked
    assert on.failed_checks < off.failed_checks
    assert len(rounds) == on.rounds - on.dense_checks > 0
    assert all(reads == min(context, 4 + 8 + 8 + 16) for reads, context in rounds)


def test_summaries_and_tail_samples_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        ExperimentalDustinSettings(summary_block=16, tail_samples=8)


@pytest.mark.parametrize("select_by", ["layer", "group"])
def test_samples_that_cover_the_rest_make_the_sparse_pass_dense(
    target: Any, prompt: list[int], select_by: str
) -> None:
    """Uniform samples as many as the unselected entries draw each of them once with bias 0,
    so every sparse round is attention over the whole cache: no check fails (per layer and per
    key-value group, whose biases are expanded to the group's query heads)."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4, "select_by": select_by}
    dense, _ = decode(target, prompt, 32, verify="dense")
    out, trace = decode(target, prompt, 32, tail_samples=4096, **common)
    _, cut = decode(target, prompt, 32, **common)
    assert out.token_ids == dense.token_ids
    assert trace.failed_checks == 0 and trace.check_accepted == trace.checked > 0
    assert cut.failed_checks > 0


def test_score_proposal_stays_dense_greedy_and_changes_the_sparse_pass(
    target: Any, prompt: list[int]
) -> None:
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4, "tail_samples": 16}
    dense, _ = decode(target, prompt, 40, verify="dense")
    uniform_out, uniform = decode(target, prompt, 40, **common)
    score_out, score = decode(target, prompt, 40, tail_proposal="score", **common)
    assert score_out.token_ids == uniform_out.token_ids == dense.token_ids
    assert score.check_accepted != uniform.check_accepted


def test_the_attention_function_weights_each_group_s_samples_by_its_bias() -> None:
    """A sparse round with samples is attention over the selected entries, the samples with
    their biases (each key-value group its own) and the new token: the same as sdpa with
    that additive mask (dropping the biases changes it)."""
    from docket.methods.decoding.dustin.algorithm import Round, dustin_attention, in_round

    class Module:
        layer_idx = 1
        num_key_value_groups = 2
        scaling = 0.5
        is_causal = True
        training = False

    torch.manual_seed(0)
    groups, heads, dim, cached = 2, 4, 8, 20
    keys, values = torch.randn(1, groups, cached + 1, dim), torch.randn(1, groups, cached + 1, dim)
    query = torch.randn(1, heads, 1, dim)
    rows = torch.tensor([[0, 5, 19, 2, 9], [1, 6, 18, 3, 12]]).repeat(2, 1)  # layers 0 and 1
    bias = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.5, 0.5], [2.0, -1.0]])
    state = Round("sparse", context=cached, selected=rows, groups=groups)
    state.sampled_from, state.sample_bias = 3, bias
    with in_round(state):
        out, _ = dustin_attention(Module(), query, keys, values, None, scaling=0.5)
    expected = []
    for head in range(heads):
        group = head // 2
        read = torch.cat([rows[2 + group], torch.tensor([cached])])
        additive = torch.cat([torch.zeros(3), bias[2 + group], torch.zeros(1)])
        scores = (query[0, head] @ keys[0, group, read].T) * 0.5 + additive
        expected.append(torch.softmax(scores, dim=-1) @ values[0, group, read])
    assert torch.allclose(out[0, 0], torch.cat(expected), atol=1e-5)


def test_tail_from_failure_samples_only_after_the_first_failed_check(
    target: Any, prompt: list[int]
) -> None:
    """With `tail_from=failure` the rounds before the first failed check are the plain
    selection's; after it, samples that cover the rest make every round exact, so exactly one
    check fails (the plain selection fails several)."""
    common = {"budget": 8, "sinks": 4, "recent": 8, "refresh": 4}
    dense, _ = decode(target, prompt, 40, verify="dense")
    _, off = decode(target, prompt, 40, **common)
    out, after = decode(target, prompt, 40, tail_samples=4096, tail_from="failure", **common)
    assert out.token_ids == dense.token_ids
    assert off.failed_checks > 1 and after.failed_checks == 1
