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
from docket.methods.local.batching import DecodeEngine, Request, env_int
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
