"""The four localisation methods as Inspect solvers.

Each writes `state.metadata["prediction"]` = {agent, step, reason, calls, note}; agent/step are
None when the model's answer names none (the scorer counts that as wrong, with the note).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from docket.agents.mas.records import Trajectory
from docket.agents.scripted.correct import rule_schema
from docket.benchmarks.correct import prompts
from docket.benchmarks.correct.cache import SchemaCache
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

Ask = Callable[[str], Awaitable[str]]


def _asker(state: TaskState, system: str, max_tokens: int) -> tuple[Ask, list[int]]:
    """A function that sends one prompt to the model under test (greedy), and a call counter."""
    model = get_model()
    calls = [0]

    async def ask(prompt: str) -> str:
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=system),
            ChatMessageUser(content=prompt),
        ]
        output: ModelOutput = await model.generate(
            messages, config=GenerateConfig(temperature=0.0, max_tokens=max_tokens)
        )
        calls[0] += 1
        state.messages = [*messages, output.message]
        state.output = output
        return output.completion

    return ask, calls


def _predict(
    state: TaskState, agent: str | None, step: int | None, reason: str, calls: int, note: str = ""
) -> TaskState:
    state.metadata["prediction"] = {
        "agent": agent,
        "step": step,
        "reason": reason,
        "calls": calls,
        "note": note,
    }
    return state


def _trajectory(state: TaskState, trajectories: dict[str, Trajectory]) -> Trajectory:
    return trajectories[str(state.sample_id)]


@solver
def all_at_once(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 512
) -> Solver:
    """Who&When all-at-once: one prompt with the whole log."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        ask, calls = _asker(state, prompts.SYSTEM, max_tokens)
        answer = await ask(prompts.all_at_once_prompt(trajectory, with_gt))
        parsed = prompts.parse_localisation(answer)
        return _predict(state, parsed.agent, parsed.step, answer, calls[0])

    return solve


@solver
def step_by_step(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 128
) -> Solver:
    """Who&When step-by-step: ask about each step in order; the first Yes is the prediction."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        ask, calls = _asker(state, prompts.SYSTEM, max_tokens)
        unclear = 0
        for step, entry in enumerate(trajectory.history):
            answer = await ask(prompts.step_prompt(trajectory, step, with_gt))
            verdict = prompts.parse_yes_no(answer)
            unclear += verdict is None
            if verdict:
                return _predict(state, entry.name, step, answer, calls[0])
        note = f"no step was flagged ({unclear} answers were neither Yes nor No)"
        return _predict(state, None, None, "", calls[0], note)

    return solve


@solver
def binary_search(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 128
) -> Solver:
    """Who&When binary search: halve the step range until one step is left."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        ask, calls = _asker(state, prompts.SYSTEM, max_tokens)
        low, high = 0, len(trajectory.history) - 1
        answer = ""
        while low < high:
            mid = (low + high) // 2
            answer = await ask(prompts.half_prompt(trajectory, low, mid, high, with_gt))
            half = prompts.parse_half(answer)
            if half is None:
                note = f"answer names neither half of steps {low}-{high}: {answer[:80]!r}"
                return _predict(state, None, None, answer, calls[0], note)
            low, high = (low, mid) if half == "lower" else (mid + 1, high)
        return _predict(state, trajectory.history[low].name, low, answer, calls[0])

    return solve


@dataclass
class CacheConfig:
    """How CORRECT's schema cache is built, queried and updated."""

    path: str
    fit: list[Trajectory]
    k: int = 5
    retriever: str = "bm25"
    delta: float = 0.9
    theta: float = 0.01
    decay: float = 0.995
    capacity: int = 0
    online: bool = True
    distiller: str = "rules"
    max_tokens: int = 512
    _cache: SchemaCache | None = field(default=None, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)


async def distil(trajectory: Trajectory, how: str, max_tokens: int) -> str:
    """One error schema: by the `distiller` role model (how='model') or by rules."""
    if how == "rules":
        history = [(s.name, s.content) for s in trajectory.history]
        return rule_schema(
            trajectory.question,
            history,
            trajectory.mistake_agent,
            trajectory.mistake_step,
            trajectory.mistake_reason,
        )
    model: Model = get_model(role="distiller")
    output = await model.generate(
        [
            ChatMessageSystem(content=prompts.DISTILL_SYSTEM),
            ChatMessageUser(content=prompts.distill_prompt(trajectory)),
        ],
        config=GenerateConfig(max_tokens=max_tokens),
    )
    sections = prompts.parse_schema(output.completion)
    if not any(sections.values()):  # unstructured reply: keep it whole as the signature
        sections[prompts.SECTIONS[0]] = output.completion.strip()
    label = (
        f"Label: Agent Name: {trajectory.mistake_agent}; Step Number: "
        f"{trajectory.mistake_step}; Reason: {trajectory.mistake_reason}"
    )
    return "\n".join(f"{name}: {body}" for name, body in sections.items()) + "\n" + label


def query_text(trajectory: Trajectory) -> str:
    """What the cache is searched with (and keyed by): the problem and the numbered log."""
    return f"{trajectory.question}\n{prompts.render_history(trajectory)}"


async def _cache(config: CacheConfig) -> SchemaCache:
    """The cache, filled from the fit trajectories on first use (once per task)."""
    async with config._lock:
        if config._cache is None:
            cache = SchemaCache(
                config.path,
                config.delta,
                config.theta,
                config.decay,
                config.capacity,
                config.retriever,
            )
            for trajectory in config.fit:
                if not cache.holds(trajectory.id):
                    text = await distil(trajectory, config.distiller, config.max_tokens)
                    cache.add(text, trajectory.id, key=query_text(trajectory))
            config._cache = cache
        return config._cache


@solver
def correct(
    trajectories: dict[str, Trajectory],
    config: CacheConfig,
    with_gt: bool = False,
    max_tokens: int = 512,
) -> Solver:
    """CORRECT: retrieve the top-k schemata, localise with them, then (online) cache this case."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        cache = await _cache(config)
        started = time.perf_counter()
        hits = cache.retrieve(query_text(trajectory), config.k, exclude_origin=trajectory.id)
        overhead = time.perf_counter() - started
        ask, calls = _asker(state, prompts.SYSTEM, max_tokens)
        answer = await ask(
            prompts.correct_prompt(trajectory, [h.entry.text for h in hits], with_gt)
        )
        parsed = prompts.parse_localisation(answer)
        update: dict[str, Any] = {"outcome": "none", "evicted": 0}
        if config.online:
            text = await distil(trajectory, config.distiller, config.max_tokens)
            started = time.perf_counter()
            outcome, _ = cache.add(text, trajectory.id, key=query_text(trajectory))
            update = {"outcome": outcome, "evicted": len(cache.evict())}
            overhead += time.perf_counter() - started
        state.metadata["cache"] = {
            "schemata": len(hits),
            "hit": int(bool(hits)),
            "ms": round(overhead * 1000, 3),
            "size": len(cache),
            "retrieved": [h.entry.id for h in hits],
            **update,
        }
        return _predict(state, parsed.agent, parsed.step, answer, calls[0])

    return solve
