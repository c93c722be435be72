"""Prefix KV reuse across calls of one sample: exact greedy outputs, bounded memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from docket.core.tiny_models import bpe_tokenizer, random_llama
from docket.methods.local.batching import DecodeEngine, Request
from docket.methods.local.kv_reuse import PrefixStore, cache_length, common_prefix
from docket.methods.local.sampling import DecodeParams, greedy, greedy_choice

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = ["list the files, then print hello.txt and count the lines of notes/plan.md"] * 20


@pytest.fixture(scope="module")
def tiny() -> Iterator[tuple[Any, Any]]:
    """A random 2-layer Llama (GQA) and a byte-level BPE tokenizer with a ChatML template."""
    tokenizer = bpe_tokenizer(
        CORPUS,
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHATML,
    )
    model = random_llama(
        len(tokenizer),
        hidden=32,
        intermediate=64,
        layers=2,
        heads=4,
        kv_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        initializer_range=0.3,  # attention that matters: a wrong position or mask shows
        seed=3,
    )
    model.eval()
    yield model, tokenizer


def prompt(tokenizer: Any, turns: list[tuple[str, str]]) -> list[int]:
    """Token ids of a ChatML conversation of (role, text) turns, ready for the reply."""
    messages = [{"role": role, "content": text} for role, text in turns]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


PARAMS = DecodeParams(max_new_tokens=10)


def engine(model: Any, tokenizer: Any, store: PrefixStore | None = None) -> DecodeEngine:
    kept = PrefixStore() if store is None else store
    return DecodeEngine(model, tokenizer, threading.Lock(), store=kept, max_batch=1)


def reference(model: Any, tokenizer: Any, ids: list[int]) -> list[int]:
    """Greedy tokens decoded from an empty cache (the path without reuse)."""
    return greedy(model, tokenizer, ids, PARAMS)[0].token_ids


def conversation(tokenizer: Any, replies: list[str], user: str) -> list[list[int]]:
    """The prompts of an agent loop: each call resends the conversation with one more turn."""
    turns = [("system", "You run shell commands."), ("user", user)]
    prompts = [prompt(tokenizer, turns)]
    for reply in replies:
        turns += [("assistant", reply), ("user", f"output of: {reply}")]
        prompts.append(prompt(tokenizer, turns))
    return prompts


def test_common_prefix_counts_shared_leading_ids() -> None:
    assert common_prefix([1, 2, 3, 4], [1, 2, 9]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([5], [6]) == 0


def test_multi_turn_reuse_matches_decoding_from_scratch(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    prompts = conversation(tokenizer, ["ls", "cat hello.txt", "wc -l notes/plan.md"], "go")
    for ids in prompts:
        got = run.decode(Request(ids, PARAMS, greedy_choice, key="a")).token_ids
        assert got == reference(model, tokenizer, ids)
    # every later call reused the previous one's prefix: at least the earlier prompt's tokens
    expected_floor = sum(len(p) - 8 for p in prompts[:-1])
    assert store.reused_tokens >= expected_floor
    assert store.prompt_tokens == sum(len(p) for p in prompts)


def test_divergent_conversation_reuses_exactly_the_common_prefix(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    first = prompt(tokenizer, [("user", "list the files"), ("assistant", "ls"), ("user", "ok")])
    edited = prompt(tokenizer, [("user", "list the files"), ("assistant", "pwd"), ("user", "ok")])
    run.decode(Request(first, PARAMS, greedy_choice, key="a"))
    before = store.reused_tokens
    got = run.decode(Request(edited, PARAMS, greedy_choice, key="a")).token_ids
    assert got == reference(model, tokenizer, edited)
    assert store.reused_tokens - before == common_prefix(first, edited)
    assert 0 < common_prefix(first, edited) < len(edited) - 3


def test_interleaved_samples_keep_their_own_caches(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    a = conversation(tokenizer, ["ls", "cat hello.txt"], "first task")
    b = conversation(tokenizer, ["pwd", "wc -l notes/plan.md"], "another task")
    for ids_a, ids_b in zip(a, b, strict=True):
        for key, ids in (("a", ids_a), ("b", ids_b)):
            got = run.decode(Request(ids, PARAMS, greedy_choice, key=key)).token_ids
            assert got == reference(model, tokenizer, ids)
    assert len(store) == 2
    # b's first call shares only the system-free head with a; it must not take a's cache
    assert store.reused_tokens >= sum(len(p) - 8 for p in (a[0], a[1], b[0], b[1]))


def test_same_prompt_again_feeds_only_its_last_token(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    ids = prompt(tokenizer, [("user", "print hello.txt")])
    first = run.decode(Request(ids, PARAMS, greedy_choice, key="a")).token_ids
    again = run.decode(Request(ids, PARAMS, greedy_choice, key="a")).token_ids
    assert first == again == reference(model, tokenizer, ids)
    assert store.reused_tokens == len(ids) - 1


def test_calls_outside_a_sample_match_by_longest_prefix(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    short, long = conversation(tokenizer, ["ls"], "go")
    other = prompt(tokenizer, [("user", "count the lines")])
    for ids in (short, other):
        run.decode(Request(ids, PARAMS, greedy_choice))
    before = store.reused_tokens
    got = run.decode(Request(long, PARAMS, greedy_choice)).token_ids
    assert got == reference(model, tokenizer, long)
    assert store.reused_tokens - before == common_prefix(short, long)


def test_store_is_bounded_by_entries_and_tokens(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    ids = [prompt(tokenizer, [("user", f"print file {i}")]) for i in range(4)]
    by_count = PrefixStore(max_entries=2)
    run = engine(model, tokenizer, by_count)
    for key, p in enumerate(ids):
        run.decode(Request(p, PARAMS, greedy_choice, key=key))
    assert len(by_count) == 2
    held = [len(p) + 9 for p in ids]  # prompt + generated tokens but the last (10 new tokens)
    assert by_count.tokens() == held[2] + held[3]
    by_tokens = PrefixStore(max_tokens=held[3] + 1)
    run = engine(model, tokenizer, by_tokens)
    for key, p in enumerate(ids):
        run.decode(Request(p, PARAMS, greedy_choice, key=key))
    assert len(by_tokens) == 1 and by_tokens.tokens() == held[3]


def test_ended_samples_are_dropped(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    running: set[Any] = {"a", "b"}
    store = PrefixStore(alive=lambda: set(running))
    run = engine(model, tokenizer, store)
    for key in ("a", "b"):
        run.decode(Request(prompt(tokenizer, [("user", key)]), PARAMS, greedy_choice, key=key))
    assert len(store) == 2
    running.discard("a")
    store.take("b", prompt(tokenizer, [("user", "b")]))
    assert len(store) == 0  # a ended; b's entry was taken


def test_disabled_store_keeps_nothing(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore(max_tokens=0)
    run = engine(model, tokenizer, store)
    ids = prompt(tokenizer, [("user", "ls")])
    for _ in range(2):
        assert run.decode(Request(ids, PARAMS, greedy_choice, key="a")).token_ids == reference(
            model, tokenizer, ids
        )
    assert len(store) == 0 and store.reused_tokens == 0


def test_kept_cache_holds_the_prompt_and_all_but_the_last_token(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    ids = prompt(tokenizer, [("user", "list the files")])
    out = run.decode(Request(ids, PARAMS, greedy_choice, key="a")).token_ids
    cache, shared = store.take("a", [*ids, *out, 7])
    assert shared == len(ids) + len(out) - 1 == cache_length(cache)
