"""A tiny random LLaVA-style image-text-to-text checkpoint, built offline from configs.

`build_tiny_vlm(out, corpus)` writes a checkpoint directory that transformers loads with
`AutoModelForImageTextToText` and `AutoProcessor`: a 1-layer CLIP vision tower, a 2-layer Llama
decoder, a byte-level BPE tokenizer trained on `corpus` (every byte stays encodable), a
ChatML chat template with `<image>` slots and an image processor that resizes pages to a small
square. It is the CPU student of the two-stage SFT and the test model of `docket/local`'s
vision path; it learns only what it is trained on.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

IMAGE_TOKEN = "<image>"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", IMAGE_TOKEN]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_vlm(
    out: Path,
    corpus: Iterable[str],
    *,
    image_size: int = 64,
    patch_size: int = 16,
    hidden: int = 64,
    vocab_size: int = 512,
    seed: int = 0,
) -> Path:
    """Write a random tiny LLaVA (model, tokenizer, processor) to `out`; return `out`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(corpus) or [" "], trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": IMAGE_TOKEN},
        chat_template=CHAT_TEMPLATE,
    )
    image_processor = CLIPImageProcessor(
        size={"height": image_size, "width": image_size},
        do_center_crop=False,
        do_convert_rgb=True,
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS token, dropped by the "default" strategy
        chat_template=CHAT_TEMPLATE,
    )
    image_token = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert isinstance(image_token, int)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            image_size=image_size,
            patch_size=patch_size,
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=1,
            num_attention_heads=2,
            projection_dim=hidden,
        ),
        text_config=LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        ),
        image_token_index=image_token,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        projector_hidden_act="gelu",
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_tiny_text_lm(out: Path, corpus: Iterable[str], *, seed: int = 0) -> Path:
    """Write the tiny LLaVA's language model and tokenizer alone: a text-only Llama checkpoint
    (for checking what text models do when given images); return `out`."""
    import tempfile

    from transformers import AutoConfig, AutoProcessor, LlamaForCausalLM

    with tempfile.TemporaryDirectory() as scratch:
        source = build_tiny_vlm(Path(scratch), corpus, seed=seed)
        config = AutoConfig.from_pretrained(source).text_config
        tokenizer = AutoProcessor.from_pretrained(source).tokenizer
    out.mkdir(parents=True, exist_ok=True)
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
