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


def test_leave_one_out_agreement_is_each_clients_cosine_with_the_others_sum() -> None:
    x, y = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    # client 0: cos(x, x + y); client 1 the same; client 2: cos(y, 2x) = 0
    np.testing.assert_allclose(
        fedpissa.leave_one_out_agreement([x, x, y]), [2**-0.5, 2**-0.5, 0.0], atol=1e-12
    )
    # weights scale the others' sum: client 0 sees 3y + x... with weights (1, 1, 3)
    np.testing.assert_allclose(
        fedpissa.leave_one_out_agreement([x, x, y], [1, 1, 3]),
        [1 / 10**0.5, 1 / 10**0.5, 0.0],
        atol=1e-12,
    )
    np.testing.assert_allclose(fedpissa.leave_one_out_agreement([x, -x]), [-1.0, -1.0])
    assert fedpissa.leave_one_out_agreement([x]).size == 0
    np.testing.assert_array_equal(fedpissa.leave_one_out_agreement([x, np.zeros(2)]), [0.0, 0.0])
    with pytest.raises(ValueError, match="2 vectors and 3 weights"):
        fedpissa.leave_one_out_agreement([x, y], [1, 1, 1])


def test_null_threshold_is_the_exact_cosine_quantile() -> None:
    # in 3 dimensions the cosine of two isotropic vectors is uniform on [-1, 1] (Archimedes)
    assert fedpissa.null_agreement_threshold(3, 0.1) == pytest.approx(0.8)
    assert fedpissa.null_agreement_threshold(3, 0.5) == pytest.approx(0.0)
    # the spread shrinks like 1/sqrt(d): the 5 % quantile is close to 1.645 / sqrt(d)
    tau = fedpissa.null_agreement_threshold(1024, 0.05)
    assert tau == pytest.approx(1.645 / 32, rel=0.01)
    with pytest.raises(ValueError, match="sketch dimension 1 < 2"):
        fedpissa.null_agreement_threshold(1, 0.05)
    with pytest.raises(ValueError, match="false_share 0.0 outside"):
        fedpissa.null_agreement_threshold(32, 0.0)


def test_orthogonal_updates_read_as_agreeing_at_the_false_share_rate() -> None:
    """Two orthogonal updates, sketched under 4 000 projections: the sketch cosine exceeds the
    threshold in 5 % of them (binomial sd 0.0034), not in the ~30 % a 1/d-blind threshold of
    0.1 would give."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 8))
    y = rng.standard_normal((16, 8))
    y -= (x.ravel() @ y.ravel()) / (x.ravel() @ x.ravel()) * x  # exactly orthogonal
    dim, rate = 32, 0.05
    tau = fedpissa.null_agreement_threshold(dim, rate)
    cosines = np.array(
        [
            fedpissa.agreement(
                [fedpissa.sketch(x, dim, B_KEY, s), fedpissa.sketch(y, dim, B_KEY, s)]
            )
            for s in range(4000)
        ]
    )
    assert abs(float(np.mean(cosines > tau)) - rate) < 0.012
    assert float(np.mean(cosines > 0.1)) > 0.25


def _two_client_sketches(dim: int) -> tuple[dict[str, list[np.ndarray]], list[str]]:
    """Two clients' sketches: A and one B agree (the same update up to 10 % noise), one B
    conflicts (opposite updates), one B is unrelated (orthogonal updates)."""
    rng = np.random.default_rng(4)
    keys = [A_KEY, B_KEY, B_KEY.replace("q_proj", "k_proj"), B_KEY.replace("q_proj", "v_proj")]
    a_key, b_agree, b_conflict, b_unrelated = keys
    common = {k: rng.standard_normal((8, 16) if k == a_key else (16, 8)) for k in keys}
    x, y = rng.standard_normal((16, 8)), rng.standard_normal((16, 8))
    y -= (x.ravel() @ y.ravel()) / (x.ravel() @ x.ravel()) * x
    deltas = [
        {
            a_key: common[a_key] + 0.1 * rng.standard_normal((8, 16)),
            b_agree: common[b_agree] + 0.1 * rng.standard_normal((16, 8)),
            b_conflict: sign * common[b_conflict],
            b_unrelated: other,
        }
        for sign, other in ((1.0, x), (-1.0, y))
    ]
    sketches = {k: [fedpissa.sketch(d[k], dim, k) for d in deltas] for k in keys}
    return sketches, keys


def test_selector_keeps_conflicting_b_private_and_shares_agreeing_components() -> None:
    sketches, keys = _two_client_sketches(dim=64)
    a_key, b_agree, b_conflict, b_unrelated = keys
    selector = fedpissa.AgreementSelector(
        fedpissa.fedsa_prior(keys), fedpissa.null_agreement_threshold(64, 0.05)
    )
    assert selector.shared() == [a_key]  # round 1: FedSA-LoRA's prior
    assert selector.update(sketches, [64, 64]) == sorted([a_key, b_agree])
    lowest = selector.history[-1]["min_agreement"]
    assert isinstance(lowest, dict)
    assert lowest[b_conflict] == pytest.approx(-1.0)  # opposite updates: exactly -1
    assert lowest[a_key] > 0.95 and lowest[b_agree] > 0.95
    assert abs(lowest[b_unrelated]) < selector.threshold  # orthogonal: inside the null's spread
    # one client alone cannot measure agreement: the shared set stays as it was
    assert selector.update({k: v[:1] for k, v in sketches.items()}) == sorted([a_key, b_agree])


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
