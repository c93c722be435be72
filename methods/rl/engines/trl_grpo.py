"""docket's advantages and policy losses inside TRL's `GRPOTrainer` (TRL pinned to 1.16.0).

`docket_grpo_trainer(...)` returns `DocketGRPOTrainer`, a `GRPOTrainer` subclass that keeps
TRL's generation, reward functions, batching, logging and optimisation, and swaps in:

- advantages (`DocketRL.advantage`): "trl" (unchanged), "grpo" (`grpo_advantages`, sample std
  and ε = 1e-4 as TRL's `scale_rewards="group"`) or "stratified" (`stratified_advantages`, strata
  from `DocketRL.strata`, a callable on each completion, gathered over processes);
- the policy loss (`DocketRL.loss`): "trl" (unchanged), "clip" (`clipped_surrogate`), "nsr"
  (`nsr_policy_loss`) or "echo" (`echo_policy_loss` on `hybrid_advantages`, entropy and actor
  confidence from the same forward pass, detached).

Both hooks are TRL's private API (`_calculate_rewards`, `_generate_and_score_completions`,
`_compute_loss`), hence the pin. The per-token loss is aggregated exactly as TRL aggregates its
`loss_type` (grpo, bnpo, dr_grpo, dapo), KL (`beta`) included, so with `loss="clip"` the loss
and its gradients equal stock TRL's (tested on a fixed batch). `metrics=PATH` writes every
logged record to a JSONL and swaps tqdm for TRL's rich progress bar.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..advantages import grpo_advantages, strata_from, stratified_advantages
from ..echo.shaping import echo_policy_loss, hybrid_advantages
from ..echo.signals import actor_confidence
from ..losses import PolicyLoss, clipped_surrogate
from ..metrics import MetricsLog
from ..nsr import nsr_policy_loss

TRL_VERSION = "1.16.0"
ADVANTAGES: tuple[str, ...] = ("trl", "grpo", "stratified")
LOSSES: tuple[str, ...] = ("trl", "clip", "nsr", "echo")
#: TRL loss types whose aggregation the docket path reproduces.
AGGREGATED: tuple[str, ...] = ("grpo", "bnpo", "dr_grpo", "dapo")


def completion_text(completion: Any) -> str:
    """A completion's text: the string itself, or a conversational completion's last content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return str(completion)


@dataclass
class DocketRL:
    """Which docket pieces the trainer uses, and their knobs."""

    advantage: str = "grpo"
    loss: str = "clip"
    strata: Callable[[str], Hashable] | None = None
    san_alpha: float = 1.0
    nsr_variant_high: str = "scaled"
    nsr_variant_low: str = "plain"
    nsr_u_min_high: float = 0.0
    nsr_u_min_low: float = 0.0
    echo_mult: float = 0.1
    echo_add: float = 0.0
    echo_conf_k: int = 5
    echo_conf_norm: str = "mass_topk"
    echo_eps_min: float = 0.05
    echo_eps_max: float = 0.2
    echo_kappa: float = 4.0
    echo_tail_window: int = 16
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}, got {self.advantage!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.advantage == "stratified" and self.strata is None:
            raise ValueError("advantage 'stratified' needs a strata callable")


def trl_aggregate(trainer: Any, per_token: Tensor, mask: Tensor, inputs: dict[str, Any]) -> Tensor:
    """Reduce a (B, T) loss exactly as `GRPOTrainer._compute_loss` reduces its `loss_type`
    (gradient-accumulation normalisation included)."""
    mode = "train" if trainer.model.training else "eval"
    accumulation = trainer.current_gradient_accumulation_steps if mode == "train" else 1.0
    kind = trainer.loss_type
    masked = per_token * mask
    if kind == "grpo":
        return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accumulation
    if kind == "bnpo":
        return masked.sum() / mask.sum().clamp(min=1.0) / accumulation
    if kind == "dr_grpo":
        return masked.sum() / (per_token.size(0) * trainer.max_completion_length) / accumulation
    if kind == "dapo":
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / trainer.accelerator.num_processes
        if mode == "train":
            normalizer = normalizer * accumulation / trainer.args.steps_per_generation
        return masked.sum() / normalizer
    raise ValueError(f"docket losses support TRL loss_type {AGGREGATED}, not {kind!r}")


def docket_grpo_trainer(
    *args: Any, docket: DocketRL | None = None, metrics: Path | None = None, **kwargs: Any
) -> Any:
    """A `DocketGRPOTrainer` (built lazily so importing docket does not import TRL).

    With `metrics=PATH` the run writes every logged record (TRL's reward, KL, clip ratios and
    docket's `docket/*` metrics, with the step) to that JSONL and shows TRL's rich progress bar
    instead of tqdm's.
    """
    trainer = trainer_class()(*args, docket=docket, **kwargs)
    if metrics is not None:
        from transformers.trainer_callback import ProgressCallback
        from trl.trainer.callbacks import RichProgressCallback

        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(RichProgressCallback())
        trainer.add_callback(metrics_callback(Path(metrics)))
    return trainer


def metrics_callback(path: Path) -> Any:
    """A transformers `TrainerCallback` appending each logged record to the JSONL `path`."""
    from transformers import TrainerCallback

    class MetricsJSONL(TrainerCallback):  # type: ignore[misc, unused-ignore]
        def __init__(self) -> None:
            path.unlink(missing_ok=True)
            self.log = MetricsLog(path)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if state.is_world_process_zero and logs:
                self.log.write({"step": state.global_step, **logs})

        def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.log.close()

    return MetricsJSONL()


def trainer_class() -> type:
    """The `GRPOTrainer` subclass (TRL imported here)."""
    import trl
    from accelerate.utils import gather_object
    from trl import GRPOTrainer

    if trl.__version__ != TRL_VERSION:
        import warnings

        warnings.warn(
            f"docket's TRL adapter is tested with trl {TRL_VERSION}, found {trl.__version__}",
            stacklevel=2,
        )

    class DocketGRPOTrainer(GRPOTrainer):  # type: ignore[misc, unused-ignore]
        """GRPOTrainer with docket's advantages and policy loss (see the module docstring)."""

        def __init__(self, *args: Any, docket: DocketRL | None = None, **kwargs: Any) -> None:
            self.docket = docket or DocketRL()
            self.docket.validate()
            self._docket_generator = torch.Generator().manual_seed(self.docket.seed)
            self._docket_rewards: tuple[Tensor, list[Any]] | None = None
            super().__init__(*args, **kwargs)
            if self.docket.loss != "trl" and self.loss_type not in AGGREGATED:
                raise ValueError(
                    f"docket loss {self.docket.loss!r} needs loss_type in {AGGREGATED}, "
                    f"not {self.loss_type!r}"
                )

        def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, ids: Any) -> Any:
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, ids)
            self._docket_rewards = (rewards_per_func, gather_object(list(completions)))
            return rewards_per_func

        def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
            output: dict[str, Any] = super()._generate_and_score_completions(inputs)
            if self.docket.advantage == "trl" or self._docket_rewards is None:
                return output
            rewards_per_func, completions = self._docket_rewards
            weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
            rewards = (rewards_per_func * weights).nansum(dim=1)
            mode = "train" if getattr(self.model, "training", False) else "eval"
            size = self.num_generations if mode == "train" else self.num_generations_eval
            assert size is not None  # GRPOConfig fills both
            groups = torch.arange(len(rewards), device=rewards.device) // size
            if self.docket.advantage == "stratified":
                assert self.docket.strata is not None
                key = self.docket.strata
                strata = strata_from([completion_text(c) for c in completions], key)
                adv = stratified_advantages(
                    rewards.cpu(), groups.cpu(), strata, alpha=self.docket.san_alpha,
                    eps=1e-4, unbiased=True,
                )  # fmt: skip
            else:
                adv = grpo_advantages(rewards.cpu(), groups.cpu(), eps=1e-4, unbiased=True)
            local = len(output["completion_ids"])
            start = self.accelerator.process_index * local
            output["advantages"] = adv[start : start + local].to(output["advantages"].device)
            return output

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Tensor:
            if self.docket.loss == "trl":
                return super()._compute_loss(model, inputs)  # type: ignore[no-any-return, unused-ignore]
            prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
            completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
            input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
            attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
            keep = completion_ids.size(1)
            mask = completion_mask
            if "tool_mask" in inputs:
                mask = completion_mask * inputs["tool_mask"]
            logps, entropies, _ = self._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, keep, compute_entropy=True
            )
            old = inputs.get("old_per_token_logps")
            old = logps.detach() if old is None else old
            out = self._docket_loss(
                model, logps, old, inputs, mask, entropies, input_ids, attention_mask
            )
            per_token = out.per_token
            if self.beta != 0.0:
                ref = inputs["ref_per_token_logps"]
                per_token = per_token + self.beta * (torch.exp(ref - logps) - (ref - logps) - 1)
            loss = trl_aggregate(self, per_token, mask.to(per_token.dtype), inputs)
            mode = "train" if getattr(self.model, "training", False) else "eval"
            for name, value in out.metrics.items():
                self._metrics[mode][f"docket/{name}"].append(value)
            return loss

        def _docket_loss(
            self,
            model: Any,
            logps: Tensor,
            old: Tensor,
            inputs: dict[str, Any],
            mask: Tensor,
            entropies: Tensor | None,
            input_ids: Tensor,
            attention_mask: Tensor,
        ) -> PolicyLoss:
            d = self.docket
            adv = inputs["advantages"]
            clip = dict(
                eps_low=self.epsilon_low, eps_high=self.epsilon_high, aggregation="token_sum"
            )
            if d.loss == "nsr":
                return nsr_policy_loss(
                    logps, old, adv, mask, eps_low=self.epsilon_low, eps_high=self.epsilon_high,
                    level=self.importance_sampling_level, aggregation="token_sum",
                    variant_high=d.nsr_variant_high, variant_low=d.nsr_variant_low,
                    u_min_high=d.nsr_u_min_high, u_min_low=d.nsr_u_min_low,
                    generator=self._docket_generator,
                )  # fmt: skip
            if d.loss == "echo":
                assert entropies is not None
                confidence = self._confidence(model, input_ids, attention_mask, logps.size(1))
                assert self.num_generations is not None
                groups = torch.arange(len(adv), device=adv.device) // self.num_generations
                token_adv = hybrid_advantages(
                    adv if adv.dim() == 1 else adv.mean(-1), entropies.detach(), confidence,
                    mask, groups, mult_coeff=d.echo_mult, add_coeff=d.echo_add,
                )  # fmt: skip
                return echo_policy_loss(
                    logps, old, token_adv, mask, confidence, tail_window=d.echo_tail_window,
                    eps_min=d.echo_eps_min, eps_max=d.echo_eps_max, kappa=d.echo_kappa,
                    aggregation="token_sum",
                )  # fmt: skip
            return clipped_surrogate(
                logps,
                old,
                adv,
                mask,
                level=self.importance_sampling_level,
                **clip,  # type: ignore[arg-type]
            )

        @torch.no_grad()
        def _confidence(
            self, model: Any, input_ids: Tensor, attention_mask: Tensor, keep: int
        ) -> Tensor:
            """Actor confidence (mean or mass of the top-k probabilities) per response token,
            from a no-grad forward with full logits (TRL's fused head returns none)."""
            outputs = model(input_ids=input_ids, attention_mask=attention_mask)
            logits = outputs.logits[:, -keep - 1 : -1, :] / self.temperature
            return actor_confidence(logits, self.docket.echo_conf_k, self.docket.echo_conf_norm)

    return DocketGRPOTrainer
