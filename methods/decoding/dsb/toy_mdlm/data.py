"""The toy corpus of the toy masked-diffusion LM: copy, reverse and sort strings of letters.

Each example is a one-turn chat (`sort: dbca` → `abcd`). The answer is a deterministic
function of the prompt, so decoding quality is exact-match accuracy. The three tasks differ
in how confident a mask predictor is before any answer token is known: copying and reversing
are position lookups (confident everywhere at once), sorting needs counting (confident near
already-decoded neighbours), which is where the order of unmasking matters.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TASKS = ("copy", "reverse", "sort")
ALPHABET = "abcdefghijklmnop"
EOS = "<|eos|>"
MASK = "<|mask|>"
SPECIAL_TOKENS = [EOS, MASK]
#: Chat template of the toy tokenizer; `render_prompt` is the same format in Python.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}> {% endif %}"
)


@dataclass(frozen=True)
class Example:
    """One toy question and its exact answer."""

    task: str
    letters: str

    @property
    def question(self) -> str:
        return f"{self.task}: {self.letters}"

    @property
    def answer(self) -> str:
        if self.task == "copy":
            return self.letters
        if self.task == "reverse":
            return self.letters[::-1]
        return "".join(sorted(self.letters))


def render_prompt(question: str) -> str:
    """The chat-templated prompt of one user turn (what `docket/local` sends the model)."""
    return f"{question}\n> "


def sample_example(
    rng: random.Random, min_len: int = 4, max_len: int = 16, tasks: tuple[str, ...] = TASKS
) -> Example:
    """A random example; letters from `ALPHABET`, length in [min_len, max_len]."""
    length = rng.randint(min_len, max_len)
    return Example(rng.choice(tasks), "".join(rng.choice(ALPHABET) for _ in range(length)))


def eval_set(
    size: int, seed: int = 1234, max_len: int = 16, tasks: tuple[str, ...] = TASKS
) -> list[Example]:
    """A fixed held-out set (its seed differs from any training seed used by `train.py`)."""
    rng = random.Random(seed)
    return [sample_example(rng, max_len=max_len, tasks=tasks) for _ in range(size)]


def solved_turns(rng: random.Random, shots: int, max_len: int = 16) -> str:
    """`shots` random solved examples, one turn each (`sort: dbca\n> abcd\n`)."""
    solved = [sample_example(rng, max_len=max_len) for _ in range(shots)]
    return "".join(f"{render_prompt(e.question)}{e.answer}\n" for e in solved)


def preamble(shots: int, seed: int = 5) -> str:
    """A fixed few-shot preamble of `shots` solved examples to put before a question: a long
    prompt (training with `TrainConfig.preamble_shots` draws its own at random)."""
    return solved_turns(random.Random(seed), shots)


def build_tokenizer() -> object:
    """A byte-level tokenizer without merges (one token per byte) plus EOS and MASK.

    Every text stays encodable; the letters of the toy tasks are single tokens.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: index for index, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=EOS,
        pad_token=EOS,
        mask_token=MASK,
        chat_template=CHAT_TEMPLATE,
    )
