"""Affine decomposition of view poses (AffIn-Space; our reconstruction, its code is unreleased).

A view pose is a 2-D affine map `y = M x + t` in normalised image coordinates ([-1, 1], the
convention of `torch.nn.functional.affine_grid` with `align_corners=False`): a point `x` of
the canonical scene appears at `y` in the view. Two decompositions of `M` (det > 0):

- parameters `(angle, scale_x, scale_y, shear, tx, ty)` with `M = R(angle) [[sx, shear*sy],
  [0, sy]]` — the QR factorisation with a positive diagonal, unique, so `decompose` and
  `compose` are exact inverses (the "decomposed affine quantities" a pose head predicts);
- the polar form `M = R S` (rotation times symmetric positive-definite stretch), from the SVD.

All functions take a batch: `[..., 2, 3]` matrices, `[..., 6]` parameters.
"""

from __future__ import annotations

import torch

PARAMS = ("angle", "log_scale_x", "log_scale_y", "shear", "tx", "ty")


def rotation(angle: torch.Tensor) -> torch.Tensor:
    """Rotation matrices `[..., 2, 2]` of `angle` (radians, counter-clockwise)."""
    c, s = torch.cos(angle), torch.sin(angle)
    return torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)


def compose(params: torch.Tensor) -> torch.Tensor:
    """Affine matrices `[..., 2, 3]` from `[..., 6]` parameters (angle, log sx, log sy,
    shear, tx, ty); the scales are logs so any real vector is a valid pose."""
    angle, log_sx, log_sy, shear, tx, ty = params.unbind(-1)
    sx, sy = log_sx.exp(), log_sy.exp()
    zero = torch.zeros_like(sx)
    upper = torch.stack([torch.stack([sx, shear * sy], -1), torch.stack([zero, sy], -1)], -2)
    linear = rotation(angle) @ upper
    return torch.cat([linear, torch.stack([tx, ty], -1)[..., None]], -1)


def decompose(matrix: torch.Tensor) -> torch.Tensor:
    """`[..., 6]` parameters of affine matrices `[..., 2, 3]` whose linear part has det > 0
    (ValueError otherwise: a reflection is no view pose)."""
    linear, shift = matrix[..., :2], matrix[..., 2]
    if bool((torch.linalg.det(linear) <= 0).any()):
        raise ValueError("affine pose with a non-positive determinant (a reflection or degenerate)")
    q, r = torch.linalg.qr(linear)
    signs = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))  # make the diagonal positive
    q = q * signs[..., None, :]
    r = r * signs[..., :, None]
    sx, sy = r[..., 0, 0], r[..., 1, 1]
    angle = torch.atan2(q[..., 1, 0], q[..., 0, 0])
    return torch.stack(
        [angle, sx.log(), sy.log(), r[..., 0, 1] / sy, shift[..., 0], shift[..., 1]], -1
    )


def polar(linear: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Polar decomposition `M = R S` of `[..., 2, 2]` matrices with det > 0: `R` a rotation,
    `S` symmetric positive definite."""
    u, sigma, vh = torch.linalg.svd(linear)
    r = u @ vh
    s = vh.transpose(-1, -2) @ torch.diag_embed(sigma) @ vh
    return r, s


def invert(matrix: torch.Tensor) -> torch.Tensor:
    """The inverse pose: `x = M⁻¹ y − M⁻¹ t`."""
    inverse = torch.linalg.inv(matrix[..., :2])
    return torch.cat([inverse, -(inverse @ matrix[..., 2:])], -1)


def apply(matrix: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Map points `[..., n, 2]` through poses `[..., 2, 3]`."""
    return points @ matrix[..., :2].transpose(-1, -2) + matrix[..., None, :, 2]
