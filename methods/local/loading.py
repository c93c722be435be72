"""Load local transformers checkpoints (directories or GGUF files) once per process.

Text checkpoints load with `AutoModelForCausalLM` and their tokenizer; image-text-to-text
checkpoints (see `vision.is_image_text_to_text`) with `AutoModelForImageTextToText` and their
`AutoProcessor`, whose tokenizer is then the model's tokenizer.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DTYPES = ("auto", "float32", "float16", "bfloat16")
#: `-M tokenizer=incbpe`: the checkpoint's own tokenizer on docket.methods.tokenization's core.
INCBPE = "incbpe"
_DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class CheckpointSpec:
    """Where a model lives and how to place it; also the cache key."""

    path: str
    gguf_file: str | None = None
    tokenizer: str | None = None
    device: str = "cpu"
    dtype: str = "float32"

    def describe(self) -> str:
        return str(Path(self.path) / self.gguf_file) if self.gguf_file else self.path


@dataclass
class LoadedModel:
    """A model and tokenizer (and a VLM's processor) plus the lock that serialises generation."""

    model: Any
    tokenizer: Any
    processor: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def reads_images(self) -> bool:
        """Whether the model takes images (an image-text-to-text checkpoint with a processor)."""
        return self.processor is not None


_CACHE: dict[CheckpointSpec, LoadedModel] = {}
#: Bumped whenever the dequantised copy's layout changes, so older copies are rebuilt (2: a
#: complete config.json with `architectures`, tied weights stored once, generation_config.json).
GGUF_CACHE_VERSION = 2
_CACHE_LOCK = threading.Lock()


def resolve_device(device: str | None) -> str:
    """`auto` (or None) -> cuda:0, mps or cpu, whichever is available."""
    if device not in (None, "auto"):
        assert device is not None
        if device.split(":")[0] not in ("cpu", "cuda", "mps"):
            raise ValueError(f"unknown device {device!r} (accepted: cpu, cuda[:N], mps, auto)")
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda:0"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def resolve_dtype(dtype: str | None, device: str) -> str:
    """A dtype name; by default float32 on CPU and bfloat16 on accelerators."""
    if dtype is None:
        return "float32" if device == "cpu" else "bfloat16"
    name = _DTYPE_ALIASES.get(dtype, dtype)
    if name not in DTYPES:
        accepted = ", ".join(DTYPES + tuple(_DTYPE_ALIASES))
        raise ValueError(f"unknown dtype {dtype!r} (accepted: {accepted})")
    return name


def load(spec: CheckpointSpec) -> LoadedModel:
    """The model for `spec`, loaded on first use and cached for the process."""
    with _CACHE_LOCK:
        if spec not in _CACHE:
            _CACHE[spec] = _load(spec)
        return _CACHE[spec]


def clear_cache() -> None:
    """Forget every loaded model (frees memory once no API holds one)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def gguf_cache_dir(spec: CheckpointSpec) -> Path | None:
    """Where the dequantised copy of a GGUF checkpoint is kept (None when caching is off).

    Dequantising a GGUF file takes tens of seconds on a CPU; the copy (safetensors plus
    tokenizer) loads in about a second. `DOCKET_CACHE` moves it, `DOCKET_GGUF_CACHE=0` turns it
    off. The key includes the file's size and mtime, so a replaced file is converted again,
    and `GGUF_CACHE_VERSION`, so copies written in an older layout are rebuilt.
    """
    own_tokenizer = spec.tokenizer and spec.tokenizer != INCBPE
    if not spec.gguf_file or os.environ.get("DOCKET_GGUF_CACHE", "1") == "0" or own_tokenizer:
        return None
    source = Path(spec.path) / spec.gguf_file
    stat = source.stat()
    root = Path(os.environ.get("DOCKET_CACHE", Path.home() / ".cache" / "docket"))
    key = f"{source.stem}-{stat.st_size}-{stat.st_mtime_ns}-{spec.dtype}-v{GGUF_CACHE_VERSION}"
    return root / "gguf" / key


def _load(spec: CheckpointSpec) -> LoadedModel:
    cache = gguf_cache_dir(spec)
    if cache is not None and (cache / "config.json").is_file():
        copy = CheckpointSpec(
            str(cache), tokenizer=spec.tokenizer, device=spec.device, dtype=spec.dtype
        )
        return _load_pretrained(copy)
    loaded = _load_pretrained(spec)
    if cache is not None:
        _save_copy(loaded, cache)
    return loaded


def _save_copy(loaded: LoadedModel, target: Path) -> None:
    """Write the model and tokenizer to `target` atomically; any failure only skips caching."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    except OSError:
        return
    try:
        _write_plain_checkpoint(loaded, staging)
        os.replace(staging, target)
    except (OSError, ValueError, RuntimeError):
        shutil.rmtree(staging, ignore_errors=True)
        return
    size = sum(f.stat().st_size for f in target.iterdir() if f.is_file())
    print(f"docket: wrote the dequantised copy to {target} ({size / 1e9:.2f} GB)", file=sys.stderr)


def _write_plain_checkpoint(loaded: LoadedModel, folder: Path) -> None:
    """Save a dequantised GGUF model as a complete transformers checkpoint.

    transformers refuses `save_pretrained` on GGUF-loaded models, although their weights are
    plain tensors after loading; so the weights, a config without the GGUF marker (with
    `architectures` set, which `from_pretrained` pipelines and `transformers serve` need), the
    generation config and the tokenizer are written directly. With `tie_word_embeddings` the
    output projection is the input embedding and is stored once, under the embedding's name.

    Args:
        loaded: The model loaded from the GGUF file.
        folder: An empty folder to write into.
    """
    from safetensors.torch import save_file

    model = loaded.model
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]
    state = model.state_dict()
    output_name = _output_weight_name(model)
    if output_name in state and _output_is_input_embedding(model):
        state.pop(output_name)  # from_pretrained ties it back to the embedding
        config["tie_word_embeddings"] = True
    seen: dict[int, str] = {}  # any other shared tensor is stored once, under its first name
    for name in list(state):
        pointer = state[name].data_ptr()
        if pointer in seen:
            state.pop(name)
        else:
            seen[pointer] = name
    tensors = {name: tensor.detach().contiguous() for name, tensor in state.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)


def _output_weight_name(model: Any) -> str | None:
    """The state-dict name of the output projection's weight (`lm_head.weight`), if any."""
    output = model.get_output_embeddings()
    for name, module in model.named_modules():
        if module is output:
            return f"{name}.weight"
    return None


def _output_is_input_embedding(model: Any) -> bool:
    """Whether the output projection is (tied to, or equal to) the input embedding."""
    import torch

    output, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    if output is None or embedding is None or output.weight.shape != embedding.weight.shape:
        return False
    if output.weight.data_ptr() == embedding.weight.data_ptr():
        return True
    return bool(torch.equal(output.weight, embedding.weight))


def _load_pretrained(spec: CheckpointSpec) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .vision import is_image_text_to_text

    dtype: Any = spec.dtype if spec.dtype == "auto" else getattr(torch, spec.dtype)
    if not spec.gguf_file and is_image_text_to_text(spec.path):
        return _load_image_text_to_text(spec, dtype)
    gguf = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    model: Any = AutoModelForCausalLM.from_pretrained(
        spec.path, dtype=dtype, local_files_only=True, **gguf
    )
    model.to(spec.device)
    model.eval()
    tokenizer: Any
    if spec.tokenizer and spec.tokenizer != INCBPE:
        tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer, local_files_only=True)
    else:
        tokenizer = AutoTokenizer.from_pretrained(spec.path, local_files_only=True, **gguf)
    if spec.tokenizer == INCBPE:  # the same tokenizer, encoding on the incremental BPE core
        from ..tokenization.hf import wrap

        tokenizer = wrap(tokenizer)
    return LoadedModel(model=model, tokenizer=tokenizer)


def _load_image_text_to_text(spec: CheckpointSpec, dtype: Any) -> LoadedModel:
    """A vision-language checkpoint with its processor; ValueError (one line) when it has no
    processor or no chat template to place images with."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    if spec.tokenizer:
        raise ValueError(
            f"docket/local: {spec.path} is an image-text-to-text checkpoint; its processor "
            "brings the tokenizer (drop -M tokenizer)"
        )
    unusable = f"docket/local: {spec.path} is an image-text-to-text checkpoint without a usable"
    try:
        processor = AutoProcessor.from_pretrained(spec.path, local_files_only=True)
    except (OSError, ValueError, TypeError) as ex:
        reason = (str(ex).splitlines() or [""])[0][:120]
        raise ValueError(f"{unusable} processor ({type(ex).__name__}: {reason})") from None
    missing = [
        part
        for part in ("image_processor", "tokenizer", "chat_template")
        if not getattr(processor, part, None)
    ]
    if missing:
        raise ValueError(f"{unusable} processor (it has no {', '.join(missing)})")
    model: Any = AutoModelForImageTextToText.from_pretrained(
        spec.path, dtype=dtype, local_files_only=True
    )
    model.to(spec.device)
    model.eval()
    return LoadedModel(model=model, tokenizer=processor.tokenizer, processor=processor)
