"""LoRA bookkeeping shared by SHINE: which linears of each decoder layer are adapted, how a flat
per-layer parameter vector splits into their A and B factors, a functional per-sample LoRA
applied through forward hooks, and export of one generated adapter as a PEFT LoRA.

Shapes follow the SHINE release: for a linear `in -> out` the adapter is `A (in x r)` and
`B (r x out)` and the update is `x A B`; a batch of adapters carries a leading batch axis, so
every sample of a batch can carry its own adapter (PEFT has one adapter per forward pass).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

#: The linears SHINE adapts in every decoder layer (Llama/Qwen naming), in generation order.
DEFAULT_TARGETS: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)

#: One adapter per module path: (A [n, in, r], B [n, r, out]); n is the batch size or 1.
Adapters = dict[str, tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class LoraTarget:
    """One adapted linear of a decoder layer: its path inside the layer and its shape."""

    name: str
    in_features: int
    out_features: int

    def numel(self, rank: int) -> int:
        """Parameters of its LoRA factors A (in x r) and B (r x out)."""
        return rank * (self.in_features + self.out_features)


@dataclass(frozen=True)
class LoraLayout:
    """The adapted linears of every decoder layer and the LoRA rank."""

    layers_path: str
    num_layers: int
    targets: tuple[LoraTarget, ...]
    rank: int

    @property
    def numel_per_layer(self) -> int:
        """LoRA parameters of one decoder layer (all its targets)."""
        return sum(t.numel(self.rank) for t in self.targets)

    @property
    def numel(self) -> int:
        """LoRA parameters of the whole model."""
        return self.numel_per_layer * self.num_layers

    def memory_tokens(self, hidden_size: int, *, pad: bool = False) -> int:
        """Memory tokens M such that M x hidden_size holds one layer's LoRA parameters.

        SHINE sizes M = numel_per_layer / hidden_size exactly (Qwen3-8B, r=8: 148). A layout that
        does not divide is an error unless `pad` (our knob): then M rounds up and the tail of
        each layer's vector is unused.
        """
        count, rest = divmod(self.numel_per_layer, hidden_size)
        if rest and not pad:
            raise ValueError(
                f"LoRA parameters per layer ({self.numel_per_layer}) are not a multiple of the "
                f"hidden size ({hidden_size}); choose another rank or targets, or pad"
            )
        return count + (1 if rest else 0)

    def module_path(self, layer: int, target: LoraTarget) -> str:
        """The module name of `target` in decoder layer `layer`."""
        return f"{self.layers_path}.{layer}.{target.name}"

    def paths(self) -> list[str]:
        """Every adapted module name, layer by layer in target order."""
        return [self.module_path(i, t) for i in range(self.num_layers) for t in self.targets]

    def split(self, vectors: torch.Tensor, scale: float) -> Adapters:
        """Per-module adapters from per-layer vectors `[n, L, >= numel_per_layer]`.

        Each layer's vector is read in target order as `[A (in*r) | B (r*out)]` blocks; both
        factors are multiplied by sqrt(scale), so the update is `scale * (x A) B`.
        """
        if vectors.dim() != 3 or vectors.shape[1] != self.num_layers:
            raise ValueError(
                f"expected [n, {self.num_layers}, d] vectors, got {tuple(vectors.shape)}"
            )
        if vectors.shape[2] < self.numel_per_layer:
            raise ValueError(
                f"per-layer vectors hold {vectors.shape[2]} values; {self.numel_per_layer} needed"
            )
        root = scale**0.5
        n, r = vectors.shape[0], self.rank
        adapters: Adapters = {}
        for layer in range(self.num_layers):
            offset = 0
            for target in self.targets:
                a_size, b_size = target.in_features * r, r * target.out_features
                a = vectors[:, layer, offset : offset + a_size].reshape(n, target.in_features, r)
                offset += a_size
                b = vectors[:, layer, offset : offset + b_size].reshape(n, r, target.out_features)
                offset += b_size
                adapters[self.module_path(layer, target)] = (a * root, b * root)
        return adapters

    def to_dict(self) -> dict[str, object]:
        return {
            "layers_path": self.layers_path,
            "num_layers": self.num_layers,
            "rank": self.rank,
            "targets": [[t.name, t.in_features, t.out_features] for t in self.targets],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> LoraLayout:
        targets = data["targets"]
        assert isinstance(targets, list)
        return cls(
            layers_path=str(data["layers_path"]),
            num_layers=int(str(data["num_layers"])),
            targets=tuple(LoraTarget(str(n), int(i), int(o)) for n, i, o in targets),
            rank=int(str(data["rank"])),
        )


def decoder_layers(model: nn.Module) -> tuple[str, nn.ModuleList]:
    """The module path and list of a causal LM's decoder layers (the longest ModuleList whose
    length is the config's `num_hidden_layers`)."""
    expected = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    found = [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) > 0
    ]
    if expected is not None:
        found = [(n, m) for n, m in found if len(m) == expected]
    if not found:
        raise ValueError(f"{type(model).__name__}: no list of decoder layers found")
    return min(found, key=lambda item: item[0].count("."))


def layout_for(model: nn.Module, rank: int, targets: Sequence[str] = DEFAULT_TARGETS) -> LoraLayout:
    """The LoRA layout of `model`'s decoder layers for the linears named `targets` (suffixes)."""
    if rank < 1:
        raise ValueError(f"LoRA rank must be at least 1, not {rank}")
    path, layers = decoder_layers(model)
    found: list[LoraTarget] = []
    for wanted in targets:
        matches = [
            (name, module)
            for name, module in layers[0].named_modules()
            if isinstance(module, nn.Linear) and (name == wanted or name.endswith("." + wanted))
        ]
        if len(matches) != 1:
            raise ValueError(f"target {wanted!r} matches {len(matches)} linears in a decoder layer")
        name, linear = matches[0]
        found.append(LoraTarget(name, linear.in_features, linear.out_features))
    return LoraLayout(path, len(layers), tuple(found), rank)


def lora_delta(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`x A B` with one adapter per sample (`a` [n, in, r], `b` [n, r, out], n = batch or 1)."""
    a, b = a.to(x.dtype), b.to(x.dtype)
    if a.shape[0] == 1:
        return (x @ a[0]) @ b[0]
    if x.shape[0] != a.shape[0]:
        raise ValueError(f"{x.shape[0]} inputs but {a.shape[0]} adapters")
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    return ((flat @ a) @ b).reshape(*x.shape[:-1], b.shape[-1])


@contextmanager
def functional_lora(model: nn.Module, adapters: Adapters) -> Iterator[None]:
    """Add `x A B` to the output of every adapted linear while the block runs.

    Forward hooks leave the model's weights untouched, so gradients flow to whatever produced
    the adapters and nested blocks add their updates (SHINE's meta-LoRA during memory
    extraction, a generated adapter when answering).
    """
    modules = dict(model.named_modules())
    missing = [path for path in adapters if path not in modules]
    if missing:
        raise ValueError(f"no module {missing[0]!r} in {type(model).__name__}")
    handles = []

    def hook_for(a: torch.Tensor, b: torch.Tensor):  # type: ignore[no-untyped-def]
        def hook(module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor):  # type: ignore[no-untyped-def]
            return output + lora_delta(args[0], a, b)

        return hook

    try:
        for path, (a, b) in adapters.items():
            handles.append(modules[path].register_forward_hook(hook_for(a, b)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def select(adapters: Adapters, index: int) -> Adapters:
    """The adapter of sample `index` of a batch (kept as a batch of one)."""
    return {path: (a[index : index + 1], b[index : index + 1]) for path, (a, b) in adapters.items()}


def peft_target_regex(layout: LoraLayout) -> str:
    """A PEFT `target_modules` regex matching exactly the layout's modules (full names)."""
    names = "|".join(re.escape(t.name) for t in layout.targets)
    return rf"{re.escape(layout.layers_path)}\.\d+\.(?:{names})"


def export_peft(adapters: Adapters, layout: LoraLayout, out: Path) -> Path:
    """Write one adapter (batch of one) as a PEFT LoRA directory that `PeftModel` loads.

    `lora_A.weight = Aᵀ`, `lora_B.weight = Bᵀ` and `lora_alpha = r` (scaling 1): the scale was
    folded into A and B when they were generated, so PEFT's forward equals the functional one.
    """
    from peft import LoraConfig
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for path in layout.paths():
        if path not in adapters:
            raise ValueError(f"adapter for {path} missing")
        a, b = adapters[path]
        if a.shape[0] != 1:
            raise ValueError(f"export takes one adapter, not a batch of {a.shape[0]}")
        key = f"base_model.model.{path}"
        tensors[f"{key}.lora_A.weight"] = a[0].detach().T.contiguous().float().cpu()
        tensors[f"{key}.lora_B.weight"] = b[0].detach().T.contiguous().float().cpu()
    config = LoraConfig(
        r=layout.rank,
        lora_alpha=layout.rank,
        lora_dropout=0.0,
        bias="none",
        target_modules=peft_target_regex(layout),
        task_type="CAUSAL_LM",
    )
    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(str(out))
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "shine_layout.json").write_text(json.dumps(layout.to_dict(), indent=2))
    return out
