"""HiR: candidate selection, the λ_t curriculum, instruction rewriting, replayed rows."""

from __future__ import annotations

import itertools

import pytest
import torch

from docket.methods.rl.batch import Rollouts
from docket.methods.rl.hir import (
    hindsight_rows,
    hir_lambda,
    replay_scores,
    rewrite_instruction,
    select_replay,
)

CLA = torch.tensor([1.0, 0.5, 0.0, 0.75, 0.25, 0.5])
ENTROPY = torch.tensor([3.0, 0.2, 5.0, 0.1, 1.0, 0.2])


def test_lambda_curriculum() -> None:
    assert hir_lambda(0) == 2.0
    assert hir_lambda(10) == pytest.approx(2.0 * 1.05**10)


def test_only_partial_failures_are_candidates_best_first_ties_by_index() -> None:
    picked = select_replay(CLA, ENTROPY, step=0, k=10)
    # rows 0 (CLA 1) and 2 (CLA 0) are never picked; F = H + 2·CLA:
    # row1 1.2, row3 1.6, row4 1.5, row5 1.2 -> 3, 4, then the tie 1 before 5
    assert picked.tolist() == [3, 4, 1, 5]
    assert select_replay(CLA, ENTROPY, step=0, k=2).tolist() == [3, 4]
    assert select_replay(CLA, ENTROPY, step=0, k=0).numel() == 0
    assert select_replay(torch.tensor([0.0, 1.0]), torch.ones(2), step=0, k=3).numel() == 0


def test_later_steps_weigh_integrity_over_diversity() -> None:
    cla = torch.tensor([0.2, 0.8])
    entropy = torch.tensor([3.0, 0.0])
    assert select_replay(cla, entropy, step=0, k=1).tolist() == [0]  # 3.4 vs 1.6
    assert select_replay(cla, entropy, step=60, k=1).tolist() == [1]  # λ ≈ 37


def test_selection_equals_brute_force_argmax_of_the_subset_score() -> None:
    gen = torch.Generator().manual_seed(0)
    for trial in range(20):
        cla = torch.randint(0, 5, (7,), generator=gen) / 4
        entropy = torch.rand(7, generator=gen)
        k = 1 + trial % 4
        picked = select_replay(cla, entropy, step=trial, k=k)
        candidates = [i for i in range(7) if 0 < cla[i] < 1]
        scores = replay_scores(cla, entropy, trial)
        best = max(
            itertools.combinations(candidates, min(k, len(candidates))),
            key=lambda subset: float(sum(scores[i] for i in subset)),
        )
        assert sorted(picked.tolist()) == sorted(best)


def test_rewrite_keeps_exactly_the_satisfied_constraints() -> None:
    def render(task: str, kept: list[str]) -> str:
        return f"{task} [{'; '.join(kept)}]"

    text = rewrite_instruction("write", ["a", "b", "c"], [True, False, True], render)
    assert text == "write [a; c]"
    with pytest.raises(ValueError, match="judgements"):
        rewrite_instruction("write", ["a"], [True, False], render)


def test_replayed_rows_keep_the_original_old_logprobs() -> None:
    batch = Rollouts(
        prompt_ids=[[1, 2], [1, 2], [3], [3]],
        completion_ids=torch.tensor([[5, 6], [7, 0], [8, 9], [5, 5]]),
        mask=torch.tensor([[1, 1], [1, 0], [1, 1], [1, 1]]),
        old_logp=torch.tensor([[-0.1, -0.2], [-0.3, 0.0], [-0.4, -0.5], [-0.6, -0.7]]),
        rewards=torch.tensor([0.0, 1.0, 0.0, 0.0]),
        groups=torch.tensor([0, 0, 1, 1]),
        is_replay=torch.zeros(4, dtype=torch.bool),
        strata=torch.zeros(4, dtype=torch.long),
        info=[{"id": i} for i in range(4)],
    )
    rows = hindsight_rows(batch, torch.tensor([2, 0]), [[3, 4], [1]])
    assert rows.prompt_ids == [[3, 4], [1]]
    assert torch.equal(rows.old_logp, batch.old_logp[[2, 0]])
    assert torch.equal(rows.completion_ids, batch.completion_ids[[2, 0]])
    assert rows.rewards.tolist() == [1.0, 1.0]
    assert rows.is_replay.tolist() == [True, True]
    assert rows.groups.tolist() == [1, 0]  # placement "group": the original prompt's group
    assert rows.info == [{"id": 2, "hindsight": True}, {"id": 0, "hindsight": True}]
    own = hindsight_rows(batch, torch.tensor([2, 0]), [[3, 4], [1]], placement="own")
    assert own.groups.tolist() == [2, 3]
