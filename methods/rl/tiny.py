"""A tiny character-level Llama and its tokenizer, built offline from configs.

The tokenizer has one token per character of the task family's alphabet plus `<pad>`, `<eos>`
and `<unk>`, and a chat template that renders the user message's text alone (the toy model is
trained on bare prompts; system turns are not rendered). Saved with `save_pretrained`, the
pair loads with `AutoModelForCausalLM` / `AutoTokenizer`, so `docket/local/PATH` serves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("<pad>", "<eos>", "<unk>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ message['content'] }}{% endif %}{% endfor %}"
)
#: Characters every tiny tokenizer knows besides the task's own.
BASE_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz +-*=<>:;,.?!"


def char_tokenizer(alphabet: str = "") -> Any:
    """A `PreTrainedTokenizerFast` with one token per character (unknown ones map to <unk>)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(BASE_ALPHABET + alphabet))
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *chars])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        chat_template=CHAT_TEMPLATE,
    )


def tiny_llama(
    tokenizer: Any, *, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0
) -> Any:
    """A randomly initialised `LlamaForCausalLM` sized for CPU training in seconds."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=128,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


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
