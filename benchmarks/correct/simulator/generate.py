"""Generate failed trajectories with confirmed ground truth, and the shipped fixed split.

`make_trajectory(seed, index)` draws a task of the index's length tier, plays it cleanly, picks
a fault site and keeps the trajectory only when the counterfactual replay confirms the fault
(`confirm`) and the failed run still has `MIN_STEPS` steps; its `tier` is that of the failed
run's length. Sites are drawn so that no step is a likelier mistake than any other from its
position or turn kind alone: every step that can host an error weighs 1 (shared by the error
types it can host); a premature termination, which turns a dispatch into the closing turns, is
spread over its possible sites with `UNIQUE_TURN_WEIGHT` in total. No step weighs more than 1 in
total. Ids are opaque (`trajectory_id`) and records hold neither the seed nor the index.
`generate_split` keeps every question once (`question_key`: irrelevant sentences removed), so no
test question duplicates a train one.
Rebuild the shipped split with
`python benchmarks/correct/scripts/generate.py OUT.jsonl.gz -n 2400`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from docket.benchmarks.correct.simulator.irrelevant import without_irrelevant
from docket.benchmarks.correct.simulator.records import Step, Trajectory
from docket.benchmarks.correct.simulator.simulator import Fault, Run, TaskSpec, expected_answer, run
from docket.benchmarks.correct.simulator.tasks import (
    FAMILIES,
    MIN_STEPS,
    length_tier,
    make_task,
)

DATASET = "docket-mas"
GENERATOR = "docket-mas-sim/3c"
SPLIT_SEED = 2026
#: Length tier of the i-th trajectory: i % 5 -> short, short, medium, medium, long.
TIER_CYCLE = ("short", "short", "medium", "medium", "long")
#: Total weight of each error type whose mistake always lands on one recognisable turn.
UNIQUE_TURN_WEIGHT = {"premature_termination": 0.5, "wrapup": 0.5, "final": 0.5}
_ATTEMPTS = 20
#: Draws per index before `generate_split` gives up finding a question it does not hold.
_VARIANTS = 50
#: Error types weighed by the turn they turn into rather than by the step that hosts them.
_SPREAD = ("premature_termination",)


@dataclass(frozen=True)
class Verdict:
    """The counterfactual replay of one injected fault."""

    ok: bool
    problems: tuple[str, ...]
    clean: Run
    faulty: Run


def confirm(task: TaskSpec, fault: Fault) -> Verdict:
    """Check that `fault` alone makes the run fail and step `fault.step` is where it starts.

    The clean replay (step k restored) must answer correctly, the faulty run must not, both must
    agree on every step before k, and they must differ at step k.
    """
    clean = run(task)
    faulty = run(task, fault)
    k = fault.step
    problems = []
    if clean.answer in (None, "unknown", "error") or clean.answer != expected_answer(task):
        problems.append(f"the clean run has no usable answer ({clean.answer})")
    if faulty.answer == clean.answer:
        problems.append("the faulty run still answers correctly")
    if faulty.turns[:k] != clean.turns[:k]:
        problems.append(f"the runs differ before step {k}")
    if k >= len(faulty.turns) or k >= len(clean.turns) or faulty.turns[k] == clean.turns[k]:
        problems.append(f"the runs do not differ at step {k}")
    return Verdict(not problems, tuple(problems), clean, faulty)


def sites_by_kind(clean: Run) -> dict[str, list[int]]:
    """Error type -> the steps of a clean run that can host it."""
    table: dict[str, list[int]] = {}
    for step, kinds in sorted(clean.sites.items()):
        for kind in kinds:
            table.setdefault(kind, []).append(step)
    return table


def site_weights(clean: Run) -> list[tuple[int, str, float]]:
    """(step, error type, weight) of every fault site of a clean run (see the module doc)."""
    weighted: list[tuple[int, str, float]] = []
    sites = sites_by_kind(clean)
    for step, kinds in sorted(clean.sites.items()):
        turn = clean.kinds[step]
        if turn in ("wrapup", "final"):
            weighted += [(step, k, UNIQUE_TURN_WEIGHT[turn] / len(kinds)) for k in kinds]
            continue
        regular = [k for k in kinds if k not in _SPREAD]
        weighted += [(step, k, 1.0 / len(regular)) for k in regular]
    totals = {"premature_termination": UNIQUE_TURN_WEIGHT["premature_termination"]}
    for kind, total in totals.items():
        steps = sites.get(kind, [])
        weighted += [(step, kind, total / len(steps)) for step in steps if total > 0]
    per_step: dict[int, float] = {}
    for step, _, weight in weighted:
        per_step[step] = per_step.get(step, 0.0) + weight
    return [(s, k, w / max(per_step[s], 1.0)) for s, k, w in weighted]


def make_trajectory(
    seed: int, index: int, split: str = "", length: str = "", variant: int = 0
) -> Trajectory:
    """The `index`-th trajectory of the split generated from `seed` (same inputs, same output).

    `length`: a tier of `tasks.TIERS` (short, medium, long); '' cycles through them by index.
    `variant`: 0 for the index's first draw; `generate_split` asks for the next variant when
    the draw's question duplicates one it already holds (`question_key`).
    """
    rng = random.Random(f"{seed}:{index}" if not variant else f"{seed}:{index}:{variant}")
    tier = length or TIER_CYCLE[index % len(TIER_CYCLE)]
    family = list(FAMILIES)[(index // len(TIER_CYCLE)) % len(FAMILIES)]
    for _ in range(_ATTEMPTS):
        task = make_task(rng, tier, family)
        candidates = site_weights(run(task))
        while candidates:
            pick = rng.choices(range(len(candidates)), [w for _, _, w in candidates])[0]
            step, kind, _ = candidates.pop(pick)
            fault = Fault(kind, step, rng.randrange(10**9))
            verdict = confirm(task, fault)
            if verdict.ok and len(verdict.faulty.turns) >= MIN_STEPS:
                return _record(seed, index, split, task, fault, verdict)
    raise RuntimeError(f"no confirmed fault for seed={seed} index={index}")


def manifestation_delay(verdict: Verdict, step: int) -> int:
    """Steps from the fault to the first later turn that differs from the clean run."""
    clean, faulty = verdict.clean.turns, verdict.faulty.turns
    for later in range(step + 1, len(faulty)):
        if later >= len(clean) or faulty[later] != clean[later]:
            return later - step
    return len(faulty) - step


def _record(
    seed: int, index: int, split: str, task: TaskSpec, fault: Fault, verdict: Verdict
) -> Trajectory:
    turns = verdict.faulty.turns
    return Trajectory(
        id=trajectory_id(seed, index),
        question=task.question,
        ground_truth=str(verdict.clean.answer),
        history=tuple(Step(t.name, t.role, t.content) for t in turns),
        mistake_agent=turns[fault.step].name,
        mistake_step=fault.step,
        mistake_reason=verdict.faulty.reason,
        metadata={
            "dataset": DATASET,
            "generator_model": GENERATOR,
            "task_family": task.family,
            "error_type": fault.kind,
            "split": split,
            "final_answer": str(verdict.faulty.answer),
            "is_corrected": False,
            "tier": length_tier(len(turns)),
            "mistake_turn": verdict.faulty.kinds[fault.step],
            "delay": manifestation_delay(verdict, fault.step),
        },
    )


def trajectory_id(seed: int, index: int) -> str:
    """The opaque id of the `index`-th trajectory of `seed`: 16 hex digits of a SHA-256.

    Neither the seed nor the index can be read off it; only someone who already holds the seed
    can recompute it (for the shipped split, whose seed is public, so are its labels: private
    splits come from `docket generate correct --seed SECRET`).
    """
    return "mas-" + hashlib.sha256(f"docket-mas-id:{seed}:{index}".encode()).hexdigest()[:16]


def split_for(trajectory_id: str) -> str:
    """`train` or `test` by the parity of the first byte of the id's SHA-256."""
    return "train" if hashlib.sha256(trajectory_id.encode()).digest()[0] % 2 == 0 else "test"


def question_key(question: str) -> str:
    """A question as deduplication compares it: irrelevant sentences removed, spaces collapsed.

    Two trajectories with one key ask the same question (the same entities and numbers), whatever
    irrelevant sentences surround it; a question that differs only in its numbers is another
    question (another answer), so digits are kept.
    """
    return " ".join(without_irrelevant(question).split())


def generate_split(
    count: int,
    seed: int = SPLIT_SEED,
    length: str = "",
    split: str = "",
    taken: frozenset[str] = frozenset(),
) -> list[Trajectory]:
    """`count` trajectories whose questions are all different (`question_key`).

    Each trajectory is in the split `split_for` gives its id, or in `split` when one is given.
    Index i is `make_trajectory(seed, i)` unless its question is already held (by an earlier
    index or in `taken`); then it is the first variant whose question is new, so no test question
    repeats a train question (nor another test question) once irrelevant sentences are removed.

    Args:
        count: Trajectories.
        seed: The generator seed.
        length: One length tier only ('' cycles through them).
        split: The split of every trajectory ('' : by id).
        taken: Question keys the split must not hold (e.g. another file's).

    Returns:
        The trajectories, index order.

    Raises:
        RuntimeError: No new question in `_VARIANTS` draws for an index.
    """
    held = set(taken)
    trajectories = []
    for i in range(count):
        part = split or split_for(trajectory_id(seed, i))
        for variant in range(_VARIANTS):
            trajectory = make_trajectory(seed, i, part, length, variant)
            key = question_key(trajectory.question)
            if key not in held:
                break
        else:
            raise RuntimeError(f"no new question in {_VARIANTS} draws for seed={seed} index={i}")
        held.add(key)
        trajectories.append(trajectory)
    return trajectories
