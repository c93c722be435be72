"""The localisation methods as Inspect solvers.

Each writes `state.metadata["prediction"]` = {agent, step, reason, calls, note}; agent/step are
None when the model's answer names none (the scorer counts that as wrong, with the note).

CORRECT's cache runs as one stream over the evaluated trajectories in dataset order
(`SchemaStream`): for trajectory i it retrieves the top-k schemata, then (online) distils and adds
i's own labelled schema, replays hot schemata and evicts. Every cache operation for i happens
after those for 0..i-1 and before those for i+1.., whichever sample Inspect runs first, so the
schemata a trajectory sees never depend on concurrency, and a trajectory's own label is read
only after its retrieval is done.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from docket.benchmarks.correct import prompts
from docket.benchmarks.correct.cache import SchemaCache
from docket.benchmarks.correct.simulator.baselines import SurfaceBaseline
from docket.benchmarks.correct.simulator.records import Trajectory
from docket.benchmarks.correct.simulator.schema import Labelled, rule_schema
from docket.core.roles import role_model

NAME = "correct_localization"
DISTILLER_FLAG = "distiller_self"


async def _ask(state: TaskState, prompt: str, max_tokens: int) -> str:
    """Send one prompt to the model under test (greedy) and keep the exchange in the state."""
    messages: list[ChatMessage] = [
        ChatMessageSystem(content=prompts.SYSTEM),
        ChatMessageUser(content=prompt),
    ]
    output: ModelOutput = await get_model().generate(
        messages, config=GenerateConfig(temperature=0.0, max_tokens=max_tokens)
    )
    state.messages = [*messages, output.message]
    state.output = output
    return output.completion


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


def steps_of(trajectory: Trajectory) -> list[tuple[str, str]]:
    """(agent, content) per step."""
    return [(s.name, s.content) for s in trajectory.history]


@solver
def all_at_once(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 512
) -> Solver:
    """Who&When all-at-once: one prompt with the whole log.

    Args:
        trajectories: The evaluated trajectories by id.
        with_gt: Show the correct final answer in the prompts.
        max_tokens: Token limit of the model's answer.

    Returns:
        A solver that stores the predicted agent and step in `metadata["prediction"]`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        answer = await _ask(state, prompts.all_at_once_prompt(trajectory, with_gt), max_tokens)
        parsed = prompts.parse_localisation(answer)
        return _predict(state, parsed.agent, parsed.step, answer, 1)

    return solve


@solver
def step_by_step(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 128
) -> Solver:
    """Who&When step-by-step: ask about each step in order; the first Yes is the prediction.

    Args:
        trajectories: The evaluated trajectories by id.
        with_gt: Show the correct final answer in the prompts.
        max_tokens: Token limit of each answer.

    Returns:
        A solver that stores the predicted agent and step in `metadata["prediction"]`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        unclear = 0
        for step, entry in enumerate(trajectory.history):
            answer = await _ask(state, prompts.step_prompt(trajectory, step, with_gt), max_tokens)
            verdict = prompts.parse_yes_no(answer)
            unclear += verdict is None
            if verdict:
                return _predict(state, entry.name, step, answer, step + 1)
        note = f"no step was flagged ({unclear} answers were neither Yes nor No)"
        return _predict(state, None, None, "", len(trajectory.history), note)

    return solve


@solver
def binary_search(
    trajectories: dict[str, Trajectory], with_gt: bool = False, max_tokens: int = 128
) -> Solver:
    """Who&When binary search: halve the step range until one step is left.

    Args:
        trajectories: The evaluated trajectories by id.
        with_gt: Show the correct final answer in the prompts.
        max_tokens: Token limit of each answer.

    Returns:
        A solver that stores the predicted agent and step in `metadata["prediction"]`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        low, high = 0, len(trajectory.history) - 1
        answer, calls = "", 0
        while low < high:
            mid = (low + high) // 2
            answer = await _ask(
                state, prompts.half_prompt(trajectory, low, mid, high, with_gt), max_tokens
            )
            calls += 1
            half = prompts.parse_half(answer)
            if half is None:
                note = f"answer names neither half of steps {low}-{high}: {answer[:80]!r}"
                return _predict(state, None, None, answer, calls, note)
            low, high = (low, mid) if half == "lower" else (mid + 1, high)
        return _predict(state, trajectory.history[low].name, low, answer, calls)

    return solve


@dataclass
class SurfaceConfig:
    """The no-reasoning baseline: trained once per task on labelled trajectories."""

    train: list[Trajectory]
    _model: SurfaceBaseline | None = field(default=None, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def model(self) -> SurfaceBaseline:
        async with self._lock:
            if self._model is None:
                self._model = SurfaceBaseline().fit(
                    [steps_of(t) for t in self.train], [t.mistake_step for t in self.train]
                )
            return self._model


@solver
def surface_baseline(trajectories: dict[str, Trajectory], config: SurfaceConfig) -> Solver:
    """Blame the step a words-and-positions classifier finds likeliest (no model call).

    Args:
        trajectories: The evaluated trajectories by id.
        config: The baseline's labelled training trajectories (the classifier is fitted once).

    Returns:
        A solver that stores the predicted agent and step in `metadata["prediction"]`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        model = await config.model()
        step = model.predict(steps_of(trajectory))
        reason = "the surface baseline's likeliest step (words and position only)"
        return _predict(state, trajectory.history[step].name, step, reason, 0)

    return solve


@dataclass
class CacheConfig:
    """How CORRECT's schema cache is built, queried and updated."""

    path: str
    fit: list[Trajectory]
    items: list[Trajectory]
    identity: dict[str, str]
    k: int = 5
    retriever: str = "bm25"
    delta: float = 0.9
    theta: float = 0.01
    theta_hot: float = 3.0
    decay: float = 0.995
    capacity: int = 0
    online: bool = True
    distiller: str = "rules"
    distiller_self: bool = False
    max_tokens: int = 512


async def distil(
    trajectory: Trajectory, how: str, max_tokens: int, allow_self: bool = False
) -> str:
    """One error schema: by the `distiller` role model (how='model') or by rules."""
    if how == "rules":
        return rule_schema(
            trajectory.question,
            steps_of(trajectory),
            trajectory.mistake_agent,
            trajectory.mistake_step,
            trajectory.mistake_reason,
        )
    model = role_model(NAME, "distiller", allow_self=allow_self, self_flag=DISTILLER_FLAG)
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


async def merge_by_model(kept: str, new: str, max_tokens: int, allow_self: bool) -> str:
    """The `distiller` role rewrites two schemata as one (keeping the kept one's label)."""
    model = role_model(NAME, "distiller", allow_self=allow_self, self_flag=DISTILLER_FLAG)
    output = await model.generate(
        [
            ChatMessageSystem(content=prompts.DISTILL_SYSTEM),
            ChatMessageUser(content=prompts.merge_prompt(kept, new)),
        ],
        config=GenerateConfig(max_tokens=max_tokens),
    )
    sections = prompts.parse_schema(output.completion)
    if not any(sections.values()):
        return kept
    labels = [line for line in kept.splitlines() if line.startswith(("Label:", "Also labelled:"))]
    body = "\n".join(f"{name}: {text}" for name, text in sections.items() if text)
    return body + "\n" + "\n".join(labels)


def query_text(trajectory: Trajectory) -> str:
    """What the cache is searched with (and keyed by): the problem and the numbered log."""
    return f"{trajectory.question}\n{prompts.render_history(trajectory)}"


def labelled(trajectory: Trajectory) -> Labelled:
    """The trajectory as replay needs it."""
    return Labelled(trajectory.question, tuple(steps_of(trajectory)), trajectory.mistake_step)


@dataclass(frozen=True)
class Visit:
    """What the stream did for one trajectory."""

    schemata: tuple[str, ...]
    retrieved: tuple[int, ...]
    ms: float
    size: int
    outcome: str
    evicted: int
    replayed: tuple[int, ...]


class SchemaStream:
    """CORRECT's cache over the evaluated trajectories, one trajectory at a time, in order."""

    def __init__(self, config: CacheConfig) -> None:
        self.config = config
        self.order = {t.id: i for i, t in enumerate(config.items)}
        self.visits: dict[str, Visit] = {}
        self.cursor = 0
        self.cache: SchemaCache | None = None
        self._lock = asyncio.Lock()

    async def _add(self, cache: SchemaCache, trajectory: Trajectory) -> str:
        config = self.config
        text = await distil(trajectory, config.distiller, config.max_tokens, config.distiller_self)
        key = query_text(trajectory)
        if config.distiller == "rules":
            return cache.add(text, trajectory.id, key=key, labelled=labelled(trajectory))[0]
        if cache.holds(trajectory.id):
            return "known"
        best = cache.nearest(text)
        kept = cache.get(best[0]) if best is not None and best[1] >= cache.delta else None
        if kept is None:
            return cache.add(text, trajectory.id, key=key, labelled=labelled(trajectory))[0]
        merged = await merge_by_model(kept.text, text, config.max_tokens, config.distiller_self)
        cache.merge_into(kept.id, trajectory.id, merged, labelled(trajectory))
        return "merged"

    def _open_cache(self, path: str, identity: dict[str, str] | None) -> SchemaCache:
        config = self.config
        return SchemaCache(
            path,
            config.delta,
            config.theta,
            config.decay,
            config.capacity,
            config.retriever,
            identity=identity,
        )

    async def _open(self) -> SchemaCache:
        """Fit (or reuse) the cache at `path`, then work on a copy of it for this run."""
        config = self.config
        base = self._open_cache(config.path, config.identity)
        for trajectory in config.fit:
            if not base.holds(trajectory.id):
                await self._add(base, trajectory)
        base.close()
        work = Path(tempfile.mkdtemp(prefix="docket-correct-run-")) / "schemata.sqlite"
        shutil.copyfile(config.path, work)
        return self._open_cache(str(work), None)

    async def visit(self, trajectory_id: str) -> Visit:
        """The cache operations for `trajectory_id`, after those of every earlier trajectory."""
        async with self._lock:
            if self.cache is None:
                self.cache = await self._open()
            target = self.order[trajectory_id]
            while self.cursor <= target:
                item = self.config.items[self.cursor]
                self.visits[item.id] = await self._step(self.cache, item)
                self.cursor += 1
            return self.visits[trajectory_id]

    async def _step(self, cache: SchemaCache, trajectory: Trajectory) -> Visit:
        config = self.config
        started = time.perf_counter()
        hits = cache.retrieve(query_text(trajectory), config.k, exclude_origin=trajectory.id)
        outcome, evicted, replayed = "none", 0, []
        if config.online:
            replayed = cache.replay_hot(config.theta_hot, [h.entry.id for h in hits])
            outcome = await self._add(cache, trajectory)
            evicted = len(cache.evict())
        return Visit(
            schemata=tuple(h.entry.text for h in hits),
            retrieved=tuple(h.entry.id for h in hits),
            ms=round((time.perf_counter() - started) * 1000, 3),
            size=len(cache),
            outcome=outcome,
            evicted=evicted,
            replayed=tuple(replayed),
        )


@solver
def correct(
    trajectories: dict[str, Trajectory],
    stream: SchemaStream,
    with_gt: bool = False,
    max_tokens: int = 512,
) -> Solver:
    """CORRECT: the all-at-once prompt with the top-k schemata the stream retrieved.

    Args:
        trajectories: The evaluated trajectories by id.
        stream: CORRECT's schema cache, visited once per trajectory in order.
        with_gt: Show the correct final answer in the prompts.
        max_tokens: Token limit of the model's answer.

    Returns:
        A solver that stores the predicted agent and step in `metadata["prediction"]` and the
        cache's state in `metadata["cache"]`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        trajectory = _trajectory(state, trajectories)
        visit = await stream.visit(trajectory.id)
        prompt = prompts.correct_prompt(trajectory, list(visit.schemata), with_gt)
        answer = await _ask(state, prompt, max_tokens)
        parsed = prompts.parse_localisation(answer)
        state.metadata["cache"] = {
            "schemata": len(visit.schemata),
            "hit": int(bool(visit.schemata)),
            "ms": visit.ms,
            "size": visit.size,
            "retrieved": list(visit.retrieved),
            "outcome": visit.outcome,
            "evicted": visit.evicted,
            "replayed": list(visit.replayed),
        }
        return _predict(state, parsed.agent, parsed.step, answer, 1)

    return solve
