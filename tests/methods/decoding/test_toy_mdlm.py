"""The toy mask predictor's turn-relative positions and its few-shot-preamble training."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch

from docket.methods.decoding.dsb.algorithm import DSBSettings, ToyMaskedLM, generate
from docket.methods.decoding.dsb.toy_mdlm import data
from docket.methods.decoding.dsb.toy_mdlm.checkpoint import load
from docket.methods.decoding.dsb.toy_mdlm.model import ToyConfig, ToyMaskPredictor
from docket.methods.decoding.dsb.toy_mdlm.train import (
    TrainConfig,
    checkpoint_key,
    make_batch,
    turn_separator,
)

TOKENIZER: Any = data.build_tokenizer()


def encode(text: str) -> list[int]:
    return list(TOKENIZER(text, add_special_tokens=False)["input_ids"])


def attention_free(turns: bool) -> ToyMaskPredictor:
    """A mask predictor without layers: each position's logits depend only on its own token
    and position embeddings, so what the positions read as is visible in the logits."""
    config = ToyConfig(
        vocab_size=len(TOKENIZER),
        mask_token_id=1,
        eos_token_id=0,
        hidden=16,
        layers=0,
        heads=2,
        mlp=16,
        turn_separator_id=turn_separator(TOKENIZER) if turns else None,
    )
    model = ToyMaskPredictor(config)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for table in (model.embed, model.absolute, model.offset):
            table.weight.normal_(0, 1.0, generator=generator)
    return model.eval()


QUESTION = data.render_prompt("copy: abcdef")
PREAMBLE = data.preamble(3)


def test_turn_start_is_the_first_position_of_the_question_turn() -> None:
    model = attention_free(turns=True)
    assert model.turn_start(encode(QUESTION)) == 0
    assert model.turn_start(encode(PREAMBLE + QUESTION)) == len(encode(PREAMBLE))
    assert model.turn_start(encode("a system line\n" + QUESTION)) == len(encode("a system line\n"))
    assert attention_free(turns=False).turn_start(encode(PREAMBLE + QUESTION)) == 0


def _question_and_answer_logits(model: ToyMaskPredictor, preamble: str) -> torch.Tensor:
    prompt = encode(preamble + QUESTION)
    ids = torch.tensor([prompt + [1] * 8])
    with torch.no_grad():
        logits = model(ids, len(prompt), turn_start=model.turn_start(prompt)).logits[0]
    return logits[len(encode(preamble)) :]


def test_a_preamble_leaves_the_question_positions_as_they_were_only_with_turns() -> None:
    turns = attention_free(turns=True)
    assert torch.equal(
        _question_and_answer_logits(turns, PREAMBLE), _question_and_answer_logits(turns, "")
    )
    plain = attention_free(turns=False)  # absolute positions shift with the preamble
    assert not torch.allclose(
        _question_and_answer_logits(plain, PREAMBLE), _question_and_answer_logits(plain, "")
    )


def test_earlier_turns_share_one_position_embedding() -> None:
    model = attention_free(turns=True)
    prompt = encode(PREAMBLE + QUESTION)
    start = model.turn_start(prompt)
    with torch.no_grad():
        logits = model(torch.tensor([prompt]), len(prompt), turn_start=start).logits[0]
    # the first two ">" of the preamble are far before the answer: the same offset bucket
    first, second = [i for i, t in enumerate(prompt[:start]) if t == encode(">")[0]][:2]
    assert torch.equal(logits[first], logits[second])
    assert model.absolute.num_embeddings == model.config.absolute_positions + 1


def test_a_turn_start_needs_a_model_trained_with_turns() -> None:
    with pytest.raises(ValueError, match="turn_separator_id"):
        attention_free(turns=False)(torch.tensor([[5, 6, 7]]), 2, turn_start=1)


def test_preamble_batches_start_their_question_turn_after_the_shots() -> None:
    config = TrainConfig(batch=6, preamble_shots=3, preamble_rate=1.0)
    eos = int(TOKENIZER.convert_tokens_to_ids(data.EOS))
    batch = make_batch(TOKENIZER, random.Random(0), config, eos)
    newline = turn_separator(TOKENIZER)
    for row, answer_start, turn_start in zip(
        batch.ids, batch.answer_starts, batch.turn_starts, strict=True
    ):
        before = row[:turn_start]
        assert 1 <= before.count(newline) // 2 <= 3 and before[-1] == newline
        assert TOKENIZER.decode(row[turn_start:answer_start]).endswith("\n> ")
    plain = make_batch(TOKENIZER, random.Random(0), TrainConfig(batch=6), eos)
    assert plain.turn_starts == [0] * 6
    not_yet = make_batch(TOKENIZER, random.Random(0), config, eos, preambles=False)
    assert not_yet.ids == plain.ids and not_yet.turn_starts == [0] * 6  # the same stream


def test_the_default_checkpoint_keeps_its_cache_directory() -> None:
    assert checkpoint_key(TrainConfig()) == (
        "steps4000-batch32-lr0.002-warmup100-weight_decay0.01-hidden64-layers4-heads4-mlp256"
        "-max_len16-pad_extra12-seed0"
    )
    assert checkpoint_key(TrainConfig(preamble_shots=8, preamble_from=2000)).endswith(
        "-preamble_shots8-preamble_from2000"
    )


def test_a_preamble_trained_checkpoint_decodes_with_and_without_its_cache(
    toy_turns_dir: Path,
) -> None:
    model, tokenizer = load(toy_turns_dir)
    assert model.config.turn_separator_id == turn_separator(tokenizer)
    masked = ToyMaskedLM(model, model.config.mask_token_id)
    prompt = encode(PREAMBLE + QUESTION)
    settings = DSBSettings(block_length=4, gen_length=12, threshold=0.3)
    plain = generate(masked, prompt, settings)
    assert masked.turn_start == len(encode(PREAMBLE))
    whole = {"cache": "dsb", "prefix_window": len(prompt) + 12, "suffix_window": 12}
    full = DSBSettings(**{**settings.__dict__, **whole})
    cached = generate(masked, prompt, full)
    assert cached.tokens == plain.tokens and cached.logprobs == plain.logprobs


@pytest.mark.parametrize("positions", [[3, 4, 5, 6], [2, 5, 6, 11]])
def test_a_window_forward_over_a_current_cache_reads_as_the_full_forward(
    positions: list[int],
) -> None:
    """Contiguous windows (written as slices) and scattered ones (written by index) recompute
    their positions as the full forward does when the cache holds the same tokens."""
    config = ToyConfig(vocab_size=12, mask_token_id=1, eos_token_id=0, hidden=16, heads=2, mlp=32)
    model = ToyMaskPredictor(config).eval()
    ids = torch.randint(0, 12, (1, 14), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        full = model(ids, 8, use_cache=True)
        assert full.past_key_values is not None
        replace = torch.zeros(14, dtype=torch.bool)
        replace[positions] = True
        window = model(
            ids[:, positions], 8, past_key_values=full.past_key_values, replace_position=replace
        )
    torch.testing.assert_close(window.logits, full.logits[:, positions], rtol=1e-5, atol=1e-5)
