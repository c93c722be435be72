"""AffIn-Space on a LLaVA-style vision-language model (our reconstruction: code unreleased).

`AffinSpace` attaches to a LLaVA checkpoint without changing it, through hooks:

1. before the multimodal projector, a pose head reads the vision tower's patch-feature grid and
   predicts the view pose as decomposed quantities (cos, sin of the angle, log scales, shear,
   translation); the grid is resampled to the canonical frame (`ops.canonicalize`,
   `grid_sample`) — explicit geometric resampling before fusion;
2. in the chosen decoder layers of the language model, hidden states are projected off a
   pose subspace `U(p)` (`ops.PoseSubspace`, rank `pose_rank`);
3. training adds a pose loss (the renderer's pose as supervision, the role VGGT's camera
   predictions play in the paper) and a conditional reconstruction loss: the pose-free states
   at the image positions plus the pose must reconstruct the view-frame patch features.

Saved next to the checkpoint in `affin/`; `--model docket/local/DIR -M method=affin` serves it
(`-M affin=DIR2` points elsewhere). Without the method the same checkpoint runs as a plain
LLaVA, which is not what it was trained as.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from docket.methods.adaptation.plugin import decode_under, save_module, with_counters
from docket.methods.local.registry import method_plugin
from docket.methods.local.settings import knob
from docket.methods.spatial.affine import compose
from docket.methods.spatial.ops import (
    ConditionalReconstruction,
    PoseSubspace,
    canonicalize,
    pose_projection,
)

POSE_DIM = 7  # cos, sin, log sx, log sy, shear, tx, ty
CONFIG_FILE = "affin_config.json"
WEIGHTS_FILE = "affin.safetensors"


def pose_vector(params: torch.Tensor) -> torch.Tensor:
    """Pose features `[B, 7]` from decomposed parameters `[B, 6]` (the angle as cos, sin)."""
    angle, rest = params[..., 0], params[..., 1:]
    return torch.cat([torch.cos(angle)[..., None], torch.sin(angle)[..., None], rest], -1)


def pose_params(vector: torch.Tensor) -> torch.Tensor:
    """Decomposed parameters `[B, 6]` from pose features `[B, 7]`."""
    angle = torch.atan2(vector[..., 1], vector[..., 0])
    return torch.cat([angle[..., None], vector[..., 2:]], -1)


@dataclass(frozen=True)
class AffinConfig:
    """AffIn-Space knobs (docket's choices): pose-subspace rank, layers projected, loss weights."""

    pose_rank: int = 4
    layers: tuple[int, ...] = ()  # decoder layers whose outputs are projected; () = all
    canonicalize: bool = True
    project: bool = True
    lambda_pose: float = 1.0
    lambda_rec: float = 0.1

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AffinConfig:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["layers"] = tuple(values.get("layers", ()))
        return cls(**values)


class AffinSpace(nn.Module):
    """Pose head, pose subspace and reconstruction head for one backbone's sizes."""

    def __init__(self, config: AffinConfig, vision_hidden: int, lm_hidden: int, grid: int) -> None:
        super().__init__()
        self.config = config
        self.vision_hidden, self.lm_hidden, self.grid = vision_hidden, lm_hidden, grid
        reduced = max(1, grid // 2)
        self.pose_head = nn.Sequential(
            nn.Conv2d(vision_hidden, vision_hidden // 2, 3, stride=2, padding=1),
            nn.GELU(),
            nn.Flatten(),
            nn.Linear(vision_hidden // 2 * reduced * reduced, 2 * vision_hidden),
            nn.GELU(),
            nn.Linear(2 * vision_hidden, POSE_DIM),
        )
        self.subspace = PoseSubspace(POSE_DIM, lm_hidden, config.pose_rank)
        self.reconstruct = ConditionalReconstruction(lm_hidden, POSE_DIM, vision_hidden)

    @classmethod
    def for_model(cls, model: Any, config: AffinConfig) -> AffinSpace:
        """Sized for a LLaVA model (vision hidden size, LM hidden size, patch grid)."""
        vision = model.config.vision_config
        grid = vision.image_size // vision.patch_size
        return cls(config, vision.hidden_size, model.config.text_config.hidden_size, grid)

    def as_grid(self, features: torch.Tensor) -> torch.Tensor:
        """`[B, N, C]` patch features -> `[B, C, g, g]`."""
        n, count, channels = features.shape
        if count != self.grid * self.grid:
            raise ValueError(f"affin: {count} patches, expected a {self.grid}x{self.grid} grid")
        return features.transpose(1, 2).reshape(n, channels, self.grid, self.grid)

    def predict_pose(self, features: torch.Tensor) -> torch.Tensor:
        """Pose features `[B, 7]` read from the view's patch features `[B, N, C]`."""
        return self.pose_head(self.as_grid(features))

    def canonical(self, features: torch.Tensor, pose: torch.Tensor) -> torch.Tensor:
        """The patch features resampled to the canonical frame of `pose`."""
        matrices = compose(pose_params(pose))
        grid = canonicalize(self.as_grid(features), matrices)
        return grid.flatten(2).transpose(1, 2)


@dataclass
class AffinState:
    """What the hooks computed for the current batch (kept across decoding steps)."""

    pose: torch.Tensor | None = None
    basis: torch.Tensor | None = None
    view_features: torch.Tensor | None = None
    image_states: list[torch.Tensor] = field(default_factory=list)


def _decoder_layers(model: Any) -> list[nn.Module]:
    return list(model.model.language_model.layers)


@contextmanager
def affin_hooks(model: Any, affin: AffinSpace, state: AffinState) -> Iterator[AffinState]:
    """Run `model` (a LLaVA) with AffIn-Space: canonicalised image features and pose-projected
    decoder states; `state` records the pose, the basis and the view features."""
    config = affin.config

    def before_projector(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        features = args[0]
        pose = affin.predict_pose(features)
        state.pose, state.view_features = pose, features
        state.basis = affin.subspace(pose) if config.project else None
        if config.canonicalize:
            features = affin.canonical(features, pose)
        return (features, *args[1:])

    layers = _decoder_layers(model)
    chosen = [layers[i] for i in config.layers] if config.layers else layers
    handle = model.model.multi_modal_projector.register_forward_pre_hook(before_projector)
    try:
        with pose_projection(chosen, lambda: state.basis):
            yield state
    finally:
        handle.remove()


def save_affin(affin: AffinSpace, out: Path) -> Path:
    """Write `affin_config.json` and `affin.safetensors` to `out`."""
    meta = {
        "config": asdict(affin.config),
        "vision_hidden": affin.vision_hidden,
        "lm_hidden": affin.lm_hidden,
        "grid": affin.grid,
    }
    return save_module(affin, meta, out, CONFIG_FILE, WEIGHTS_FILE)


def load_affin(folder: Path, model: Any) -> AffinSpace:
    """The AffIn-Space modules saved in `folder`, checked against `model` (ValueError, one line)."""
    from safetensors.torch import load_file

    if not (folder / CONFIG_FILE).is_file() or not (folder / WEIGHTS_FILE).is_file():
        raise ValueError(f"affin: no trained AffIn-Space modules in {folder}")
    meta = json.loads((folder / CONFIG_FILE).read_text())
    affin = AffinSpace(
        AffinConfig.from_dict(meta["config"]),
        int(meta["vision_hidden"]),
        int(meta["lm_hidden"]),
        int(meta["grid"]),
    )
    expected = AffinSpace.for_model(model, affin.config)
    sizes = (affin.vision_hidden, affin.lm_hidden, affin.grid)
    if sizes != (expected.vision_hidden, expected.lm_hidden, expected.grid):
        raise ValueError(f"affin: the modules in {folder} were trained for another model")
    affin.load_state_dict(load_file(str(folder / WEIGHTS_FILE)))
    return affin.to(next(model.parameters()).device).eval()


# --- docket/local plugin ------------------------------------------------------------------


@dataclass(frozen=True)
class AffinKnobs:
    """The knobs of `-M method=affin`."""

    affin: str | None = knob(None, "the trained AffIn-Space folder (default: <model>/affin)")


@method_plugin(
    "affin", AffinKnobs, "AffIn-Space: canonicalised image features and pose-projected states"
)
def _build(loaded: Any, knobs: AffinKnobs) -> Any:
    if not loaded.reads_images:
        raise ValueError("docket/local -M method=affin needs a vision-language checkpoint")
    model = loaded.model
    folder = Path(str(knobs.affin or Path(str(model.name_or_path)) / "affin"))
    affin = load_affin(folder, model)

    def decode(model: Any, tokenizer: Any, prompt: list[int], params: Any, n: int) -> list[Any]:
        state = AffinState()
        started = time.perf_counter()
        with torch.no_grad():
            generations = decode_under(
                affin_hooks(model, affin, state), model, tokenizer, prompt, params, n
            )
        counters: dict[str, Any] = {"affin_seconds": round(time.perf_counter() - started, 6)}
        if state.pose is not None:
            predicted = pose_params(state.pose)[0]
            counters["pose"] = [round(float(v), 4) for v in predicted]
        return with_counters(generations, counters)

    return decode
