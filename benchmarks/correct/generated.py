"""Private test splits of `correct_localization`: `docket generate correct --seed SECRET --out DIR`.

`generate_split` writes `DIR/mas_trajectories.jsonl.gz`: `size` fresh trajectories of the
simulator (default: as many as the shipped test split), every one in the `test` split, with
opaque ids (`simulator.generate.trajectory_id`) and no seed in the records. `docket generate`
then writes `split.json` (the content hash) beside it, and `-T data=DIR` runs the task on it;
methods that train (`surface_baseline`, CORRECT's strict cache) train on the shipped train
split, which the private split never overlaps: no private question repeats a shipped one (train
or test) once irrelevant sentences are removed (`simulator.generate.question_key`).
"""

from __future__ import annotations

from pathlib import Path

from docket.benchmarks.correct.dataset import SPLIT_FILE, load_trajectories
from docket.benchmarks.correct.simulator.generate import generate_split as simulate
from docket.benchmarks.correct.simulator.generate import question_key
from docket.benchmarks.correct.simulator.records import write_trajectories

#: Trajectories of a generated split when no size is given (the shipped test split's size).
DEFAULT_SIZE = 1200


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a fresh test split generated from `seed` into `out`.

    Args:
        seed: The generator seed (`docket generate` derives it from the secret; never stored).
        out: The directory to write (it exists and is empty).
        size: Trajectories to generate (None: `DEFAULT_SIZE`).

    Raises:
        ValueError: `size` is below 1.
    """
    count = DEFAULT_SIZE if size is None else size
    if count < 1:
        raise ValueError(f"--size must be at least 1, not {count}")
    shipped = frozenset(question_key(t.question) for t in load_trajectories())
    write_trajectories(simulate(count, seed, split="test", taken=shipped), out / SPLIT_FILE)
