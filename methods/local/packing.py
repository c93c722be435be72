"""oneDNN-prepacked weights for the linear layers of a float32 model on the CPU.

On a CPU, torch computes `nn.Linear` with MKL's sgemm on the dense `[out, in]` weight. For the
few rows a decoding step feeds (one token per sequence, plus draft tokens) that path is far
from the machine's speed: on one AMD EPYC (Zen 4) core, Qwen2.5-0.5B's output projection
(151 936 x 896) takes ~104 ms for 5 rows through `F.linear` and ~31 ms through oneDNN with the
weight reordered once into its blocked layout (`torch.ops.mkldnn._reorder_linear_weight`, then
`_linear_pointwise`, the kernels torch's own compiler uses for CPU inference); the MLP's
projections run 2-3x faster likewise. The result is the same matrix product in float32 (only
the order of the sums differs: a few units in the last place), so greedy decoding is
unchanged; the tests compare against the dense model.

`LinearPacker(model)` keeps a packed copy of every float32 CPU `nn.Linear` weight of a model
(packed on first use, packed again when the weight changes in place or is replaced), and
`packer.active()` routes those layers through the packed weights for the duration of a block:
the decoding engine wraps its forward passes in it, so nothing else that uses the model is
affected. Inside the block, a call with gradients enabled, or on anything but a float32 CPU
tensor, still takes the dense path.

The copy costs the weights' size again in memory. `DOCKET_LOCAL_PACK`: `auto` (the default)
packs when the copy fits in half of the memory available when the engine starts, `1` always,
`0` never.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

PACK_ENV = "DOCKET_LOCAL_PACK"
PACK_MODES = ("auto", "0", "1")


def pack_mode() -> str:
    """The packing mode from `DOCKET_LOCAL_PACK` (`auto`, `0` or `1`; unset: `auto`).

    Returns:
        The mode.

    Raises:
        ValueError: Any other value (one line).
    """
    raw = os.environ.get(PACK_ENV, "").strip().lower() or "auto"
    if raw not in PACK_MODES:
        raise ValueError(f"{PACK_ENV}={raw!r}: expected one of {', '.join(PACK_MODES)}")
    return raw


def packing_supported() -> bool:
    """Whether this torch build has the oneDNN linear kernels with prepacked weights.

    Returns:
        True when `torch.ops.mkldnn._reorder_linear_weight` and `_linear_pointwise` exist and
        oneDNN is usable.
    """
    import torch

    if not torch.backends.mkldnn.is_available():
        return False
    ops = torch.ops.mkldnn
    try:
        return bool(ops._reorder_linear_weight) and bool(ops._linear_pointwise)
    except (AttributeError, RuntimeError):
        return False


def packable_linears(model: Any) -> list[Any]:
    """The model's `nn.Linear` layers whose weights can be packed.

    A layer qualifies when its weight is a float32 tensor on the CPU and it has no forward of
    its own already (an accelerate hook, say).

    Args:
        model: A torch module.

    Returns:
        The layers, in module order.
    """
    import torch
    from torch import nn

    layers = []
    for module in model.modules():
        if not isinstance(module, nn.Linear) or "forward" in module.__dict__:
            continue
        weight = module.weight
        if weight.dtype == torch.float32 and weight.device.type == "cpu" and weight.dim() == 2:
            layers.append(module)
    return layers


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (`MemAvailable`), or None if unknown.

    Returns:
        The bytes, or None off Linux.
    """
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def packer_for(model: Any, mode: str | None = None) -> LinearPacker | None:
    """A packer for the model's linear layers, or None where packing is off or cannot help.

    Args:
        model: The causal LM.
        mode: `auto`, `0` or `1` (None: `pack_mode()`).

    Returns:
        The packer, or None (mode `0`, no oneDNN, no float32 CPU linear layer, or, in `auto`,
        a copy larger than half the available memory).
    """
    mode = pack_mode() if mode is None else mode
    if mode == "0" or not packing_supported():
        return None
    packer = LinearPacker(model)
    if not packer.layers:
        return None
    if mode == "auto":
        free = available_memory()
        if free is None or packer.bytes() > free // 2:
            return None
    return packer


class LinearPacker:
    """Packed copies of a model's float32 CPU linear weights, used inside `active()`.

    Args:
        model: A torch module (its packable layers: `packable_linears`).
    """

    def __init__(self, model: Any) -> None:
        self.layers = packable_linears(model)
        #: id(layer) -> (the weight's identity and version when packed, the packed weight)
        self._packed: dict[int, tuple[tuple[int, int, int], Any]] = {}
        #: Layer calls that took the packed path, and weights packed (again), since creation.
        self.packed_calls = 0
        self.packs = 0

    def bytes(self) -> int:
        """The memory the packed copies take (about the weights' own size).

        Returns:
            Bytes.
        """
        return sum(layer.weight.numel() * layer.weight.element_size() for layer in self.layers)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Route the layers through their packed weights until the block ends.

        Yields:
            Nothing; each layer's own forward is back on exit.
        """
        for layer in self.layers:
            layer.forward = self._forward(layer)
        try:
            yield
        finally:
            for layer in self.layers:
                layer.__dict__.pop("forward", None)

    def _forward(self, layer: Any) -> Any:
        import torch
        import torch.nn.functional as F

        def forward(x: Any) -> Any:
            weight = layer.weight
            if (
                torch.is_grad_enabled()
                or x.dtype != torch.float32
                or x.device.type != "cpu"
                or weight.dtype != torch.float32
                or weight.device.type != "cpu"
            ):
                return F.linear(x, weight, layer.bias)
            self.packed_calls += 1
            return torch.ops.mkldnn._linear_pointwise(
                x, self.packed(layer), layer.bias, "none", [None], ""
            )

        return forward

    def packed(self, layer: Any) -> Any:
        """The layer's packed weight, packed again if the weight changed since.

        Args:
            layer: One of `layers`.

        Returns:
            The oneDNN tensor.
        """
        import torch

        weight = layer.weight
        key = (id(weight), weight.data_ptr(), weight._version)
        kept = self._packed.get(id(layer))
        if kept is not None and kept[0] == key:
            return kept[1]
        with torch.no_grad():
            packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None)
        self._packed[id(layer)] = (key, packed)
        self.packs += 1
        return packed
