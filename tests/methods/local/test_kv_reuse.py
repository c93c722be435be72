"""Prefix KV reuse across calls and samples: exact greedy outputs, bounded memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from docket.core.tiny_models import bpe_tokenizer, random_llama
from docket.methods.local import kv_reuse
from docket.methods.local.batching import DecodeEngine, Request
from docket.methods.local.kv_reuse import PrefixStore, cache_length, common_prefix
from docket.methods.local.sampling import DecodeParams, Generation, greedy, greedy_choice

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
    by_count = PrefixStore(max_entries=2, max_prefixes=0)
    run = engine(model, tokenizer, by_count)
    for key, p in enumerate(ids):
        run.decode(Request(p, PARAMS, greedy_choice, key=key))
    assert len(by_count) == 2
    held = [len(p) + 9 for p in ids]  # prompt + generated tokens but the last (10 new tokens)
    assert by_count.tokens() == held[2] + held[3]
    by_tokens = PrefixStore(max_tokens=held[3] + 1, max_prefixes=0)
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


# --- across samples: one task's prompts share the system prompt and the tool schemas ----------

SYSTEM = "You run shell commands. Tools: bash(command), submit(answer). Call one tool a turn."


def task_prompt(tokenizer: Any, user: str, replies: tuple[str, ...] = ()) -> list[int]:
    """A sample's prompt: the task's shared system prompt, its own request, its turns so far."""
    turns = [("system", SYSTEM), ("user", user)]
    for reply in replies:
        turns += [("assistant", reply), ("user", f"output of: {reply}")]
    return prompt(tokenizer, turns)


LOGPROBS = DecodeParams(max_new_tokens=10, logprobs=True)


def same_as_scratch(model: Any, tokenizer: Any, ids: list[int], got: Generation) -> bool:
    """The check every reuse must pass: tokens equal and logprobs within 1e-4 of scratch."""
    expected = greedy(model, tokenizer, ids, LOGPROBS)[0]
    if got.token_ids != expected.token_ids:
        return False
    return all(
        abs(a.logprob - b.logprob) <= 1e-4 for a, b in zip(got.steps, expected.steps, strict=True)
    )


def test_second_sample_starts_from_the_first_samples_prompt(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    a = task_prompt(tokenizer, "create hello.txt")
    b = task_prompt(tokenizer, "create notes/plan.md")
    head = common_prefix(a, b)
    assert 20 < head < len(b) - 3  # a long shared head, a distinct request
    first = run.decode(Request(a, LOGPROBS, greedy_choice, key="a"))
    second = run.decode(Request(b, LOGPROBS, greedy_choice, key="b"))
    assert same_as_scratch(model, tokenizer, a, first)
    assert same_as_scratch(model, tokenizer, b, second)
    assert store.shared_tokens == head  # b computed only its own request
    # a's kept cache was copied from, not taken: a's second turn still resumes from it
    a2 = task_prompt(tokenizer, "create hello.txt", (tokenizer.decode(first.token_ids),))
    before = store.reused_tokens
    again = run.decode(Request(a2, LOGPROBS, greedy_choice, key="a"))
    assert same_as_scratch(model, tokenizer, a2, again)
    assert store.reused_tokens - before >= len(a)


def test_reusing_one_token_too_many_is_caught(
    tiny: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted off-by-one in the shared length puts the other sample's token in the cache."""
    model, tokenizer = tiny
    a = task_prompt(tokenizer, "create hello.txt")
    b = task_prompt(tokenizer, "create notes/plan.md")
    honest = common_prefix
    monkeypatch.setattr(
        kv_reuse, "common_prefix", lambda x, y: min(honest(x, y) + 1, len(x), len(y))
    )
    store = PrefixStore()
    run = engine(model, tokenizer, store)
    run.decode(Request(a, LOGPROBS, greedy_choice, key="a"))
    wrong = run.decode(Request(b, LOGPROBS, greedy_choice, key="b"))
    assert store.shared_tokens == honest(a, b) + 1
    assert not same_as_scratch(model, tokenizer, b, wrong)


def test_snapshots_are_bounded_and_deduplicated(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    store = PrefixStore(max_prefixes=2)
    run = engine(model, tokenizer, store)
    users = ["create a.txt", "create bb.txt", "create ccc.txt", "create dddd.txt"]
    prompts = [task_prompt(tokenizer, user) for user in users]
    for key, ids in enumerate(prompts):
        run.decode(Request(ids, PARAMS, greedy_choice, key=key))
    assert store.prefixes() == 2 and len(store) == 4
    held = sum(len(p) + 9 for p in prompts) + len(prompts[2]) + len(prompts[3])
    assert store.tokens() == held  # the two newest snapshots and the four samples
    # a prompt that extends a snapshot replaces it; one that a snapshot covers adds nothing
    store.clear()
    short_ids = prompts[0]
    full = greedy_cache(model, short_ids)
    store.share(short_ids, full)
    store.share(short_ids[:-4], kv_reuse.prefix_copy(full, len(short_ids) - 4))
    assert store.prefixes() == 1 and store.tokens() == len(short_ids)
    extended = [*short_ids, 5, 6]
    store.share(extended, greedy_cache(model, extended))
    assert store.prefixes() == 1 and store.tokens() == len(extended)
    # the token bound counts snapshots too
    tight = PrefixStore(max_tokens=len(extended) + 1)
    tight.share(short_ids, full)
    tight.share(prompts[1], greedy_cache(model, prompts[1]))
    assert tight.prefixes() == 1 and tight.tokens() == len(prompts[1])
    assert PrefixStore(max_prefixes=0).prefixes() == 0


def greedy_cache(model: Any, ids: list[int]) -> Any:
    """The KV cache of a prompt, computed from scratch."""
    import torch

    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids]), use_cache=True).past_key_values


def test_concurrent_samples_share_heads_and_stay_exact(tiny: tuple[Any, Any]) -> None:
    """Four threads run two-turn conversations at once on one batched engine."""
    model, tokenizer = tiny
    store = PrefixStore()
    run = DecodeEngine(model, tokenizer, threading.Lock(), store=store, max_batch=8)
    users = ["create a.txt", "create notes/b.md", "count lines", "print hello.txt"]
    failures: list[str] = []

    def sample(key: int) -> None:
        replies: tuple[str, ...] = ()
        for _ in range(2):
            ids = task_prompt(tokenizer, users[key], replies)
            got = run.decode(Request(ids, LOGPROBS, greedy_choice, key=key))
            if not same_as_scratch(model, tokenizer, ids, got):
                failures.append(f"sample {key} turn {len(replies)}")
            replies = (*replies, tokenizer.decode(got.token_ids))

    threads = [threading.Thread(target=sample, args=(key,)) for key in range(len(users))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert store.shared_tokens > 0 and run.widest >= 2
