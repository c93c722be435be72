"""FedPissa pieces: PiSSA exactness (ours and PEFT's), FedAvg weights, agreement, selection,
decorrelated projection."""

from __future__ import annotations

import numpy as np
import pytest

from docket.methods.adaptation import fedpissa

A_KEY = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
B_KEY = "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"


def test_pissa_is_exact_and_truncates_at_the_tail_singular_values() -> None:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((12, 9))
    a, b, residual = fedpissa.pissa_factors(weight, rank=3)
    assert a.shape == (3, 9) and b.shape == (12, 3)
    np.testing.assert_allclose(residual + b @ a, weight, atol=1e-12)
    singular = np.linalg.svd(weight, compute_uv=False)
    assert np.linalg.norm(residual) ** 2 == pytest.approx(float(np.sum(singular[3:] ** 2)))
    # the principal part carries the top singular values: B A has exactly singular[:3]
    np.testing.assert_allclose(np.linalg.svd(b @ a, compute_uv=False)[:3], singular[:3])


def test_peft_pissa_init_matches_the_reference() -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import Linear as LoraLinear

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 6, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.proj(x)

    torch.manual_seed(0)
    model = Tiny()
    original = model.proj.weight.detach().double().numpy().copy()
    config = LoraConfig(r=2, lora_alpha=2, target_modules=["proj"], init_lora_weights="pissa")
    peft_model = get_peft_model(model, config)
    tiny = peft_model.base_model.model
    assert isinstance(tiny, Tiny) and isinstance(tiny.proj, LoraLinear)
    layer = tiny.proj
    lora_a, lora_b = layer.lora_A["default"], layer.lora_B["default"]
    assert isinstance(lora_a, torch.nn.Linear) and isinstance(lora_b, torch.nn.Linear)
    assert isinstance(layer.base_layer, torch.nn.Linear)
    a_ref, b_ref, residual = fedpissa.pissa_factors(original, rank=2)
    a = lora_a.weight.detach().double().numpy()
    b = lora_b.weight.detach().double().numpy()
    np.testing.assert_allclose(b @ a, b_ref @ a_ref, atol=1e-5)
    np.testing.assert_allclose(
        layer.base_layer.weight.detach().double().numpy(), residual, atol=1e-5
    )


def test_weighted_average_weights_by_examples() -> None:
    updates = [{"x": np.array([1.0, 2.0])}, {"x": np.array([3.0, 6.0])}]
    averaged = fedpissa.weighted_average(updates, [1, 3])
    np.testing.assert_allclose(averaged["x"], [2.5, 5.0])
    with pytest.raises(ValueError, match="2 updates and 1 weights"):
        fedpissa.weighted_average(updates, [1])


def test_agreement_is_the_mean_pairwise_cosine() -> None:
    x, y = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    assert fedpissa.agreement([x, x, x]) == pytest.approx(1.0)
    assert fedpissa.agreement([x, -x]) == pytest.approx(-1.0)
    assert fedpissa.agreement([x, y]) == pytest.approx(0.0)
    assert fedpissa.agreement([x, x, y]) == pytest.approx(1 / 3)  # pairs: 1, 0, 0
    assert fedpissa.agreement([x]) == 0.0
    assert fedpissa.agreement([x, np.zeros(2)]) == 0.0


def test_sketches_are_shared_projections_that_keep_cosines() -> None:
    rng = np.random.default_rng(1)
    delta = rng.standard_normal((16, 32))
    other = rng.standard_normal((16, 32))
    s1 = fedpissa.sketch(delta, 256, A_KEY)
    np.testing.assert_array_equal(s1, fedpissa.sketch(delta, 256, A_KEY))  # every client
    assert fedpissa.agreement([s1, fedpissa.sketch(2 * delta, 256, A_KEY)]) == pytest.approx(1.0)
    cosine = fedpissa.agreement([delta, delta + other])
    estimate = fedpissa.agreement([s1, fedpissa.sketch(delta + other, 256, A_KEY)])
    assert abs(estimate - cosine) < 0.1
    assert not np.allclose(s1, fedpissa.sketch(delta, 256, B_KEY))  # per-component matrices


def test_tracker_starts_from_the_fedsa_prior_and_follows_agreement() -> None:
    tracker = fedpissa.AgreementTracker(fedpissa.fedsa_prior([A_KEY, B_KEY]), beta=0.5, tau=0.3)
    assert tracker.shared() == [A_KEY]
    tracker.update({A_KEY: 0.0, B_KEY: 0.8})
    assert tracker.ema == {A_KEY: 0.5, B_KEY: 0.4}
    assert tracker.shared() == [A_KEY, B_KEY]
    tracker.update({A_KEY: -0.2, B_KEY: 0.2})
    assert tracker.ema == pytest.approx({A_KEY: 0.15, B_KEY: 0.3})
    assert tracker.shared() == [B_KEY]


@pytest.mark.parametrize("key", [A_KEY, B_KEY])
def test_projection_is_idempotent_and_orthogonal_to_the_reference(key: str) -> None:
    rng = np.random.default_rng(2)
    shape = (3, 10) if key == A_KEY else (10, 3)
    reference, delta = rng.standard_normal(shape), rng.standard_normal(shape)
    projected = fedpissa.project_out(delta, reference, key)
    np.testing.assert_allclose(
        fedpissa.project_out(projected, reference, key), projected, atol=1e-12
    )
    q = fedpissa.orthonormal_basis(reference, key)
    if key == B_KEY:
        np.testing.assert_allclose(q.T @ projected, 0.0, atol=1e-12)  # off col(B_ref)
        shifted = delta + q @ rng.standard_normal((3, 3))  # anything inside the subspace
    else:
        np.testing.assert_allclose(projected @ q, 0.0, atol=1e-12)  # off row(A_ref)
        shifted = delta + rng.standard_normal((3, 3)) @ q.T
    np.testing.assert_allclose(fedpissa.project_out(shifted, reference, key), projected, atol=1e-12)


def test_nbytes_counts_array_payloads() -> None:
    assert fedpissa.nbytes({"a": np.zeros((3, 4), np.float32), "b": np.zeros(5, np.float64)}) == 88
