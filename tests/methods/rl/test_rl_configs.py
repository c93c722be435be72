"""One configuration class per variant (`configs.py`), dispatch by type, and outputs at the
defaults pinned to the values the flat `RLConfig` loop produced before the split.

The pinned values were recorded on the pre-split code (`RLConfig(variant=...)`, one `Trainer`
dispatching on the variant name) with the same warm start, seed, batch and one torch thread:
per update the training reward, the variant's own statistics, the mean loss and the cumulative
generation cost, then the sum of the trained weights and the final evaluation. Rewards, counts
and the evaluation are exact; the loss and the weights are float sums whose last digits depend
on the CPU's vector kernels (an AMD EPYC host gives losses up to 1e-5 and weight sums up to
3e-6 relative away from the recording host's), so they are compared to `LOSS_ABS` and
`WEIGHTS_REL`.
"""

from __future__ import annotations

import copy
import runpy
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import torch

from docket.core.tiny_models import alphabet_tokenizer, tiny_llama
from docket.methods.rl.configs import (
    CONFIGS,
    VARIANTS,
    EchoConfig,
    GRPOConfig,
    HiRConfig,
    NSRConfig,
    ReplayConfig,
    StratifiedConfig,
    config_for,
)
from docket.methods.rl.policy import HFPolicy
from docket.methods.rl.sft import WarmStart, warm_start
from docket.methods.rl.tasks.arith import ArithFamily
from docket.methods.rl.tasks.base import TaskFamily
from docket.methods.rl.tasks.constraints import ConstraintsFamily
from docket.methods.rl.trainer import (
    EchoTrainer,
    HiRTrainer,
    NSRTrainer,
    ReplayTrainer,
    StratifiedTrainer,
    Trainer,
    trainer_class,
    trainer_for,
)

Step = dict[str, float]
#: Tolerances of the float sums (module docstring): the mean loss per update, the summed weights.
LOSS_ABS = 5e-5
WEIGHTS_REL = 1e-5

#: variant (and extra settings) -> (per update: stats, mean loss, cumulative cost), weight sum,
#: final evaluation; recorded on the flat-`RLConfig` code before the split
PINNED: dict[str, tuple[list[Step], float, Step]] = {
    "grpo": (
        [
            {"reward": 0.125, "loss": -0.056043025106191635, "gen_rollouts": 16, "gen_tokens": 52},
            {"reward": 0.0625, "loss": 0.024143246933817863, "gen_rollouts": 32, "gen_tokens": 97},
        ],
        316.2192948277998,
        {"eval_greedy": 0.25, "eval_sampled": 0.0},
    ),
    "replay": (
        [
            {
                "reward": 0.125,
                "batch_reward": 0.125,
                "loss": -0.05626238323748112,
                "gen_rollouts": 16,
                "gen_tokens": 52,
            },
            {
                "reward": 0.0625,
                "batch_reward": 0.1875,
                "loss": -0.30199925042688847,
                "gen_rollouts": 32,
                "gen_tokens": 97,
            },
        ],
        316.13309298494096,
        {"eval_greedy": 0.25, "eval_sampled": 0.0},
    ),
    "replay-asymre": (
        [
            {
                "reward": 0.125,
                "batch_reward": 0.125,
                "loss": 0.1233811336569488,
                "gen_rollouts": 16,
                "gen_tokens": 52,
            },
            {
                "reward": 0.0625,
                "batch_reward": 0.1875,
                "loss": 0.053424579091370106,
                "gen_rollouts": 32,
                "gen_tokens": 95,
            },
        ],
        316.4860715272175,
        {"eval_greedy": 0.25, "eval_sampled": 0.0},
    ),
    "nsr": (
        [
            {"reward": 0.125, "loss": -0.02661768812686205, "gen_rollouts": 16, "gen_tokens": 52},
            {"reward": 0.0625, "loss": 0.020548148080706596, "gen_rollouts": 32, "gen_tokens": 97},
        ],
        316.10821766336176,
        {"eval_greedy": 0.25, "eval_sampled": 0.0},
    ),
    "stratified": (
        [
            {
                "reward": 0.125,
                "strata": 4.0,
                "loss": -0.009137026965618134,
                "gen_rollouts": 16,
                "gen_tokens": 52,
            },
            {
                "reward": 0.0625,
                "strata": 4.0,
                "loss": -0.015587493777275085,
                "gen_rollouts": 32,
                "gen_tokens": 95,
            },
        ],
        316.16599259859777,
        {"eval_greedy": 0.25, "eval_sampled": 0.0},
    ),
    "echo": (
        [
            {
                "reward": 0.125,
                "pseudo_reward": 0.3125,
                "branch_points": 8.0,
                "loss": 0.044286368414759636,
                "gen_rollouts": 28,
                "gen_tokens": 47,
            },
            {
                "reward": 0.1875,
                "pseudo_reward": 0.375,
                "branch_points": 7.0,
                "loss": 0.021591022610664368,
                "gen_rollouts": 53,
                "gen_tokens": 84,
            },
        ],
        316.32032863080167,
        {"eval_greedy": 0.0, "eval_sampled": 0.0},
    ),
    "hir": (
        [
            {
                "reward": 0.1875,
                "hindsight": 8.0,
                "loss": 0.03401748137548566,
                "gen_rollouts": 16,
                "gen_tokens": 74,
            },
            {
                "reward": 0.1875,
                "hindsight": 6.0,
                "loss": 0.019601419800892472,
                "gen_rollouts": 32,
                "gen_tokens": 148,
            },
        ],
        273.2964200405877,
        {"eval_greedy": 0.0, "eval_sampled": 0.0},
    ),
}
RUNS = [
    ("grpo", "grpo", "arith", {}),
    ("replay", "replay", "arith", {}),
    ("replay-asymre", "replay", "arith", {"replay_loss": "asymre"}),
    ("nsr", "nsr", "arith", {}),
    ("stratified", "stratified", "arith", {}),
    ("echo", "echo", "arith", {}),
    ("hir", "hir", "constraints", {}),
]


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def warm(one_thread: None) -> dict[str, tuple[TaskFamily, HFPolicy]]:
    started: dict[str, tuple[TaskFamily, HFPolicy]] = {}
    for name in ("arith", "constraints"):
        family: TaskFamily = (
            ArithFamily(digits=1, digits_b=1, ops="+")
            if name == "arith"
            else ConstraintsFamily(letters="abc", lengths=(3, 4), most=2)
        )
        family.test_size = 30
        tokenizer = alphabet_tokenizer(family.alphabet)
        policy = HFPolicy(tiny_llama(tokenizer, seed=0), tokenizer)
        warm_start(policy, family, WarmStart(steps=120, batch_size=32, seed=0))
        started[name] = (family, policy)
    return started


@pytest.mark.slow
@pytest.mark.parametrize(("name", "variant", "task", "extra"), RUNS)
def test_outputs_at_the_defaults_equal_the_flat_config_loop(
    warm: dict[str, tuple[TaskFamily, HFPolicy]],
    name: str,
    variant: str,
    task: str,
    extra: dict[str, Any],
) -> None:
    family, start = warm[task]
    policy = HFPolicy(copy.deepcopy(start.model), start.tokenizer)
    cfg = config_for(
        variant, task=task, seed=0, steps=2, prompts_per_step=4, group_size=4, lr=3e-4,
        warmup_steps=1, eval_every=10**6, eval_size=4, eval_samples=1, **extra,
    )  # fmt: skip
    records: list[dict[str, Any]] = []
    summary = trainer_for(policy, family, cfg).run(progress=False, on_step=records.append)
    steps, weights, final = PINNED[name]
    for record, pinned in zip(records, steps, strict=True):
        exact = {k: v for k, v in pinned.items() if k != "loss"}
        assert {k: record[k] for k in exact} == pytest.approx(exact, rel=1e-6, abs=1e-9)
        if "loss" in pinned:
            assert record["loss"] == pytest.approx(pinned["loss"], abs=LOSS_ABS)
    total = sum(float(p.detach().double().sum()) for p in policy.model.parameters())
    assert total == pytest.approx(weights, rel=WEIGHTS_REL)
    assert summary["final_eval"] == final
    assert ("replay" in summary) == (variant == "replay")


def test_one_class_per_variant_holding_only_its_own_knobs() -> None:
    assert VARIANTS == ("grpo", "replay", "nsr", "stratified", "echo", "hir")
    shared = {f.name for f in fields(GRPOConfig)}
    assert len(shared) == 17
    own = {v: {f.name for f in fields(c)} - shared for v, c in CONFIGS.items()}
    assert own == {
        "grpo": set(),
        "replay": {"replay_fresh_prompts", "replay_capacity", "replay_positive_weight",
                   "replay_loss", "asymre_offset"},
        "nsr": {"nsr_variant_high", "nsr_variant_low", "nsr_u_min_high", "nsr_u_min_low"},
        "stratified": {"san_alpha"},
        "echo": {"echo_tree", "echo_pseudo_labels", "echo_mult", "echo_add",
                 "echo_adaptive_clip", "echo_eps_min", "echo_eps_max", "echo_kappa",
                 "echo_conf_k", "echo_conf_norm", "echo_tail_window", "tree"},
        "hir": {"hir_k", "hir_lam0", "hir_growth", "hir_placement"},
    }  # fmt: skip
    assert all(issubclass(c, GRPOConfig) for c in CONFIGS.values())
    assert ReplayConfig().as_dict()["variant"] == "replay"
    assert HiRConfig().task == "constraints" and GRPOConfig().task == "arith"


def test_dispatch_is_by_type() -> None:
    assert trainer_class(GRPOConfig()) is Trainer
    assert trainer_class(ReplayConfig()) is ReplayTrainer
    assert trainer_class(NSRConfig()) is NSRTrainer
    assert trainer_class(StratifiedConfig()) is StratifiedTrainer
    assert trainer_class(EchoConfig()) is EchoTrainer
    assert trainer_class(HiRConfig()) is HiRTrainer

    class LongerReplay(ReplayConfig):  # an experiment in a subclass runs the variant's trainer
        pass

    assert trainer_class(LongerReplay()) is ReplayTrainer
    for variant in VARIANTS:
        assert type(config_for(variant, task="constraints")) is CONFIGS[variant]


def test_a_wrong_variant_setting_or_trainer_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown variant 'ppo' \(accepted: grpo, replay"):
        config_for("ppo")
    with pytest.raises(ValueError, match="setting echo_mult belongs to variant echo, not nsr"):
        config_for("nsr", echo_mult=0.2)
    with pytest.raises(ValueError, match="unknown setting 'mult' for variant echo; accepted:"):
        config_for("echo", mult=0.2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'san_alpha'"):
        NSRConfig(san_alpha=0.5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="steps must be at least 1"):
        config_for("stratified", steps=0)
    family = ArithFamily(digits=1, digits_b=1, ops="+")
    tokenizer = alphabet_tokenizer(family.alphabet)
    policy = HFPolicy(tiny_llama(tokenizer, seed=0), tokenizer)
    with pytest.raises(TypeError, match="ReplayConfig .variant replay. runs with ReplayTrainer"):
        Trainer(policy, family, ReplayConfig())


def test_the_runner_builds_the_variants_class_and_refuses_the_wrong_settings() -> None:
    runner = runpy.run_path(str(Path(__file__).parents[3] / "methods/rl/scripts/run.py"))

    def build(*argv: str) -> Any:
        return runner["config_from"](runner["parse"](["--out", "unused", *argv]))

    cfg = build("--variant", "echo", "--set", "echo_mult=0.3", "--tree", "max_branches=2")
    assert type(cfg) is EchoConfig and cfg.echo_mult == 0.3 and cfg.tree.max_branches == 2
    assert type(build("--variant", "hir")) is HiRConfig  # the constraints task by default
    assert build("--variant", "replay", "--steps", "7").as_dict()["steps"] == 7
    with pytest.raises(ValueError, match="setting echo_mult belongs to variant echo, not nsr"):
        build("--variant", "nsr", "--set", "echo_mult=0.2")
    with pytest.raises(ValueError, match="--tree sets ECHO's tree; variant grpo has none"):
        build("--variant", "grpo", "--tree", "max_branches=2")
    with pytest.raises(ValueError, match="variant hir needs --task constraints"):
        build("--variant", "hir", "--task", "arith")
