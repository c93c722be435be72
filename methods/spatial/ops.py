"""AffIn-Space operators (all our reconstruction: the paper's code is unreleased).

- Explicit geometric resampling: `canonicalize(view, pose)` warps a view's feature map back to
  the canonical frame with `affine_grid` + `grid_sample` (`warp` is its inverse).
- Orthogonal projection: `PoseSubspace` maps pose features to an orthonormal basis `U` (QR of
  a learned projection, rank r); `project_out(h, U) = (I − U Uᵀ) h` strips the pose-dependent
  component of hidden states (idempotent, invariant to adding any `U c`); `pose_projection`
  applies it to chosen decoder layers through forward hooks.
- Conditional reconstruction: `ConditionalReconstruction` decodes a geometric target from the
  pose-free states and the pose (`g(h_inv, p)`), so geometry stays recoverable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from docket.methods.spatial.affine import invert


def _sample(features: torch.Tensor, theta: torch.Tensor, mode: str) -> torch.Tensor:
    grid = F.affine_grid(theta.to(features.dtype), list(features.shape), align_corners=False)
    return F.grid_sample(features, grid, mode=mode, padding_mode="zeros", align_corners=False)


def canonicalize(view: torch.Tensor, pose: torch.Tensor, mode: str = "bilinear") -> torch.Tensor:
    """Canonical-frame features `C(x) = V(pose · x)` from view features `[B, C, H, W]` and the
    view poses `[B, 2, 3]` (canonical point x appears at `pose · x`); outside the view: 0."""
    return _sample(view, pose, mode)


def warp(canonical: torch.Tensor, pose: torch.Tensor, mode: str = "bilinear") -> torch.Tensor:
    """The view of canonical features under `pose`: `V(y) = C(pose⁻¹ · y)`."""
    return _sample(canonical, invert(pose), mode)


def project_out(hidden: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """`(I − U Uᵀ) h` for hidden states `[B, ..., d]` and orthonormal bases `U` `[B, d, r]`."""
    flat = hidden.reshape(hidden.shape[0], -1, hidden.shape[-1])
    u = basis.to(hidden.dtype)
    return (flat - (flat @ u) @ u.transpose(1, 2)).reshape(hidden.shape)


class PoseSubspace(nn.Module):
    """Pose features `[B, P]` -> an orthonormal basis `[B, d, r]` of the pose subspace."""

    def __init__(self, pose_dim: int, hidden: int, rank: int) -> None:
        super().__init__()
        if not 0 < rank < hidden:
            raise ValueError(f"pose subspace rank must be in 1..{hidden - 1}, not {rank}")
        self.hidden, self.rank = hidden, rank
        self.map = nn.Linear(pose_dim, hidden * rank)

    def forward(self, pose: torch.Tensor) -> torch.Tensor:
        raw = self.map(pose).reshape(-1, self.hidden, self.rank)
        basis, _ = torch.linalg.qr(raw)
        return basis


class ConditionalReconstruction(nn.Module):
    """`g(h_inv, p)`: a two-layer MLP from pose-free states and the pose to a geometric target."""

    def __init__(self, hidden: int, pose_dim: int, target_dim: int, width: int = 0) -> None:
        super().__init__()
        width = width or 2 * hidden
        self.net = nn.Sequential(
            nn.Linear(hidden + pose_dim, width), nn.GELU(), nn.Linear(width, target_dim)
        )

    def forward(self, states: torch.Tensor, pose: torch.Tensor) -> torch.Tensor:
        """`states` `[B, T, d]`, `pose` `[B, P]` -> `[B, T, target_dim]`."""
        expanded = pose[:, None, :].expand(-1, states.shape[1], -1)
        return self.net(torch.cat([states, expanded], -1))


@contextmanager
def pose_projection(
    layers: Sequence[nn.Module], basis: Callable[[], torch.Tensor | None]
) -> Iterator[None]:
    """Project the output hidden states of each of `layers` off `basis()` (skipped while it
    returns None) for as long as the block runs."""

    def hook(module: nn.Module, args: object, output: object) -> object:
        u = basis()
        if u is None:
            return output
        if isinstance(output, tuple):
            return (project_out(output[0], u), *output[1:])
        assert isinstance(output, torch.Tensor)
        return project_out(output, u)

    handles = [layer.register_forward_hook(hook) for layer in layers]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
