"""verl registration through a stub of `verl.trainer.ppo.core_algos` (verl 0.9.1 cannot be
installed beside transformers 5 here): the names resolve through verl's registry API and the
registered functions compute docket's pure functions."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from docket.methods.rl.advantages import stratified_advantages
from docket.methods.rl.engines.verl_registry import (
    ESTIMATORS,
    POLICY_LOSSES,
    VerlSettings,
    register_with_verl,
)
from docket.methods.rl.losses import aggregate, clipped_surrogate


def stub_core_algos() -> types.ModuleType:
    """verl's registry API (register_adv_est / register_policy_loss / get_* / agg_loss)."""
    module = types.ModuleType("verl.trainer.ppo.core_algos")
    adv: dict[str, Any] = {}
    losses: dict[str, Any] = {}

    def register_adv_est(name: str) -> Callable[[Any], Any]:
        def decorator(fn: Any) -> Any:
            if name in adv and adv[name] != fn:
                raise ValueError(f"Adv estimator {name} has already been registered")
            adv[name] = fn
            return fn

        return decorator

    def register_policy_loss(name: str) -> Callable[[Any], Any]:
        def decorator(fn: Any) -> Any:
            losses[name] = fn
            return fn

        return decorator

    def agg_loss(
        loss_mat: torch.Tensor, loss_mask: torch.Tensor, loss_agg_mode: str, **_: Any
    ) -> torch.Tensor:
        mode = {"token-mean": "token_mean", "seq-mean-token-mean": "seq_mean_token_mean"}[
            loss_agg_mode
        ]
        return aggregate(loss_mat, loss_mask, mode)

    vars(module).update(
        ADV_ESTIMATOR_REGISTRY=adv,
        POLICY_LOSS_REGISTRY=losses,
        register_adv_est=register_adv_est,
        register_policy_loss=register_policy_loss,
        get_adv_estimator_fn=adv.__getitem__,
        get_policy_loss_fn=losses.__getitem__,
        agg_loss=agg_loss,
    )
    return module


@pytest.fixture()
def verl(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    core = stub_core_algos()
    for name in ("verl", "verl.trainer", "verl.trainer.ppo"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "verl.trainer.ppo.core_algos", core)
    vars(sys.modules["verl.trainer.ppo"])["core_algos"] = core
    return core


def test_names_resolve_through_verls_registry(verl: types.ModuleType) -> None:
    names = register_with_verl()
    assert names == [*ESTIMATORS, *POLICY_LOSSES]
    assert register_with_verl() == names  # twice is harmless
    for name in POLICY_LOSSES:
        assert callable(verl.get_policy_loss_fn(name))


def test_the_estimator_is_san_per_prompt(verl: types.ModuleType) -> None:
    register_with_verl(settings=VerlSettings(san_alpha=0.5))
    estimator = verl.get_adv_estimator_fn("docket_stratified_grpo")
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 0, 0], [1, 1, 1]]).float()
    token_rewards = torch.zeros(6, 3)
    token_rewards[torch.arange(6), mask.sum(-1).long() - 1] = rewards
    index = np.array(["a", "a", "a", "a", "b", "b"], dtype=object)
    advantages, returns = estimator(
        token_level_rewards=token_rewards, response_mask=mask, index=index
    )
    expected = stratified_advantages(
        rewards, torch.tensor([0, 0, 0, 0, 1, 1]), mask.sum(-1).long(), alpha=0.5
    )
    assert torch.allclose(advantages, expected.unsqueeze(-1) * mask)
    assert torch.equal(advantages, returns)
    strata = np.array([0, 1, 0, 1, 0, 0])
    given, _ = estimator(
        token_level_rewards=token_rewards, response_mask=mask, index=index, strata=strata
    )
    assert torch.allclose(
        given[:, 0],
        stratified_advantages(
            rewards, torch.tensor([0, 0, 0, 0, 1, 1]), torch.tensor(strata), alpha=0.5
        ),
    )


def test_the_losses_compute_dockets_functions(verl: types.ModuleType) -> None:
    register_with_verl()
    gen = torch.Generator().manual_seed(0)
    old = -1.0 + 0.3 * torch.randn(4, 5, generator=gen)
    new = old + 0.4 * torch.randn(4, 5, generator=gen)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5]).unsqueeze(-1).expand(4, 5)
    mask = torch.ones(4, 5)
    config = SimpleNamespace(
        clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, global_batch_info={}
    )
    loss, metrics = verl.get_policy_loss_fn("docket_clip")(
        old, new, adv, mask, "token-mean", config
    )
    pure = clipped_surrogate(new, old, adv, mask, eps_low=0.2, eps_high=0.28)
    assert float(loss) == pytest.approx(float(pure.loss))
    assert metrics["docket/clip_frac"] == pure.metrics["clip_frac"]
    echo, echo_metrics = verl.get_policy_loss_fn("docket_echo")(
        old, new, adv, mask, "token-mean", config
    )
    assert float(echo) == pytest.approx(
        float(clipped_surrogate(new, old, adv, mask, eps_low=0.2).loss)
    )
    assert echo_metrics["docket/echo_adaptive"] == 0.0
    nsr, nsr_metrics = verl.get_policy_loss_fn("docket_nsr")(
        old, new, adv, mask, "seq-mean-token-mean", config
    )
    assert torch.isfinite(nsr) and "docket/rescue_frac" in nsr_metrics
    asym, _ = verl.get_policy_loss_fn("docket_asymre")(old, new, adv, mask, "token-mean", config)
    assert torch.isfinite(asym)


def test_without_verl_registration_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "verl", None)
    with pytest.raises(ImportError, match="verl is not importable here"):
        register_with_verl()
