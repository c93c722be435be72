"""docket's objectives in verl's registries (verl optional, imported only here).

`register_with_verl()` adds, through verl's own decorators in `verl.trainer.ppo.core_algos`:

- advantage estimator `docket_stratified_grpo` (`algorithm.adv_estimator=docket_stratified_grpo`):
  SAN blended with GRPO per prompt (`index` = verl's `uid`). verl 0.9.1 passes custom
  estimators only `token_level_rewards`, `response_mask`, `index` and `config`, so the strata
  come from `VerlSettings.strata(response_mask, token_level_rewards)` (default: response length
  in tokens) or from a `strata=` array where a fork passes one (e.g. tool-call counts);
- policy losses (`actor_rollout_ref.actor.policy_loss.loss_mode=...`): `docket_clip`,
  `docket_nsr` (clip ranges from `clip_ratio_low/high`), `docket_echo` (ECHO's adaptive ε needs
  per-token confidences: pass `confidence=` where the actor can; without it the range is
  ε_max, i.e. the plain clipped surrogate, and the metric `docket/echo_adaptive` is 0) and
  `docket_asymre` (no ratio; V = batch mean − offset).

Losses are aggregated by verl's own `agg_loss` with the run's `loss_agg_mode`. verl cannot be
installed beside this environment's transformers (verl 0.9.1 pins transformers < 5.11), so the
tests register against a stub with verl's registry API (the path is untested against real
verl); on a GPU box with verl, call
`register_with_verl()` before building the trainer (e.g. in a custom `main_ppo` entry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from ..advantages import stratified_advantages
from ..echo.shaping import adaptive_clip_eps
from ..losses import clipped_surrogate
from ..nsr import nsr_policy_loss
from ..replay import asymre_baseline

ESTIMATORS: tuple[str, ...] = ("docket_stratified_grpo",)
POLICY_LOSSES: tuple[str, ...] = ("docket_clip", "docket_nsr", "docket_echo", "docket_asymre")


def response_length_strata(response_mask: Tensor, token_level_rewards: Tensor) -> Tensor:
    """Default strata: the number of response tokens."""
    return response_mask.sum(-1).long()


@dataclass
class VerlSettings:
    """docket knobs verl's configs have no field for."""

    san_alpha: float = 1.0
    strata: Callable[[Tensor, Tensor], Tensor] = response_length_strata
    nsr_variant_high: str = "scaled"
    nsr_variant_low: str = "plain"
    nsr_u_min_high: float = 0.0
    nsr_u_min_low: float = 0.0
    echo_eps_min: float = 0.05
    echo_eps_max: float = 0.2
    echo_kappa: float = 4.0
    echo_tail_window: int = 16
    asymre_offset: float = 0.1
    generator: torch.Generator = field(default_factory=lambda: torch.Generator().manual_seed(0))


SETTINGS = VerlSettings()


def _clip_range(config: Any) -> tuple[float, float]:
    """(ε_lo, ε_hi) from verl's actor config (clip_ratio_low/high, else clip_ratio)."""
    if config is None:
        return 0.2, 0.2
    base = getattr(config, "clip_ratio", 0.2)
    low = getattr(config, "clip_ratio_low", None)
    high = getattr(config, "clip_ratio_high", None)
    return float(base if low is None else low), float(base if high is None else high)


def _batch_info(config: Any) -> dict[str, Any]:
    return dict(getattr(config, "global_batch_info", None) or {})


def _group_ids(index: Any) -> Tensor:
    ids: dict[Any, int] = {}
    return torch.tensor([ids.setdefault(key, len(ids)) for key in list(index)], dtype=torch.long)


def make_estimator(settings: VerlSettings = SETTINGS) -> Callable[..., tuple[Tensor, Tensor]]:
    """verl's advantage-estimator signature around `stratified_advantages`."""

    def docket_stratified_grpo(
        token_level_rewards: Tensor,
        response_mask: Tensor,
        index: Any = None,
        epsilon: float = 1e-6,
        config: Any = None,
        strata: Any = None,
        **_: Any,
    ) -> tuple[Tensor, Tensor]:
        scores = token_level_rewards.sum(-1)
        groups = (
            _group_ids(index) if index is not None else torch.zeros(len(scores), dtype=torch.long)
        )
        layers = (
            torch.as_tensor(strata).long()
            if strata is not None
            else settings.strata(response_mask, token_level_rewards).cpu()
        )
        adv = stratified_advantages(
            scores.detach().cpu(), groups, layers, alpha=settings.san_alpha, eps=epsilon
        ).to(scores.device, scores.dtype)
        advantages = adv.unsqueeze(-1) * response_mask
        return advantages, advantages

    return docket_stratified_grpo


def make_losses(
    agg_loss: Callable[..., Tensor], settings: VerlSettings = SETTINGS
) -> dict[str, Any]:
    """verl's policy-loss signature around docket's losses, aggregated by verl's `agg_loss`."""

    def finish(per_token: Tensor, mask: Tensor, mode: str, config: Any, weights: Any) -> Tensor:
        if weights is not None:
            per_token = per_token * weights
        return agg_loss(
            loss_mat=per_token, loss_mask=mask, loss_agg_mode=mode, **_batch_info(config)
        )

    def docket_clip(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        low, high = _clip_range(config)
        out = clipped_surrogate(
            log_prob, old_log_prob, advantages, response_mask, eps_low=low, eps_high=high
        )
        loss = finish(out.per_token, response_mask, loss_agg_mode, config, rollout_is_weights)
        return loss, {f"docket/{k}": v for k, v in out.metrics.items()}

    def docket_nsr(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        low, high = _clip_range(config)
        out = nsr_policy_loss(
            log_prob, old_log_prob, advantages, response_mask, eps_low=low, eps_high=high,
            variant_high=settings.nsr_variant_high, variant_low=settings.nsr_variant_low,
            u_min_high=settings.nsr_u_min_high, u_min_low=settings.nsr_u_min_low,
            generator=settings.generator,
        )  # fmt: skip
        loss = finish(out.per_token, response_mask, loss_agg_mode, config, rollout_is_weights)
        return loss, {f"docket/{k}": v for k, v in out.metrics.items()}

    def docket_echo(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
        confidence: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        eps: float | Tensor = settings.echo_eps_max
        if confidence is not None:
            eps = adaptive_clip_eps(
                confidence.detach(), response_mask, tail_window=settings.echo_tail_window,
                eps_min=settings.echo_eps_min, eps_max=settings.echo_eps_max,
                kappa=settings.echo_kappa,
            )  # fmt: skip
        out = clipped_surrogate(
            log_prob, old_log_prob, advantages, response_mask, eps_low=eps, eps_high=eps
        )
        loss = finish(out.per_token, response_mask, loss_agg_mode, config, rollout_is_weights)
        metrics = {f"docket/{k}": v for k, v in out.metrics.items()}
        metrics["docket/echo_adaptive"] = float(confidence is not None)
        return loss, metrics

    def docket_asymre(
        old_log_prob: Tensor,
        log_prob: Tensor,
        advantages: Tensor,
        response_mask: Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: Tensor | None = None,
        rewards: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        # verl hands losses advantages, not rewards: AsymRE's (r - V) is then the centred
        # advantage minus the offset, unless a fork passes `rewards`
        signal = (
            advantages
            if advantages.dim() == 1
            else (advantages * response_mask).sum(-1) / (response_mask.sum(-1).clamp(min=1))
        )
        if rewards is not None:
            signal = rewards.to(log_prob.dtype)
        value = asymre_baseline(signal, settings.asymre_offset)
        per_token = -(signal - value).detach().unsqueeze(-1) * log_prob
        loss = finish(per_token, response_mask, loss_agg_mode, config, rollout_is_weights)
        return loss, {"docket/asymre_baseline": value}

    return {
        "docket_clip": docket_clip,
        "docket_nsr": docket_nsr,
        "docket_echo": docket_echo,
        "docket_asymre": docket_asymre,
    }


def register_with_verl(core_algos: Any = None, settings: VerlSettings = SETTINGS) -> list[str]:
    """Register docket's estimator and policy losses with verl; return the names registered.

    `core_algos` defaults to `verl.trainer.ppo.core_algos`; without verl this raises one
    ImportError saying so. Registering twice is harmless.
    """
    if core_algos is None:
        try:
            from verl.trainer.ppo import core_algos as verl_core_algos
        except ImportError as error:
            raise ImportError(
                f"verl is not importable here ({error}); install verl on the training machine"
            ) from None
        core_algos = verl_core_algos
    registered = []
    estimator = make_estimator(settings)
    if ESTIMATORS[0] not in getattr(core_algos, "ADV_ESTIMATOR_REGISTRY", {}):
        core_algos.register_adv_est(ESTIMATORS[0])(estimator)
    registered.append(ESTIMATORS[0])
    for name, fn in make_losses(core_algos.agg_loss, settings).items():
        core_algos.register_policy_loss(name)(fn)
        registered.append(name)
    return registered
