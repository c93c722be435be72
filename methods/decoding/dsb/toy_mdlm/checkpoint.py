"""Toy mask-predictor checkpoint directories: `config.json` + `model.safetensors` + tokenizer.

A directory written by `save` is what `docket/local/DIR -M method=dsb` loads (`config.json`
has `model_type: docket_toy_mdlm`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MODEL_TYPE = "docket_toy_mdlm"


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
    """(model, tokenizer) of a toy checkpoint directory, in eval mode on `device`."""
    import torch
    from safetensors.torch import load_model
    from transformers import PreTrainedTokenizerFast

    from .model import ToyConfig, ToyMaskPredictor

    folder = Path(path)
    config = ToyConfig.from_json(json.loads((folder / "config.json").read_text()))
    model = ToyMaskPredictor(config)
    load_model(model, str(folder / "model.safetensors"))
    if dtype not in ("auto", "float32"):
        model.to(getattr(torch, dtype))
    model.to(device)
    model.eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder), local_files_only=True)
    return model, tokenizer
