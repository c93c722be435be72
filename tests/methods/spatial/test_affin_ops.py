"""AffIn-Space operators: decomposition round trip, canonical resampling, pose projection,
conditional reconstruction."""

from __future__ import annotations

import math

import pytest
import torch

from docket.core.tiny_models import random_llama
from docket.methods.spatial import affine
from docket.methods.spatial.ops import (
    ConditionalReconstruction,
    PoseSubspace,
    canonicalize,
    pose_projection,
    project_out,
    warp,
)


def random_params(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    angle = (torch.rand(n, generator=g) * 2 - 1) * math.pi * 0.99
    logs = (torch.rand(n, 2, generator=g) - 0.5) * 0.8
    shear = (torch.rand(n, generator=g) - 0.5) * 0.6
    shift = (torch.rand(n, 2, generator=g) - 0.5) * 0.4
    return torch.cat([angle[:, None], logs, shear[:, None], shift], -1).double()


def test_decomposition_round_trips_both_ways() -> None:
    params = random_params(64)
    matrices = affine.compose(params)
    torch.testing.assert_close(affine.decompose(matrices), params, atol=1e-10, rtol=0)
    torch.testing.assert_close(affine.compose(affine.decompose(matrices)), matrices)
    quarter = torch.tensor([[math.pi / 2, 0.0, 0.0, 0.0, 0.1, -0.2]], dtype=torch.float64)
    expected = torch.tensor([[[0.0, -1.0, 0.1], [1.0, 0.0, -0.2]]], dtype=torch.float64)
    torch.testing.assert_close(affine.compose(quarter), expected)
    mirror = torch.tensor([[[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    with pytest.raises(ValueError, match="non-positive determinant"):
        affine.decompose(mirror)


def test_polar_and_inverse() -> None:
    linear = affine.compose(random_params(16, seed=1))[..., :2]
    r, s = affine.polar(linear)
    eye = torch.eye(2, dtype=torch.float64).expand(16, 2, 2)
    torch.testing.assert_close(r @ r.transpose(-1, -2), eye)
    torch.testing.assert_close(torch.linalg.det(r), torch.ones(16, dtype=torch.float64))
    torch.testing.assert_close(s, s.transpose(-1, -2))
    assert bool((torch.linalg.eigvalsh(s) > 0).all())
    torch.testing.assert_close(r @ s, linear)
    poses = affine.compose(random_params(16, seed=2))
    points = torch.randn(16, 5, 2, dtype=torch.float64)
    back = affine.apply(affine.invert(poses), affine.apply(poses, points))
    torch.testing.assert_close(back, points)


def smooth_map(size: int = 64) -> torch.Tensor:
    """Three channels of low-frequency patterns on [-1, 1]²."""
    coords = (torch.arange(size) + 0.5) / size * 2 - 1
    y, x = torch.meshgrid(coords, coords, indexing="ij")
    channels = [torch.sin(2 * x + y), torch.cos(3 * y) * x, torch.exp(-(x**2 + y**2))]
    return torch.stack(channels)[None]


def test_canonicalising_a_warped_map_recovers_it() -> None:
    canonical = smooth_map()
    pose = affine.compose(torch.tensor([[0.5, 0.1, -0.05, 0.15, 0.05, -0.05]]))
    view = warp(canonical, pose)
    assert (view - canonical).abs().max() > 0.3  # the view really differs
    recovered = canonicalize(view, pose)
    # compare where the canonical point lands well inside the view (no border effects)
    size = canonical.shape[-1]
    coords = (torch.arange(size) + 0.5) / size * 2 - 1
    y, x = torch.meshgrid(coords, coords, indexing="ij")
    seen = affine.apply(pose[0], torch.stack([x, y], -1).reshape(-1, 2)).abs().amax(-1)
    # ... and inside the canonical map, so the view's neighbouring samples exist too
    inside = ((seen < 0.9).reshape(size, size)) & (x.abs() < 0.9) & (y.abs() < 0.9)
    assert inside.float().mean() > 0.3
    error = (recovered - canonical).abs()[0][:, inside]
    assert float(error.max()) < 0.05 and float(error.mean()) < 0.01
    identity = affine.compose(torch.zeros(1, 6))
    torch.testing.assert_close(canonicalize(canonical, identity), canonical, atol=1e-5, rtol=0)


def test_projection_is_idempotent_and_removes_the_pose_component() -> None:
    torch.manual_seed(0)
    subspace = PoseSubspace(pose_dim=6, hidden=16, rank=3)
    pose = torch.randn(4, 6)
    basis = subspace(pose)
    torch.testing.assert_close(basis.transpose(1, 2) @ basis, torch.eye(3).expand(4, 3, 3))
    hidden = torch.randn(4, 7, 16)
    invariant = project_out(hidden, basis)
    torch.testing.assert_close(project_out(invariant, basis), invariant, atol=1e-5, rtol=0)
    torch.testing.assert_close(invariant @ basis, torch.zeros(4, 7, 3), atol=1e-5, rtol=0)
    shifted = hidden + (basis @ torch.randn(4, 3, 7)).transpose(1, 2)  # any pose component
    torch.testing.assert_close(project_out(shifted, basis), invariant, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="rank must be in 1..15"):
        PoseSubspace(6, 16, 16)


def test_pose_projection_hooks_a_decoder() -> None:
    model = random_llama(50, hidden=16, intermediate=32, layers=2, heads=2, seed=0).eval()
    basis = PoseSubspace(6, 16, 2)(torch.randn(1, 6)).detach()
    captured: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, args: object, output: object) -> None:
        first = output[0] if isinstance(output, tuple) else output
        assert isinstance(first, torch.Tensor)
        captured.append(first)

    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with pose_projection(model.model.layers, lambda: basis):
            handle = model.model.layers[1].register_forward_hook(keep)
            projected = model(input_ids=ids).logits
            handle.remove()
        again = model(input_ids=ids).logits
    torch.testing.assert_close(captured[0] @ basis, torch.zeros(1, 4, 2), atol=1e-5, rtol=0)
    assert not torch.allclose(plain, projected)
    torch.testing.assert_close(again, plain)  # hooks removed on exit


def test_reconstruction_head_recovers_the_removed_component(one_thread: None) -> None:
    """States carry a pose-dependent component inside span(U(p)); after projection the head
    g(h_inv, p) learns it back from the pose."""
    torch.manual_seed(0)
    d, pose_dim, rank = 16, 4, 2
    subspace = PoseSubspace(pose_dim, d, rank).requires_grad_(False)
    mixing = torch.randn(pose_dim, rank)
    head = ConditionalReconstruction(d, pose_dim, rank, width=64)
    optimizer = torch.optim.Adam(head.parameters(), lr=3e-3)

    def batch(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pose = torch.randn(n, pose_dim)
        basis = subspace(pose)
        content = project_out(torch.randn(n, 3, d), basis)  # pose-free content
        scale = 1 + content.mean(-1, keepdim=True)  # the component also depends on content
        coefficients = torch.tanh(pose @ mixing)[:, None, :] * scale
        states = content + coefficients @ basis.transpose(1, 2)
        return project_out(states, basis), pose, states @ basis  # target: U^T h

    for _ in range(500):
        states, pose, target = batch(64)
        loss = torch.nn.functional.mse_loss(head(states, pose), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    states, pose, target = batch(256)
    with torch.no_grad():
        error = torch.nn.functional.mse_loss(head(states, pose), target)
        torch.testing.assert_close(
            states @ subspace(pose), torch.zeros_like(target), atol=1e-5, rtol=0
        )
    assert float(error) < 0.1 * float(target.var())  # recovered from (h_inv, p) alone
