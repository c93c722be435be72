"""Toy mask-predictor checkpoint directories: `config.json` + `model.safetensors` + tokenizer.

A directory written by `save` is what `docket/local/DIR -M method=dsb` loads (`config.json`
has `model_type: docket_toy_mdlm`). `write_sums` adds `SHA256SUMS` (the `sha256sum` format,
one line per file); `load` checks it before loading when the directory has one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

MODEL_TYPE = "docket_toy_mdlm"

#: The checksum file of a checkpoint directory (`sha256sum -c SHA256SUMS` reads it too).
SUMS = "SHA256SUMS"


class ChecksumMismatch(ValueError):
    """A checkpoint file is missing or its sha256 is not the one `SHA256SUMS` records."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sums(folder: str | Path) -> Path:
    """Record the sha256 of every file of a checkpoint directory in its `SHA256SUMS`.

    Args:
        folder: The checkpoint directory (flat: files only).

    Returns:
        The path of the `SHA256SUMS` file written.
    """
    root = Path(folder)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.name != SUMS)
    sums = root / SUMS
    sums.write_text("".join(f"{_sha256(p)}  {p.name}\n" for p in files))
    return sums


def verify_sums(folder: str | Path, required: bool = False) -> bool:
    """Check every file `SHA256SUMS` lists against its recorded sha256.

    Args:
        folder: The checkpoint directory.
        required: Whether a directory without `SHA256SUMS` is an error.

    Returns:
        True when the sums were checked, False when there are none (and none are required).

    Raises:
        ChecksumMismatch: A listed file is missing or differs, `SHA256SUMS` lists neither the
            weights nor the config, or it is missing and `required`.
    """
    root = Path(folder)
    sums = root / SUMS
    if not sums.is_file():
        if required:
            raise ChecksumMismatch(f"{root}: no {SUMS}; the checkpoint cannot be verified")
        return False
    recorded: dict[str, str] = {}
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        recorded[name] = digest
    for needed in ("config.json", "model.safetensors"):
        if needed not in recorded:
            raise ChecksumMismatch(f"{sums} does not list {needed}")
    for name, digest in recorded.items():
        path = root / name
        if not path.is_file():
            raise ChecksumMismatch(f"{path}: listed in {SUMS} but missing")
        if _sha256(path) != digest:
            raise ChecksumMismatch(f"{path}: sha256 differs from {SUMS}; the file is corrupt")
    return True


def is_toy_checkpoint(path: str | Path) -> bool:
    """Whether `path/config.json` names the toy mask predictor."""
    config = Path(path) / "config.json"
    try:
        return bool(json.loads(config.read_text()).get("model_type") == MODEL_TYPE)
    except (OSError, ValueError, AttributeError):
        return False


def save(model: Any, tokenizer: Any, out: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write the model (config + safetensors) and tokenizer to `out`; return `out`."""
    from safetensors.torch import save_model

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    config = {**model.config.to_json(), **(extra or {})}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_model(model, str(folder / "model.safetensors"))
    tokenizer.save_pretrained(folder)
    return folder


def load(path: str | Path, device: str = "cpu", dtype: str = "float32") -> tuple[Any, Any]:
    """(model, tokenizer) of a toy checkpoint directory, in eval mode on `device`.

    Args:
        path: The checkpoint directory; its `SHA256SUMS`, when present, is checked first.
        device: Torch device to move the model to.
        dtype: "float32" (the saved weights), "auto" (the same) or a torch dtype name.

    Returns:
        The model and its tokenizer.

    Raises:
        ChecksumMismatch: A file differs from the sums recorded with the checkpoint.
    """
    import torch
    from safetensors.torch import load_model
    from transformers import PreTrainedTokenizerFast

    from .model import ToyConfig, ToyMaskPredictor

    folder = Path(path)
    verify_sums(folder)
    config = ToyConfig.from_json(json.loads((folder / "config.json").read_text()))
    model = ToyMaskPredictor(config)
    load_model(model, str(folder / "model.safetensors"))
    if dtype not in ("auto", "float32"):
        model.to(getattr(torch, dtype))
    model.to(device)
    model.eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder), local_files_only=True)
    return model, tokenizer
