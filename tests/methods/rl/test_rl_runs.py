"""Per variant, a short seeded run on CPU improves reward over its start.

Each family is a small version of the runner's (single-digit addition; 3-4 letter words over
`abc` under 2 constraints), warm-started by 200 SFT steps on 30%-noisy demonstrations (sampled
reward about 0.2-0.4). Every variant then runs 30 updates (8 prompts × 8 samples, 2 epochs × 2
minibatches, lr 3e-4, seed 0). Reward is measured on 40 fixed training problems × 8 samples at
temperature 1 (320 draws, standard error ≈ 0.025) before and after; the documented tolerance:
a run must gain at least 0.02. ECHO runs with the verifier's reward here: with majority-vote
pseudo-labels on a start this weak, TTRL reinforces wrong majorities (measured in the README).
Slow-marked: the module's warm starts and six 30-update runs take minutes on 2 shared cores.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from docket.core.tiny_models import alphabet_tokenizer, tiny_llama
from docket.methods.rl.configs import HiRConfig, config_for
from docket.methods.rl.policy import HFPolicy
from docket.methods.rl.sft import WarmStart, warm_start
from docket.methods.rl.tasks.arith import ArithFamily
from docket.methods.rl.tasks.base import TaskFamily
from docket.methods.rl.tasks.constraints import ConstraintsFamily
from docket.methods.rl.trainer import evaluate, trainer_for

MARGIN = 0.02


def small(name: str) -> TaskFamily:
    family: TaskFamily = (
        ArithFamily(digits=1, digits_b=1, ops="+")
        if name == "arith"
        else ConstraintsFamily(letters="abc", lengths=(3, 4), most=2)
    )
    family.test_size = 30
    return family


@pytest.fixture(scope="module")
def warm() -> dict[str, tuple[TaskFamily, HFPolicy]]:
    started: dict[str, tuple[TaskFamily, HFPolicy]] = {}
    for name in ("arith", "constraints"):
        family = small(name)
        tokenizer = alphabet_tokenizer(family.alphabet)
        policy = HFPolicy(tiny_llama(tokenizer, seed=0), tokenizer)
        losses = warm_start(policy, family, WarmStart(steps=200, batch_size=32, seed=0))
        assert sum(losses[-20:]) < sum(losses[:20])  # the warm start learns
        started[name] = (family, policy)
    return started


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "task", "settings"),
    [
        ("grpo", "arith", {}),
        ("replay", "arith", {}),
        ("nsr", "arith", {}),
        ("stratified", "arith", {}),
        ("echo", "arith", {"echo_pseudo_labels": False}),
        ("hir", "constraints", {}),
    ],
)
def test_a_short_run_improves_reward(
    warm: dict[str, tuple[TaskFamily, HFPolicy]], variant: str, task: str, settings: dict[str, Any]
) -> None:
    family, start = warm[task]
    policy = HFPolicy(copy.deepcopy(start.model), start.tokenizer)
    probe = family.split("train", 40, seed=123)
    before = evaluate(policy, family, probe, samples=8, seed=5)
    cfg = config_for(
        variant, task=task, seed=0, steps=30, lr=3e-4, warmup_steps=2,
        eval_every=10**6, eval_size=30, **settings,
    )  # fmt: skip
    summary = trainer_for(policy, family, cfg).run(progress=False)
    after = evaluate(policy, family, probe, samples=8, seed=5)
    assert 0.1 < before < 0.6, before  # the warm start is sometimes right
    assert after >= before + MARGIN, (variant, before, after)
    assert summary["gen_tokens"] > 0 and summary["gen_rollouts"] > 0


@pytest.mark.slow
def test_replay_generates_less_than_on_policy(warm: dict[str, tuple[TaskFamily, HFPolicy]]) -> None:
    family, start = warm["arith"]
    costs = {}
    for variant in ("grpo", "replay"):
        policy = HFPolicy(copy.deepcopy(start.model), start.tokenizer)
        cfg = config_for(variant, task="arith", seed=0, steps=3, eval_every=10**6, eval_size=5)
        costs[variant] = trainer_for(policy, family, cfg).run(progress=False)["gen_rollouts"]
    # 8 prompts x 8 samples per update on-policy; replay generates 4 prompts x 8 per update
    assert costs == {"grpo": 3 * 64, "replay": 3 * 32}


def test_hir_needs_the_constraints_family() -> None:
    with pytest.raises(ValueError, match="hir needs --task constraints"):
        HiRConfig(task="arith").validate()
    with pytest.raises(ValueError, match="unknown variant 'ppo'"):
        config_for("ppo")


def test_policy_sampling_matches_scoring() -> None:
    family = small("arith")
    tokenizer = alphabet_tokenizer(family.alphabet)
    policy = HFPolicy(tiny_llama(tokenizer, seed=1), tokenizer)
    prompts = [policy.encode_prompt("3+4="), policy.encode_prompt("12+9=")]
    sampled = policy.sample(
        prompts, 3, max_new_tokens=4, generator=torch.Generator().manual_seed(0)
    )
    from docket.methods.rl.policy import pad_right

    ids, mask = pad_right(sampled.tokens, policy.pad_id)
    scored = policy.score([prompts[i] for i in sampled.prompt_index], ids, mask)
    for row, logps in enumerate(sampled.logps):
        assert scored.logp[row, : len(logps)].tolist() == pytest.approx(logps, abs=1e-5)
    assert policy.cost.rollouts == 6 and policy.cost.tokens == int(mask.sum())


@pytest.mark.slow
def test_replay_and_its_positive_weight_change_the_run(
    warm: dict[str, tuple[TaskFamily, HFPolicy]],
) -> None:
    """From one warm start and seed, 30 updates: replay (N 256 > B 64) trains other batches than
    GRPO, so the trained weights and the probe reward differ; weight 2 trains on batches richer in
    positives than the fresh rollouts (expected gap p(1-p)/(1+p) ≈ 0.13 at p ≈ 0.3, shrunk by
    sampling B of N without replacement), weight 1 on batches as rich as them (gap ≈ 0)."""
    family, start = warm["arith"]
    probe = family.split("train", 40, seed=123)
    results: dict[str, tuple[list[dict[str, Any]], float, torch.Tensor]] = {}
    for name, variant, weight in (
        ("grpo", "grpo", 2.0),
        ("w2", "replay", 2.0),
        ("w1", "replay", 1.0),
    ):
        policy = HFPolicy(copy.deepcopy(start.model), start.tokenizer)
        cfg = config_for(
            variant, task="arith", seed=0, steps=30, lr=3e-4, warmup_steps=2,
            eval_every=10**6, eval_size=30,
            **({"replay_positive_weight": weight} if variant == "replay" else {}),
        )  # fmt: skip
        records: list[dict[str, Any]] = []
        trainer_for(policy, family, cfg).run(progress=False, on_step=records.append)
        weights = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
        results[name] = (records, evaluate(policy, family, probe, samples=8, seed=5), weights)
    assert not torch.equal(results["grpo"][2], results["w2"][2])
    assert results["grpo"][1] != results["w2"][1]
    gaps = {
        name: sum(r["batch_reward"] - r["reward"] for r in results[name][0][5:]) / 25
        for name in ("w1", "w2")
    }
    assert gaps["w2"] > 0.05 and abs(gaps["w1"]) < 0.04 and gaps["w2"] > gaps["w1"] + 0.05, gaps
    late = results["w2"][0][-1]
    assert late["buffer"] == 256 and len(late["sampled_ages"]) == 64 and late["max_age"] > 0
