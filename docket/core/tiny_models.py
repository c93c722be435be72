"""Tiny random models and tokenizers built offline from configs, for tests and toy CPU runs.

Nothing is downloaded: tokenizers are built (character-level) or trained on a given corpus
(byte-level BPE), models are randomly initialised under a seed, so a seed gives the same
weights every time. Saved with `save_pretrained`, every checkpoint loads with transformers'
`Auto*` classes, so `docket/local/PATH` serves it. torch, tokenizers and transformers are
imported inside the functions: importing this module pulls none of them.

- `ascii_tokenizer`: one token per printable ASCII character plus `<pad>`, `<s>`, `</s>`,
  `<unk>`, with a `Q: ...` / `A: ...` chat template (DiSPaT, AnoLLM, the SAR toy experiment);
  `tiny_causal_lm` is its Llama.
- `alphabet_tokenizer`: one token per character of an alphabet plus `<pad>`, `<eos>`, `<unk>`,
  with a template that renders the user's text alone (the RL toy tasks); `tiny_llama` is its
  Llama.
- `bpe_tokenizer`: a byte-level BPE trained on a corpus (every byte stays encodable).
- `random_llama`: the Llama behind all of them, any `LlamaConfig` field settable.
- `random_bert_mlm`: a random BERT masked LM (a transformers masked LM that is not a Llama).
- `build_tiny_vlm`, `build_tiny_text_lm`, `build_tiny_lm`: whole checkpoint folders (a LLaVA,
  its language model alone, a Llama of a chosen size).
- `torch_threads`: torch's CPU thread count for a block (tiny models train fastest on one).
"""

from __future__ import annotations

import contextlib
import string
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

#: `ascii_tokenizer`'s characters: printable ASCII (space included) and newline.
ASCII_ALPHABET = string.printable[:95] + "\n"
ASCII_SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")
#: `ascii_tokenizer`'s chat template: `Q: ...` lines, `A: ...</s>` answers.
QA_CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}A: {{ m['content'] }}</s>\n"
    "{% else %}Q: {{ m['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}A: {% endif %}"
)
ALPHABET_SPECIALS = ("<pad>", "<eos>", "<unk>")
#: `alphabet_tokenizer`'s chat template: the user message's text alone.
PROMPT_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ message['content'] }}{% endif %}{% endfor %}"
)
#: Characters every `alphabet_tokenizer` knows besides the alphabet's own.
BASE_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz +-*=<>:;,.?!"
IMAGE_TOKEN = "<image>"
#: The tiny LLaVA's special tokens and ChatML template with `<image>` slots.
CHATML_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", IMAGE_TOKEN]
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's CPU thread count set to `count` inside the block (0: unchanged).

    Tiny models train fastest on one thread; on a loaded machine two threads were 3-9x slower.

    Args:
        count: The thread count (0 leaves it unchanged).

    Returns:
        A context manager restoring the previous count on exit.
    """
    import torch

    before = torch.get_num_threads()
    if count > 0:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _character_level(vocab: dict[str, int], pattern: str) -> Any:
    """A `tokenizers.Tokenizer` mapping each match of `pattern` to its id in `vocab`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    core.decoder = decoders.Fuse()
    return core


def ascii_tokenizer(model_max_length: int = 1024) -> Any:
    """A character-level tokenizer of printable ASCII with `<s>`/`</s>` and a Q/A template.

    Args:
        model_max_length: The tokenizer's `model_max_length`.

    Returns:
        A `PreTrainedTokenizerFast` (ids: `<pad>` 0, `<s>` 1, `</s>` 2, `<unk>` 3, then the
        characters of `ASCII_ALPHABET`).
    """
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(ASCII_SPECIALS)}
    for character in ASCII_ALPHABET:
        vocab.setdefault(character, len(vocab))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_character_level(vocab, r"</s>|<s>|[\s\S]"),
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=model_max_length,
    )
    tokenizer.chat_template = QA_CHAT_TEMPLATE
    return tokenizer


def alphabet_tokenizer(alphabet: str = "") -> Any:
    """A tokenizer with one token per character of `BASE_ALPHABET` and `alphabet`.

    Args:
        alphabet: The task's own characters (unknown ones map to `<unk>`).

    Returns:
        A `PreTrainedTokenizerFast` (ids: `<pad>` 0, `<eos>` 1, `<unk>` 2, then the characters
        sorted) whose chat template renders the user message's text alone.
    """
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(BASE_ALPHABET + alphabet))
    vocab = {token: i for i, token in enumerate([*ALPHABET_SPECIALS, *chars])}
    return PreTrainedTokenizerFast(
        tokenizer_object=_character_level(vocab, "."),
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        chat_template=PROMPT_CHAT_TEMPLATE,
    )


def bpe_tokenizer(
    corpus: Iterable[str], *, vocab_size: int, special_tokens: Sequence[str], **tokenizer: Any
) -> Any:
    """A byte-level BPE tokenizer trained on `corpus` (every byte stays encodable).

    Args:
        corpus: Training texts (an empty corpus trains on one space).
        vocab_size: The BPE vocabulary size.
        special_tokens: Special tokens, given the first ids.
        **tokenizer: Further `PreTrainedTokenizerFast` arguments (`eos_token`, `chat_template`).

    Returns:
        A `PreTrainedTokenizerFast`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(list(corpus) or [" "], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, **tokenizer)


def random_llama(
    vocab_size: int,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int | None = None,
    intermediate: int | None = None,
    seed: int | None = 0,
    **config: Any,
) -> Any:
    """A randomly initialised `LlamaForCausalLM` (float32, CPU).

    Args:
        vocab_size: The vocabulary size.
        hidden: The hidden size.
        layers: The number of decoder layers.
        heads: The number of attention heads.
        kv_heads: The number of key/value heads (None: `heads`).
        intermediate: The MLP width (None: 4 x `hidden`).
        seed: The torch seed set before the weights are drawn (None: the current RNG state).
        **config: Further `LlamaConfig` fields (e.g. `max_position_embeddings`,
            `eos_token_id`); the others keep transformers' defaults.

    Returns:
        The model.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if seed is not None:
        torch.manual_seed(seed)
    llama = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads or heads,
        **config,
    )
    return LlamaForCausalLM(llama)


def random_bert_mlm(
    vocab_size: int,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    intermediate: int | None = None,
    seed: int | None = 0,
    **config: Any,
) -> Any:
    """A randomly initialised `BertForMaskedLM` (float32, CPU).

    Args:
        vocab_size: The vocabulary size.
        hidden: The hidden size.
        layers: The number of encoder layers.
        heads: The number of attention heads.
        intermediate: The MLP width (None: 4 x `hidden`).
        seed: The torch seed set before the weights are drawn (None: the current RNG state).
        **config: Further `BertConfig` fields (e.g. `max_position_embeddings`); the others keep
            transformers' defaults.

    Returns:
        The model.
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM

    if seed is not None:
        torch.manual_seed(seed)
    bert = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        **config,
    )
    return BertForMaskedLM(bert)


def tiny_causal_lm(
    vocab_size: int,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    context: int = 512,
    seed: int = 0,
) -> Any:
    """A random Llama for `ascii_tokenizer` (its pad, bos and eos ids; tied embeddings).

    Args:
        vocab_size: The vocabulary size (`len(ascii_tokenizer())`).
        hidden: The hidden size.
        layers: The number of decoder layers.
        heads: The number of attention (and key/value) heads.
        context: `max_position_embeddings`.
        seed: The torch seed.

    Returns:
        The model (float32, CPU).
    """
    return random_llama(
        vocab_size,
        hidden=hidden,
        layers=layers,
        heads=heads,
        seed=seed,
        max_position_embeddings=context,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=True,
    )


def tiny_llama(
    tokenizer: Any, *, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0
) -> Any:
    """A random Llama for `tokenizer` (e.g. `alphabet_tokenizer`'s), sized to train in seconds.

    Args:
        tokenizer: The tokenizer; its size, eos and pad ids go into the config (no bos).
        hidden: The hidden size.
        layers: The number of decoder layers.
        heads: The number of attention (and key/value) heads.
        seed: The torch seed.

    Returns:
        The model (float32, CPU; 128 positions; tied embeddings).
    """
    model = random_llama(
        len(tokenizer),
        hidden=hidden,
        layers=layers,
        heads=heads,
        seed=seed,
        max_position_embeddings=128,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


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
    """Write a random tiny LLaVA image-text-to-text checkpoint to `out`.

    A 1-layer CLIP vision tower, a 2-layer Llama decoder, a byte-level BPE tokenizer trained on
    `corpus`, a ChatML chat template with `<image>` slots and an image processor that resizes
    pages to a small square; transformers loads it with `AutoModelForImageTextToText` and
    `AutoProcessor`. It is the CPU student of the two-stage SFT and the test model of
    `docket/local`'s vision path; it learns only what it is trained on.

    Args:
        out: The checkpoint folder (created).
        corpus: The tokenizer's training texts.
        image_size: The side of the square the image processor resizes to.
        patch_size: The vision tower's patch size.
        hidden: The hidden size of both towers.
        vocab_size: The BPE vocabulary size.
        seed: The torch seed.

    Returns:
        `out`.
    """
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = bpe_tokenizer(
        corpus,
        vocab_size=vocab_size,
        special_tokens=CHATML_SPECIALS,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": IMAGE_TOKEN},
        chat_template=CHATML_TEMPLATE,
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
        chat_template=CHATML_TEMPLATE,
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
    """Write the tiny LLaVA's language model and tokenizer alone, a text-only Llama checkpoint
    (for checking what text models do when given images).

    Args:
        out: The checkpoint folder (created).
        corpus: The tokenizer's training texts.
        seed: The torch seed of the LLaVA it comes from.

    Returns:
        `out`.
    """
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


def build_tiny_lm(
    out: Path,
    corpus: Iterable[str],
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int | None = None,
    init_std: float = 0.02,
    seed: int = 0,
) -> Path:
    """Write a random Llama of the given size with `build_tiny_text_lm`'s BPE tokenizer (trained
    on `corpus`, ChatML template) to `out`, a checkpoint `docket/local` loads.

    Args:
        out: The checkpoint folder (created).
        corpus: The tokenizer's training texts.
        hidden: The hidden size.
        layers: The number of decoder layers.
        heads: The number of attention heads.
        kv_heads: The number of key/value heads.
        intermediate: The MLP width (None: 2 x `hidden`).
        init_std: The weights' initial standard deviation: Llama's 0.02 gives a random model
            near-uniform outputs it cannot sharpen through a frozen head, so tests of frozen
            random backbones use a larger one.
        seed: The torch seed.

    Returns:
        `out`.
    """
    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    build_tiny_text_lm(out, corpus, seed=seed)
    config = AutoConfig.from_pretrained(out)
    config.hidden_size = hidden
    config.num_hidden_layers = layers
    config.num_attention_heads = heads
    config.num_key_value_heads = kv_heads
    config.head_dim = hidden // heads
    config.intermediate_size = intermediate or 2 * hidden
    config.initializer_range = init_std
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    model.save_pretrained(out)
    return out
