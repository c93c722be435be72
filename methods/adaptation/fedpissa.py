"""FedPissa: personalised federated fine-tuning with a single PiSSA-initialised LoRA.

Only the abstract is available (ICML 2026 poster 63191); what it states is implemented, the
rest is our reconstruction, each piece a switch:

- PiSSA initialisation through PEFT (`LoraConfig(init_lora_weights="pissa")`): for a frozen
  `W = U S Vᵀ`, `A = S_r^½ V_rᵀ`, `B = U_r S_r^½`, and the base becomes `W − B A`
  (`pissa_factors` is the reference the tests hold PEFT to).
- Selective aggregation of LoRA components by their aggregation dynamics (ours): a component is
  one LoRA matrix of one module (a PEFT state-dict key). Every round each client also sends a
  small random sketch of its update of *every* component (a Gaussian Johnson-Lindenstrauss
  projection seeded by the component's name, so all clients share it and cosines are
  preserved). For each client the server measures its agreement with the rest of the
  federation, the cosine between its sketch and the weighted sum of the others' sketches
  (`leave_one_out_agreement`). A component is shared next round only when *every* client's
  agreement exceeds `null_agreement_threshold(dim, false_share)`: the upper `false_share`
  quantile of the cosine of two independent isotropic Gaussian vectors of the sketch's
  dimension, which is exactly the law of the sketch cosine of two orthogonal updates
  (`(1 + c) / 2 ~ Beta((d − 1) / 2, (d − 1) / 2)`, spread ≈ 1/√d). So a client whose update
  is unrelated to the others' gets the component averaged anyway with probability at most
  `false_share`, and one whose update conflicts with them (negative cosine) keeps it private
  for everyone. The first round follows FedSA-LoRA's prior (A shared, B private).
- Decorrelated subspace projection of personal updates (ours): a private component's update
  is projected off the subspace of its latest global version known to the client (the PiSSA
  principal subspace until it was ever shared): `ΔB ← (I − QQᵀ) ΔB` with `Q = qr(B_ref)`, and
  `ΔA ← ΔA (I − QQᵀ)` with `Q = qr(A_refᵀ)`, so personal changes do not fight the shared
  directions.
- Private parts stay on the client: the server sees shared components and sketches only.

Arrays are numpy; keys are PEFT state-dict keys (`...q_proj.lora_A.weight`).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

Arrays = dict[str, np.ndarray]


def is_lora_a(key: str) -> bool:
    """Whether `key` names a LoRA A matrix (PEFT's `lora_A`)."""
    return ".lora_A." in key or key.endswith(".lora_A")


def is_lora_b(key: str) -> bool:
    """Whether `key` names a LoRA B matrix (PEFT's `lora_B`)."""
    return ".lora_B." in key or key.endswith(".lora_B")


def pissa_factors(weight: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PiSSA of `weight` (out x in): `A` (r x in), `B` (out x r) and the residual `W − B A`."""
    u, s, vt = np.linalg.svd(weight.astype(np.float64), full_matrices=False)
    root = np.sqrt(s[:rank])
    a = root[:, None] * vt[:rank]
    b = u[:, :rank] * root[None, :]
    return a, b, weight - b @ a


def fedsa_prior(keys: Iterable[str]) -> set[str]:
    """FedSA-LoRA's split as the first round's shared set: the A matrices (B stays private)."""
    return {key for key in keys if is_lora_a(key)}


def weighted_average(
    updates: Sequence[Mapping[str, np.ndarray]], weights: Sequence[float]
) -> Arrays:
    """FedAvg: the `weights`-weighted mean of each key over the clients that sent it."""
    if len(updates) != len(weights) or not updates:
        raise ValueError(f"{len(updates)} updates and {len(weights)} weights")
    keys = set().union(*(u.keys() for u in updates))
    averaged: Arrays = {}
    for key in sorted(keys):
        pairs = [(u[key], w) for u, w in zip(updates, weights, strict=True) if key in u]
        total = sum(w for _, w in pairs)
        if total <= 0:
            raise ValueError(f"weights of {key} sum to {total}")
        weighted = np.stack([np.asarray(v, np.float64) * (w / total) for v, w in pairs])
        averaged[key] = weighted.sum(axis=0).astype(pairs[0][0].dtype)
    return averaged


def sketch(delta: np.ndarray, dim: int, key: str, seed: int = 0) -> np.ndarray:
    """A `dim`-value Gaussian random projection of `delta`, the same matrix on every client
    (seeded by the component name), so sketch cosines estimate update cosines."""
    flat = np.asarray(delta, np.float64).ravel()
    rng = np.random.default_rng([zlib.crc32(key.encode()), seed])
    projection = rng.standard_normal((dim, flat.size)) / np.sqrt(dim)
    return (projection @ flat).astype(np.float32)


def agreement(vectors: Sequence[np.ndarray]) -> float:
    """Mean pairwise cosine similarity of the clients' update vectors (0 for fewer than two,
    and 0 for a pair where either is zero); reported, not used by the selection rule."""
    flat = [np.asarray(v, np.float64).ravel() for v in vectors]
    pairs = list(itertools.combinations(flat, 2))
    if not pairs:
        return 0.0
    return float(np.mean([_cosine(x, y) for x, y in pairs]))


def _cosine(x: np.ndarray, y: np.ndarray) -> float:
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm > 0 else 0.0


def leave_one_out_agreement(
    vectors: Sequence[np.ndarray], weights: Sequence[float] | None = None
) -> np.ndarray:
    """Each client's agreement with the rest: `cos(v_i, Σ_{j≠i} w_j v_j)`.

    Args:
        vectors: one update (or sketch) per client, all of one shape.
        weights: the clients' FedAvg weights (default: equal).

    Returns:
        One cosine per client (0 where its vector or the others' sum is zero); an empty array
        for fewer than two clients.
    """
    flat = np.stack([np.asarray(v, np.float64).ravel() for v in vectors]) if vectors else None
    if flat is None or len(flat) < 2:
        return np.zeros(0)
    w = np.ones(len(flat)) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (len(flat),):
        raise ValueError(f"{len(flat)} vectors and {w.size} weights")
    total = (w[:, None] * flat).sum(axis=0)
    return np.array([_cosine(v, total - wi * v) for v, wi in zip(flat, w, strict=True)])


def null_agreement_threshold(dim: int, false_share: float) -> float:
    """The cosine that two orthogonal updates' `dim`-value sketches exceed with probability
    `false_share`.

    Sketches of orthogonal updates under one Gaussian projection are independent isotropic
    Gaussian vectors, whose cosine `c` has `(1 + c) / 2 ~ Beta((dim − 1) / 2, (dim − 1) / 2)`
    (mean 0, variance 1/dim).

    Args:
        dim: values per sketch (at least 2).
        false_share: the accepted probability of reading an unrelated update as agreeing.

    Returns:
        The threshold in (−1, 1).
    """
    from scipy.stats import beta

    if dim < 2:
        raise ValueError(f"sketch dimension {dim} < 2: no cosine null")
    if not 0.0 < false_share < 1.0:
        raise ValueError(f"false_share {false_share} outside (0, 1)")
    half = (dim - 1) / 2.0
    return float(2.0 * beta.isf(false_share, half, half) - 1.0)


@dataclass
class AgreementSelector:
    """Which components are aggregated next round (our reconstruction of FedPissa's selective
    aggregation): those every client's leave-one-out agreement exceeds `threshold` on.

    `shared_now` starts at the prior (FedSA-LoRA: the A matrices); `history` keeps, per round,
    each component's lowest client agreement and the set shared next.
    """

    shared_now: set[str]
    threshold: float
    history: list[dict[str, object]] = field(default_factory=list)

    def update(
        self,
        sketches: Mapping[str, Sequence[np.ndarray]],
        weights: Sequence[float] | None = None,
    ) -> list[str]:
        """Fold in one round's sketches (per component, one per client); return the
        components shared next round, sorted. With fewer than two clients nothing changes."""
        agreements = {k: leave_one_out_agreement(v, weights) for k, v in sketches.items()}
        if any(a.size == 0 for a in agreements.values()):
            return self.shared()
        self.shared_now = {k for k, a in agreements.items() if float(a.min()) > self.threshold}
        self.history.append(
            {
                "min_agreement": {k: float(a.min()) for k, a in sorted(agreements.items())},
                "mean_agreement": {k: float(a.mean()) for k, a in sorted(agreements.items())},
                "shared_next": self.shared(),
            }
        )
        return self.shared()

    def shared(self) -> list[str]:
        """The components shared next round, sorted."""
        return sorted(self.shared_now)


def orthonormal_basis(reference: np.ndarray, key: str) -> np.ndarray:
    """An orthonormal basis of the subspace a component's updates must avoid: the column
    space of B (out x r) or the row space of A (r x in)."""
    matrix = np.asarray(reference, np.float64)
    q, _ = np.linalg.qr(matrix.T if is_lora_a(key) else matrix)
    return q


def project_out(delta: np.ndarray, reference: np.ndarray, key: str) -> np.ndarray:
    """The decorrelated update: `(I − QQᵀ) ΔB` for B, `ΔA (I − QQᵀ)` for A, `Q` spanning
    the reference's column (B) or row (A) space."""
    q = orthonormal_basis(reference, key)
    d = np.asarray(delta, np.float64)
    projected = d - (d @ q) @ q.T if is_lora_a(key) else d - q @ (q.T @ d)
    return projected.astype(np.asarray(delta).dtype)


def nbytes(arrays: Mapping[str, np.ndarray]) -> int:
    """Bytes of the array payloads (what a message carries besides its keys)."""
    return int(sum(np.asarray(v).nbytes for v in arrays.values()))
