"""`docket/local -M tokenizer=incbpe`: the checkpoint's tokenizer on the incremental core gives
the same prompt ids and the same completion as the HF tokenizer path."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig

from docket.core.tiny_models import random_llama
from docket.methods.local.provider import LocalHFModelAPI
from docket.methods.tokenization.hf import IncBpeHFTokenizer

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
MESSAGES: list[ChatMessage] = [
    ChatMessageSystem(content="You are terse."),
    ChatMessageUser(content="What is 2+2?  Answer   in one word.\n\n  Then say 'don't'."),
]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, trained_json: Path) -> Path:
    """A random 2-layer Llama with the trained byte-level tokenizer, a BOS and a template."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer.from_file(str(trained_json))
    bpe.add_special_tokens(["<|im_start|>", "<|im_end|>"])
    bos = bpe.token_to_id("<|endoftext|>")
    bpe.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", bos_token="<|endoftext|>"
    )
    model = random_llama(
        len(tokenizer),
        hidden=32,
        intermediate=64,
        layers=2,
        heads=4,
        kv_heads=2,
        eos_token_id=tokenizer.eos_token_id,
    )
    path = tmp_path_factory.mktemp("tiny-llama-incbpe")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def api(**args: Any) -> LocalHFModelAPI:
    return LocalHFModelAPI(model_name="local", config=GenerateConfig(), device="cpu", **args)


async def complete(model: LocalHFModelAPI) -> str:
    out = await model.generate(MESSAGES, [], "none", GenerateConfig(max_tokens=12, temperature=0))
    return out.completion


@pytest.mark.parametrize("templated", [False, True])
def test_incbpe_gives_the_same_ids_and_completion(
    tiny_llama: Path, templated: bool, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    where = tiny_llama
    if templated:  # the chat template path (no special tokens added) and the plain one (BOS)
        where = tmp_path / "templated"
        shutil.copytree(tiny_llama, where)
        tokenizer = AutoTokenizer.from_pretrained(where)
        tokenizer.chat_template = TEMPLATE
        tokenizer.save_pretrained(where)
    hf, ours = api(path=str(where)), api(path=str(where), tokenizer="incbpe")
    assert isinstance(ours.loaded.tokenizer, IncBpeHFTokenizer)
    ids = ours.prompt_ids(MESSAGES, [], "none")
    assert ids == hf.prompt_ids(MESSAGES, [], "none")
    assert (ids[0] == hf.loaded.tokenizer.bos_token_id) is not templated
    assert ours.loaded.tokenizer.last_stream.tokens > 10
    assert asyncio.run(complete(ours)) == asyncio.run(complete(hf))


def test_stream_ids_yields_tokens_before_the_text_ends(tiny_llama: Path) -> None:
    tokenizer = api(path=str(tiny_llama), tokenizer="incbpe").loaded.tokenizer
    parts = ["The quick brown", " fox jumps over", " the lazy dog", "."]
    pulled = 0

    def arriving() -> Any:
        nonlocal pulled
        for part in parts:
            pulled += 1
            yield part

    seen: list[tuple[int, int]] = [(token, pulled) for token in tokenizer.stream_ids(arriving())]
    ids = [token for token, _ in seen]
    assert ids == tokenizer.inner("".join(parts), add_special_tokens=False)["input_ids"]
    assert sum(1 for _, at in seen if at < len(parts)) >= 6  # out before the last part came
    assert tokenizer.last_stream.certain_before_end >= len(ids) - 2


@pytest.mark.slow
def test_smollm2_end_to_end_matches_the_hf_tokenizer() -> None:
    from docket.methods.local.provider import smollm2_gguf

    gguf = smollm2_gguf()
    hf = api(path=str(gguf.parent), gguf_file=gguf.name)
    ours = api(path=str(gguf.parent), gguf_file=gguf.name, tokenizer="incbpe")
    assert ours.prompt_ids(MESSAGES, [], "none") == hf.prompt_ids(MESSAGES, [], "none")
    answer = asyncio.run(complete(ours))
    assert answer == asyncio.run(complete(hf)) and answer.strip()
