"""Image-text-to-text checkpoints: recognising them and turning Inspect images into pixels.

A checkpoint directory is a vision-language model when its `config.json` names a model type
that transformers maps to `AutoModelForImageTextToText` (LLaVA, Idefics3/SmolVLM, Qwen2-VL,
Gemma-3, ...). Such checkpoints load with their `AutoProcessor`, whose chat template places
the image slots (see `chat.render_multimodal`).
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image as PILImage


def checkpoint_model_type(path: str) -> str:
    """The `model_type` in a checkpoint directory's config.json ('' when absent)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    model_type = config.get("model_type", "") if isinstance(config, dict) else ""
    return model_type if isinstance(model_type, str) else ""


def is_image_text_to_text(path: str) -> bool:
    """Whether transformers loads this checkpoint directory as an image-text-to-text model."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return checkpoint_model_type(path) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


def open_image(source: str) -> PILImage.Image:
    """An RGB image from an Inspect `ContentImage.image`: a data URI or a local file path.

    Raises ValueError (one line) for URLs (nothing is fetched) and unreadable images.
    """
    from PIL import Image

    shown = f"{source[:40]}..." if len(source) > 40 else source
    if source.startswith(("http://", "https://")):
        raise ValueError(f"image {shown}: URLs are not fetched; pass a file path or a data URI")
    try:
        if source.startswith("data:"):
            _, _, payload = source.partition(",")
            raw: Any = io.BytesIO(base64.b64decode(payload, validate=True))
        else:
            raw = Path(source)
        with Image.open(raw) as image:
            return image.convert("RGB")
    except (OSError, ValueError) as ex:  # binascii.Error and PIL's errors are among them
        raise ValueError(f"image {shown} cannot be read ({type(ex).__name__})") from None
