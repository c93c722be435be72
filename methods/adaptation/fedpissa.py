"""FedPissa: personalised federated fine-tuning with a single PiSSA-initialised LoRA.

Only the abstract is available (ICML 2026 poster 63191); what it states is implemented, the
rest is our reconstruction, each piece a switch:

- PiSSA initialisation through PEFT (`LoraConfig(init_lora_weights="pissa")`): for a frozen
  `W = U S Vᵀ`, `A = S_r^½ V_rᵀ`, `B = U_r S_r^½`, and the base becomes `W − B A`
  (`pissa_factors` is the reference the tests hold PEFT to).
- Selective aggregation of LoRA components by their aggregation dynamics (ours): a component is
  one LoRA matrix of one module (a PEFT state-dict key). Every round each client also sends a
  small random sketch of its update of *every* component (a Johnson-Lindenstrauss projection
  seeded by the component's name, so all clients share it and cosines are preserved); the
  server measures cross-client agreement (mean pairwise cosine of the sketches), keeps an
  exponential moving average per component, and shares next round exactly the components
  whose average is at least `tau`. The prior is FedSA-LoRA's finding (A general, B
  client-specific): the averages start at 1 for A matrices and 0 for B matrices.
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


def fedsa_prior(keys: Iterable[str]) -> dict[str, float]:
    """FedSA-LoRA's prior as initial agreement: 1 for A matrices (shared), 0 for B (private)."""
    return {key: 1.0 if is_lora_a(key) else 0.0 for key in keys}


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
    and 0 for a pair where either is zero)."""
    flat = [np.asarray(v, np.float64).ravel() for v in vectors]
    pairs = list(itertools.combinations(flat, 2))
    if not pairs:
        return 0.0
    total = 0.0
    for x, y in pairs:
        norm = float(np.linalg.norm(x) * np.linalg.norm(y))
        total += float(x @ y) / norm if norm > 0 else 0.0
    return total / len(pairs)


@dataclass
class AgreementTracker:
    """Exponential moving average of cross-client agreement per component, and the rule
    `shared = {c : ema(c) >= tau}` (our reconstruction)."""

    ema: dict[str, float]
    beta: float = 0.5  # weight of the previous average
    tau: float = 0.3
    history: list[dict[str, float]] = field(default_factory=list)

    def update(self, agreements: Mapping[str, float]) -> None:
        """Fold in one round's agreement values."""
        for key, value in agreements.items():
            previous = self.ema.get(key, 0.0)
            self.ema[key] = self.beta * previous + (1.0 - self.beta) * float(value)
        self.history.append(dict(agreements))

    def shared(self) -> list[str]:
        """The components shared next round, sorted."""
        return sorted(key for key, value in self.ema.items() if value >= self.tau)


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
