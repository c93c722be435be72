"""The TRL adapter: docket's loss inside GRPOTrainer equals stock TRL and the pure function on a
fixed batch (loss and gradients), docket's GRPO advantages equal TRL's, and a short train()."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

trl = pytest.importorskip("trl")
from datasets import Dataset  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from docket.core.tiny_models import alphabet_tokenizer, tiny_llama  # noqa: E402
from docket.methods.rl.advantages import grpo_advantages  # noqa: E402
from docket.methods.rl.engines.trl_grpo import DocketRL, docket_grpo_trainer  # noqa: E402
from docket.methods.rl.losses import clipped_surrogate  # noqa: E402
from docket.methods.rl.metrics import read_metrics  # noqa: E402
from docket.methods.rl.policy import HFPolicy  # noqa: E402

AGGREGATION = {
    "grpo": "seq_mean_token_mean",
    "bnpo": "token_mean",
    "dr_grpo": "seq_mean_token_sum_norm",
}


def length_reward(prompts: list[str], completions: list[str], **_: Any) -> list[float | None]:
    return [float(len(c.strip())) for c in completions]


def dataset() -> Dataset:
    return Dataset.from_list([{"prompt": f"{a}+{b}="} for a in range(10) for b in range(4)])


def config(tmp_path: Path, loss_type: str, **extra: Any) -> GRPOConfig:
    return GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=8, num_generations=4,
        max_completion_length=4, max_steps=2, learning_rate=1e-3, report_to=[], use_cpu=True,
        bf16=False, save_strategy="no", loss_type=loss_type, beta=0.0, logging_steps=1,
        epsilon=0.2, epsilon_high=0.28, **extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    tokenizer = alphabet_tokenizer("0123456789+-=")
    return tiny_llama(tokenizer, seed=0), tokenizer


def fixed_inputs(tokenizer: Any) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    vocab = len(tokenizer)
    completion_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]])
    return {
        "prompt_ids": torch.randint(3, vocab, (4, 5), generator=gen),
        "prompt_mask": torch.tensor([[0, 1, 1, 1, 1]] + [[1] * 5] * 3),
        "completion_ids": torch.randint(3, vocab, (4, 4), generator=gen),
        "completion_mask": completion_mask,
        "advantages": torch.tensor([1.2, -0.7, 0.4, -0.9]),
        # behaviour log-probs off the current policy, so some ratios leave [0.8, 1.28]
        "old_per_token_logps": -3.9 + 0.6 * torch.randn(4, 4, generator=gen),
        "num_items_in_batch": completion_mask.sum(),
    }


def loss_and_grads(trainer: Any, inputs: dict[str, torch.Tensor]) -> tuple[float, list[Any]]:
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.zero_grad()
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    grads = [p.grad.clone() for p in trainer.model.parameters() if p.grad is not None]
    return float(loss.detach()), grads


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_docket_clip_equals_stock_trl_and_the_pure_function(
    tmp_path: Path, tiny: tuple[Any, Any], loss_type: str
) -> None:
    model, tokenizer = tiny
    inputs = fixed_inputs(tokenizer)
    stock = GRPOTrainer(
        model=copy.deepcopy(model), reward_funcs=[length_reward], args=config(tmp_path, loss_type),
        train_dataset=dataset(), processing_class=tokenizer,
    )  # fmt: skip
    ours = docket_grpo_trainer(
        model=copy.deepcopy(model), reward_funcs=[length_reward], args=config(tmp_path, loss_type),
        train_dataset=dataset(), processing_class=tokenizer, docket=DocketRL(loss="clip"),
    )  # fmt: skip
    stock_loss, stock_grads = loss_and_grads(stock, inputs)
    our_loss, our_grads = loss_and_grads(ours, inputs)
    assert our_loss == pytest.approx(stock_loss, rel=1e-5, abs=1e-7)
    assert len(our_grads) == len(stock_grads)
    for a, b in zip(our_grads, stock_grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)
    # the pure function on log-probs from a plain forward of the same weights
    plain = copy.deepcopy(model)
    scored = HFPolicy(plain, tokenizer).score(
        [
            row[m.bool()].tolist()
            for row, m in zip(inputs["prompt_ids"], inputs["prompt_mask"], strict=True)
        ],
        inputs["completion_ids"],
        inputs["completion_mask"],
    )
    mask = inputs["completion_mask"].float()
    pure = clipped_surrogate(
        scored.logp, inputs["old_per_token_logps"], inputs["advantages"], mask,
        eps_low=0.2, eps_high=0.28, aggregation=AGGREGATION.get(loss_type, "token_sum"), horizon=4,
    )  # fmt: skip
    expected = float(pure.loss)
    if loss_type == "dapo":  # TRL divides the token sum by the generation batch's token count
        steps_per_generation = config(tmp_path, loss_type).steps_per_generation
        assert steps_per_generation is not None
        expected /= float(inputs["num_items_in_batch"]) / steps_per_generation
    assert our_loss == pytest.approx(expected, rel=1e-4)
    assert pure.metrics["clip_frac"] > 0  # the batch exercises clipping


def test_docket_grpo_advantages_equal_trls(tmp_path: Path, tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    trainers: list[tuple[Callable[..., Any], dict[str, Any]]] = [
        (GRPOTrainer, {}),
        (docket_grpo_trainer, {"docket": DocketRL()}),
    ]
    for cls, extra in trainers:
        trainer = cls(
            model=copy.deepcopy(model), reward_funcs=[length_reward],
            args=config(tmp_path, "grpo", temperature=1.5), train_dataset=dataset(),
            processing_class=tokenizer, **extra,
        )  # fmt: skip
        torch.manual_seed(3)
        batch = [{"prompt": f"{a}+1="} for a in range(8)]
        output = trainer._generate_and_score_completions(batch)
        rewards = torch.tensor(list(trainer._logs["rewards"]["length_reward"])[-8:])
        groups = torch.arange(8) // 4
        docket = grpo_advantages(rewards, groups, eps=1e-4, unbiased=True)
        assert rewards.std() > 0
        assert torch.allclose(output["advantages"].cpu(), docket, atol=1e-6)


def test_a_short_trl_run_with_stratified_advantages_and_nsr(
    tmp_path: Path, tiny: tuple[Any, Any]
) -> None:
    model, tokenizer = tiny
    trainer = docket_grpo_trainer(
        model=copy.deepcopy(model), reward_funcs=[length_reward],
        args=config(tmp_path, "dapo", temperature=1.5), train_dataset=dataset(),
        processing_class=tokenizer,
        docket=DocketRL(advantage="stratified", loss="nsr", strata=lambda text: len(text) > 2),
        metrics=tmp_path / "metrics.jsonl",
    )  # fmt: skip
    trainer.train()
    logged = [row for row in trainer.state.log_history if "docket/rescue_frac" in row]
    assert len(logged) == 2
    assert all(0.0 <= row["docket/rescue_frac"] <= 1.0 for row in logged)
    written = [r for r in read_metrics(tmp_path / "metrics.jsonl") if "docket/rescue_frac" in r]
    assert [r["step"] for r in written] == [1, 2]
    assert [r["docket/rescue_frac"] for r in written] == [r["docket/rescue_frac"] for r in logged]


def test_an_echo_loss_step(tmp_path: Path, tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    trainer = docket_grpo_trainer(
        model=copy.deepcopy(model), reward_funcs=[length_reward], args=config(tmp_path, "bnpo"),
        train_dataset=dataset(), processing_class=tokenizer, docket=DocketRL(loss="echo"),
    )  # fmt: skip
    loss, grads = loss_and_grads(trainer, fixed_inputs(tokenizer))
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert trainer._metrics["train"]["docket/clip_eps_mean"]


def test_bad_settings_are_one_error() -> None:
    with pytest.raises(ValueError, match="strata callable"):
        DocketRL(advantage="stratified").validate()
    with pytest.raises(ValueError, match="loss must be one of"):
        DocketRL(loss="ppo").validate()
