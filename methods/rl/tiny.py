"""Saving and loading the RL policy's checkpoint.

The toy policy is `docket.core.tiny_models.tiny_llama` with `alphabet_tokenizer` (the toy
model is trained on bare prompts; system turns are not rendered). Saved with
`save_pretrained`, the pair loads with `AutoModelForCausalLM` / `AutoTokenizer`, so
`docket/local/PATH` serves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_checkpoint(model: Any, tokenizer: Any, folder: Path) -> Path:
    """Write model and tokenizer to `folder` (a checkpoint `docket/local/<folder>` loads)."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def load_checkpoint(folder: str | Path, device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) from a local checkpoint directory or, online, a Hub id."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local = Path(folder).is_dir()
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=local)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, local_files_only=local)
    model.to(device)  # type: ignore[arg-type, unused-ignore]  # transformers types `to` oddly
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
