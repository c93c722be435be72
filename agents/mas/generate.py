"""Generate failed trajectories with confirmed ground truth, and the shipped fixed split.

`make_trajectory(seed, index)` draws a task, picks an error type (rotating through the taxonomy,
else any type the clean run can host) and a step that hosts it, injects it, and keeps it only
when the counterfactual replay confirms it (`confirm`). Rebuild a split with
`python -m docket.agents.mas.generate OUT.jsonl.gz -n 2400`.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from dataclasses import dataclass

from docket.agents.mas.records import Step, Trajectory, write_trajectories
from docket.agents.mas.simulator import Fault, Run, TaskSpec, run
from docket.agents.mas.tasks import FAMILIES
from docket.agents.mas.taxonomy import ERROR_TYPES

DATASET = "docket-mas"
GENERATOR = "docket-mas-sim/1"
SPLIT_SEED = 2026
_ATTEMPTS = 50


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
    if clean.answer in (None, "unknown", "error"):
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


def make_trajectory(seed: int, index: int, split: str = "") -> Trajectory:
    """The `index`-th trajectory of the split generated from `seed` (same inputs, same output)."""
    rng = random.Random(f"{seed}:{index}")
    family = list(FAMILIES)[index % len(FAMILIES)]
    wanted = ERROR_TYPES[(index // len(FAMILIES)) % len(ERROR_TYPES)]
    for attempt in range(_ATTEMPTS):
        task = FAMILIES[family](rng)
        sites = sites_by_kind(run(task))
        if not sites:
            continue
        # Aim at the error type this index rotates to; fall back to any the task can host.
        kind = wanted if wanted in sites and attempt < _ATTEMPTS // 2 else rng.choice(sorted(sites))
        if wanted not in sites and attempt < _ATTEMPTS // 2:
            continue
        fault = Fault(kind, rng.choice(sites[kind]), rng.randrange(10**9))
        verdict = confirm(task, fault)
        if verdict.ok:
            return _record(seed, index, split, task, fault, verdict)
    raise RuntimeError(f"no confirmed fault for seed={seed} index={index}")


def _record(
    seed: int, index: int, split: str, task: TaskSpec, fault: Fault, verdict: Verdict
) -> Trajectory:
    turns = verdict.faulty.turns
    return Trajectory(
        id=f"mas-{seed}-{index:05d}",
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
            "seed": seed,
            "index": index,
            "final_answer": str(verdict.faulty.answer),
            "is_corrected": False,
        },
    )


def split_for(trajectory_id: str) -> str:
    """`train` or `test` by the parity of the first byte of the id's SHA-256."""
    return "train" if hashlib.sha256(trajectory_id.encode()).digest()[0] % 2 == 0 else "test"


def generate_split(count: int, seed: int = SPLIT_SEED) -> list[Trajectory]:
    """`count` trajectories, each in the split `split_for` gives its id."""
    return [make_trajectory(seed, i, split_for(f"mas-{seed}-{i:05d}")) for i in range(count)]


def main(argv: list[str] | None = None) -> None:
    """CLI: write a generated split to a JSONL(.gz) file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("-n", "--count", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=SPLIT_SEED)
    args = parser.parse_args(argv)
    write_trajectories(generate_split(args.count, args.seed), args.out)


if __name__ == "__main__":
    main()
