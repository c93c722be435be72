"""Concurrent calls stepped together: batched greedy decoding equals one-at-a-time decoding."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ChatMessageUser, GenerateConfig

from docket.methods.local import batching
from docket.methods.local.batching import DecodeEngine, Request, StepCost, env_int
from docket.methods.local.kv_reuse import PrefixStore
from docket.methods.local.sampling import (
    DecodeParams,
    GenerationInterrupted,
    greedy,
    greedy_choice,
)
from tests.methods.local.test_kv_reuse import conversation, prompt, tiny

__all__ = ["tiny"]  # the shared fixture


def reference(model: Any, tokenizer: Any, ids: list[int], params: DecodeParams) -> Any:
    return greedy(model, tokenizer, ids, params)[0]


def prompts(tokenizer: Any) -> list[list[int]]:
    """Prompts of different lengths (so rows get different left padding)."""
    texts = ["ls", "print hello.txt and count the lines of notes/plan.md", "list the files, then"]
    return [prompt(tokenizer, [("user", text)]) for text in texts] + conversation(
        tokenizer, ["ls", "cat hello.txt"], "go"
    )


def run_together(engine: DecodeEngine, requests: list[Request]) -> list[Any]:
    """Submit every request while the engine's lock is held, so they overlap."""
    with engine.lock:
        futures = [engine.submit(r) for r in requests]
        time.sleep(0.05)
    return [f.result(timeout=60) for f in futures]


def test_batched_greedy_equals_unbatched(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    engine = DecodeEngine(model, tokenizer, threading.Lock(), PrefixStore(max_tokens=0), 8)
    sizes = [12, 4, 16, 9, 12, 7]  # rows finish at different steps and leave the batch
    params = [DecodeParams(max_new_tokens=n, logprobs=True) for n in sizes]
    ids = prompts(tokenizer)
    got = run_together(
        engine, [Request(i, p, greedy_choice) for i, p in zip(ids, params, strict=True)]
    )
    for generation, i, p in zip(got, ids, params, strict=True):
        expected = reference(model, tokenizer, i, p)
        assert generation.token_ids == expected.token_ids
        assert generation.text == expected.text
        assert generation.stop_reason == expected.stop_reason
        for mine, theirs in zip(generation.steps, expected.steps, strict=True):
            assert mine.logprob == pytest.approx(theirs.logprob, abs=1e-4)
    assert engine.widest >= 3  # the rows really were stepped together


def test_batched_rows_keep_exact_prefix_caches(tiny: tuple[Any, Any]) -> None:
    """Batching and reuse together: a second turn of each sample from its batched cache."""
    model, tokenizer = tiny
    store = PrefixStore()
    engine = DecodeEngine(model, tokenizer, threading.Lock(), store, 8)
    params = DecodeParams(max_new_tokens=8)
    convs = [conversation(tokenizer, [r], u) for r, u in (("ls", "a"), ("pwd", "bb"), ("x", "c"))]
    for turn in range(2):
        requests = [Request(c[turn], params, greedy_choice, key=k) for k, c in enumerate(convs)]
        got = run_together(engine, requests)
        for generation, c in zip(got, convs, strict=True):
            assert generation.token_ids == reference(model, tokenizer, c[turn], params).token_ids
    assert store.reused_tokens >= sum(len(c[0]) - 8 for c in convs)
    assert engine.widest == 3


def test_stop_sequences_and_logprobs_per_row(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    engine = DecodeEngine(model, tokenizer, threading.Lock(), PrefixStore(max_tokens=0), 8)
    ids = prompts(tokenizer)[:3]
    free = reference(model, tokenizer, ids[0], DecodeParams(max_new_tokens=12))
    stop = free.text[3:5] or free.text[:1]
    params = [
        DecodeParams(max_new_tokens=12, stop_seqs=(stop,)),
        DecodeParams(max_new_tokens=12, logprobs=True, top_logprobs=3),
        DecodeParams(max_new_tokens=12),
    ]
    got = run_together(
        engine, [Request(i, p, greedy_choice) for i, p in zip(ids, params, strict=True)]
    )
    for generation, i, p in zip(got, ids, params, strict=True):
        expected = reference(model, tokenizer, i, p)
        assert (generation.token_ids, generation.text) == (expected.token_ids, expected.text)
        assert [s.token_id for s in generation.steps] == [s.token_id for s in expected.steps]
        for mine, theirs in zip(generation.steps, expected.steps, strict=True):
            assert mine.logprob == pytest.approx(theirs.logprob, abs=1e-4)
    assert got[0].stop_reason == "stop" and stop not in got[0].text
    assert len(got[1].steps) == len(got[1].token_ids) and len(got[1].steps[0].top) == 3


def test_an_interrupted_row_leaves_and_the_others_finish(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    engine = DecodeEngine(model, tokenizer, threading.Lock(), PrefixStore(max_tokens=0), 8)
    ids = prompts(tokenizer)[:2]
    stop = threading.Event()
    long = DecodeParams(max_new_tokens=50, interrupted=stop.is_set)
    cancelled = Request(ids[0], long, greedy_choice)
    kept = Request(ids[1], DecodeParams(max_new_tokens=12), greedy_choice)
    with engine.lock:
        futures = [engine.submit(cancelled), engine.submit(kept)]
        stop.set()
    with pytest.raises(GenerationInterrupted):
        futures[0].result(timeout=60)
    assert (
        futures[1].result(timeout=60).token_ids
        == reference(model, tokenizer, ids[1], kept.params).token_ids
    )


def test_env_int_rejects_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_TEST_INT", "x8")
    with pytest.raises(ValueError, match="DOCKET_TEST_INT='x8': expected a non-negative integer"):
        env_int("DOCKET_TEST_INT", 1)
    monkeypatch.setenv("DOCKET_TEST_INT", "3")
    assert env_int("DOCKET_TEST_INT", 1) == 3


def test_provider_calls_are_batched_and_exact(
    tiny: tuple[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrent `generate` calls of the provider go through one engine, batched."""
    from docket.methods.local.provider import LocalHFModelAPI

    model, tokenizer = tiny
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    monkeypatch.setattr(batching, "_ENGINES", {})
    api = LocalHFModelAPI(f"local/{tmp_path}")
    questions = ["ls", "print hello.txt", "count the lines of notes/plan.md", "list the files"]
    config = GenerateConfig(max_tokens=10, temperature=0)

    async def ask(text: str) -> str:
        output = await api.generate([ChatMessageUser(content=text)], [], "none", config)
        return output.completion

    async def together() -> list[str]:
        with api.loaded.lock:  # hold the model until every call is queued
            tasks = [asyncio.create_task(ask(q)) for q in questions]
            await asyncio.sleep(0.2)
        return list(await asyncio.gather(*tasks))

    answers = asyncio.run(together())
    for text, answer in zip(questions, answers, strict=True):
        ids = api.prompt_ids([ChatMessageUser(content=text)], [], "none")
        expected = reference(api.loaded.model, api.loaded.tokenizer, ids, PARAMS_10)
        assert answer == expected.text
    engine = batching._ENGINES[id(api.loaded.model)]
    assert engine.widest == len(questions)
    assert api.max_connections() == 8


PARAMS_10 = DecodeParams(max_new_tokens=10)


# --- prompt-lookup drafts: checked in one forward pass, kept only where greedy agrees ---------


class Drafts:
    """A proposer that knows each prompt's greedy continuation: `right`, `wrong` or `none`."""

    def __init__(
        self, answers: dict[tuple[int, ...], list[int]], kinds: dict[tuple[int, ...], str]
    ):
        self.answers = answers
        self.kinds = kinds

    def __call__(self, context: list[int], limit: int) -> list[int]:
        for start, answer in sorted(self.answers.items(), key=lambda item: -len(item[0])):
            if tuple(context[: len(start)]) == start:  # the longest prompt it starts with
                done = len(context) - len(start)
                right = answer[done : done + limit]
                kind = self.kinds[start]
                if kind == "right":
                    return right
                if kind == "wrong":
                    return [(t + 1) % 300 for t in right]
                if kind == "half":  # the first token right, the rest wrong
                    return right[:1] + [(t + 1) % 300 for t in right[1:]]
                return []
        raise AssertionError("a context that starts with no known prompt")


class FixedCost(StepCost):
    """A token price that does not depend on how fast this machine ran the tiny model."""

    def __init__(self, price: float) -> None:
        super().__init__()
        self.price = price

    def ratio(self) -> float:
        return self.price


def drafted_engine(
    tiny: tuple[Any, Any],
    ids: list[list[int]],
    params: DecodeParams,
    kinds: list[str],
    price: float = 0.001,
) -> DecodeEngine:
    model, tokenizer = tiny
    answers = {tuple(i): reference(model, tokenizer, i, params).token_ids for i in ids}
    proposer = Drafts(answers, {tuple(i): k for i, k in zip(ids, kinds, strict=True)})
    engine = DecodeEngine(
        model, tokenizer, threading.Lock(), PrefixStore(), 8, max_draft=4, proposer=proposer
    )
    engine.cost = FixedCost(price)
    return engine


@pytest.mark.parametrize(
    "kinds",
    [
        ["right"] * 5,
        ["wrong"] * 5,
        ["right", "wrong", "none", "half", "right"],  # drafts of every length side by side
    ],
)
def test_drafted_rows_equal_greedy_decoding(tiny: tuple[Any, Any], kinds: list[str]) -> None:
    model, tokenizer = tiny
    ids = prompts(tokenizer)[:5]
    params = DecodeParams(max_new_tokens=14, logprobs=True)
    engine = drafted_engine(tiny, ids, params, kinds, 0.05 if kinds == ["wrong"] * 5 else 0.001)
    got = run_together(
        engine, [Request(i, params, greedy_choice, key=n) for n, i in enumerate(ids)]
    )
    for generation, i in zip(got, ids, strict=True):
        expected = reference(model, tokenizer, i, params)
        assert generation.token_ids == expected.token_ids
        assert generation.stop_reason == expected.stop_reason
        for mine, theirs in zip(generation.steps, expected.steps, strict=True):
            assert mine.logprob == pytest.approx(theirs.logprob, abs=1e-4)
    tokens = sum(len(g.token_ids) for g in got)
    if kinds == ["wrong"] * 5:
        # at 5 % of a pass a token, a row's draft is tried once or so; after its miss, none
        assert engine.accepted == 0 and 0 < engine.drafted <= 15 and engine.steps >= 13
    else:
        assert engine.accepted > 0
    if kinds == ["right"] * 5:  # 14 tokens a row: the prefill's, then 5 + 5 + 3 in 3 steps
        assert engine.steps == 3 and tokens == 70
        assert engine.accepted == engine.drafted == 5 * (4 + 4 + 2)
    # the kept caches hold exactly each row's tokens: the next turn from them is exact too
    for n, (i, generation) in enumerate(zip(ids, got, strict=True)):
        follow = [*i, *generation.token_ids, *prompt(tokenizer, [("user", "next")])]
        again = engine.decode(Request(follow, params, greedy_choice, key=n))
        assert again.token_ids == reference(model, tokenizer, follow, params).token_ids
    assert engine.store.reused_tokens >= sum(len(i) for i in ids)


def test_prompt_lookup_proposes_what_followed_the_tail() -> None:
    from docket.methods.local.lookup import propose

    context = [1, 2, 3, 4, 5, 9, 2, 3]  # the tail (2, 3) occurred at 1..2, then 4, 5, 9
    assert propose(context, 2) == [4, 5]
    assert propose(context, 10) == [4, 5, 9, 2, 3]
    assert propose([7, 1, 2, 8, 1, 2, 6, 5, 1, 2], 3) == [6, 5, 1]  # the latest occurrence
    assert propose([1, 2, 3, 1, 2, 3], 2, max_ngram=3) == [1, 2]  # the longest tail first
    assert propose([1, 2, 3, 4], 5) == []  # no tail recurs
    assert propose([5, 5], 3) == []  # a one-token tail is not enough
    assert propose(context, 0) == []


def test_draft_length_pays_only_where_drafts_are_accepted() -> None:
    from docket.methods.local.batching import best_draft_length

    # one row, tokens nearly free (a GPU): feed the whole draft when it is likely right
    assert best_draft_length([0.9], [8], 0.001) == 8
    # tokens cost 5 % of a weight pass (one CPU core): 5 rows, likely drafts: 4 of 8 tokens
    assert best_draft_length([0.8] * 5, [8] * 5, 0.05) == 4
    # unlikely drafts are not worth their padding: a plain step
    assert best_draft_length([0.1] * 5, [8] * 5, 0.05) == 0
    assert best_draft_length([0.9, 0.9], [0, 0], 0.05) == 0
    # one likely row among four without drafts still pays for its whole draft (6.05 tokens
    # per pass against 5.08 at 3 tokens and 3.70 with no draft)
    assert best_draft_length([0.95, 0.5, 0.5, 0.5], [8, 0, 0, 0], 0.02) == 8


def test_step_cost_fits_weight_pass_and_token_price() -> None:
    from docket.methods.local.batching import StepCost

    cost = StepCost()
    assert cost.ratio() == StepCost.DEFAULT_RATIO
    for tokens in (1, 5, 9, 45, 50, 400):
        cost.add(tokens, 0.5 + 0.02 * tokens)  # 0.5 s a pass, 20 ms a token
    assert cost.ratio() == pytest.approx(0.04)
    flat = StepCost()
    for _ in range(8):
        flat.add(5, 1.0)  # no spread in widths: nothing to fit
    assert flat.ratio() == StepCost.DEFAULT_RATIO


# --- drafts from the other samples' replies ----------------------------------------------------


class Gullible(DecodeEngine):
    """A mutant engine that takes every draft token as if greedy had chosen it."""

    def _verify(self, current: Any, draft: list[int], logits: Any) -> Any:
        logits = logits.clone()
        for j, token in enumerate(draft):
            logits[j, token] = 1e4
        return super()._verify(current, draft, logits)


def replies_engine(
    tiny: tuple[Any, Any], engine_class: type[DecodeEngine] = DecodeEngine
) -> DecodeEngine:
    """An engine whose only draft source is the other samples' replies."""
    model, tokenizer = tiny
    engine = engine_class(
        model,
        tokenizer,
        threading.Lock(),
        PrefixStore(max_tokens=0),
        8,
        max_draft=4,
        proposer=lambda context, limit: [],
    )
    engine.cost = FixedCost(0.001)
    return engine


def test_another_samples_reply_is_drafted_and_accepted(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    ids = prompts(tokenizer)[1]
    params = DecodeParams(max_new_tokens=14, logprobs=True)
    expected = reference(model, tokenizer, ids, params).token_ids
    engine = replies_engine(tiny)
    first = engine.decode(Request(ids, params, greedy_choice, key="a"))
    assert first.token_ids == expected
    assert (engine.accepted, engine.drafted, engine.steps) == (0, 0, 13)  # nothing to copy yet
    second = engine.decode(Request(ids, params, greedy_choice, key="b"))  # another sample
    assert second.token_ids == expected
    # the first sample's reply, from the assistant header on: 1 + 5 + 5 + 3 tokens in 3 steps
    assert (engine.accepted, engine.drafted, engine.steps) == (10, 10, 16)
    assert engine.replies.proposed == 10


@pytest.mark.parametrize("engine_class", [DecodeEngine, Gullible])
def test_a_wrong_reply_draft_never_reaches_the_output(
    tiny: tuple[Any, Any], engine_class: type[DecodeEngine]
) -> None:
    model, tokenizer = tiny
    ids = prompts(tokenizer)[1]
    params = DecodeParams(max_new_tokens=14)
    expected = reference(model, tokenizer, ids, params).token_ids
    engine = replies_engine(tiny, engine_class)
    # another sample's reply that agrees for two tokens, then differs at every one
    engine.replies.add([*ids[-3:], *expected[:2], *[(t + 1) % 300 for t in expected[2:]]])
    got = engine.decode(Request(ids, params, greedy_choice))
    assert engine.replies.proposed > 0
    if engine_class is Gullible:  # the check below catches an engine that skips verification
        assert got.token_ids != expected
    else:
        assert got.token_ids == expected
        assert engine.accepted >= 1 and engine.rejections >= 1


def test_reply_index_proposes_the_newest_continuation() -> None:
    from docket.methods.local.lookup import ReplyIndex

    index = ReplyIndex(capacity=2)
    index.add([1, 2, 3, 4])
    index.add([1, 2, 3, 5, 6])
    index.add([1, 2, 3, 5, 6])  # a repeat of the latest is not kept twice
    assert index.replies == [[1, 2, 3, 4], [1, 2, 3, 5, 6]]
    assert index.propose([9, 2, 3], 5) == [5, 6]  # the newest reply first
    assert index.propose([9, 2, 3], 5, others=[[2, 3, 7]]) == [7]  # rows in progress first
    assert index.propose([8, 1, 2, 3, 4], 1) == []  # 3 4 and 4: nothing follows
    index.add([7, 7, 8])
    assert index.replies == [[1, 2, 3, 5, 6], [7, 7, 8]]  # the oldest went
    assert index.propose([0, 7], 3) == []  # a one-token tail is not enough
    assert index.propose([0, 7, 7], 3) == [8]
    assert ReplyIndex(capacity=0).replies == [] and index.propose([2, 3], 0) == []
    assert index.proposed == 1 + 2 + 1
