"""FLASH as a `docket/local` method plugin (`-M method=flash`): checks the checkpoint, installs
the attention function and returns the `DecodeFn` around `algorithm.generate`."""

from __future__ import annotations

from typing import Any

from docket.methods.local.loading import LoadedModel
from docket.methods.local.registry import method_plugin
from docket.methods.local.sampling import DecodeFn, DecodeParams, Generation

from .algorithm import FlashSettings, generate, image_token_id, install, text_config


@method_plugin(
    "flash",
    FlashSettings,
    "FLASH spectral shaping of visual heads' attention during decoding",
)
def build(loaded: LoadedModel, settings: FlashSettings) -> DecodeFn:
    """FLASH's `DecodeFn` for a loaded image-text-to-text checkpoint.

    Args:
        loaded: The vision-language checkpoint.
        settings: The run's `-M` knobs.

    Returns:
        The `DecodeFn` that shapes the selected heads' attention while decoding.
    """
    model = loaded.model
    if not loaded.reads_images or image_token_id(model) is None:
        raise ValueError(
            "-M method=flash shapes visual attention: it needs an image-text-to-text "
            "checkpoint (LLaVA-style, with an image token)"
        )
    layers = int(text_config(model).num_hidden_layers)
    heads = int(text_config(model).num_attention_heads)
    for layer, head in settings.head_list:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(
                f"-M method=flash: head {layer}:{head} does not exist "
                f"({layers} layers x {heads} heads)"
            )
    original = install(model)

    def decode(
        _model: Any, tokenizer: Any, prompt_ids: list[int], params: DecodeParams, n: int
    ) -> list[Generation]:
        generations, _ = generate(model, tokenizer, prompt_ids, params, settings, original, n)
        return generations

    return decode
