"""Train the surface attacker on the train split and score it on the test split.

`python benchmarks/correct/scripts/attack.py [DATA]` (default: the shipped data; DATA is a
trajectory file or a `docket generate correct` directory) prints chance (the best constant
position policy on the test split), the attacker's exact-step and agent accuracy by docket's
`localisation_value`, and its step accuracy per error type next to that type's chance.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from docket.benchmarks.correct.attack import SurfaceAttacker, chance, evaluate
from docket.benchmarks.correct.dataset import load_trajectories, select
from docket.benchmarks.correct.simulator.records import Trajectory


def main(argv: list[str] | None = None) -> None:
    """CLI: print the attacker's scores next to chance."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="")
    parser.add_argument("--train-size", type=int, default=0, help="first N train trajectories")
    args = parser.parse_args(argv)
    everything = load_trajectories(args.data)
    train, test = select(everything, "train", args.train_size), select(everything, "test")
    attacker = SurfaceAttacker().fit(train)
    predictions = attacker.predict_all(test)
    scored, base = evaluate(predictions, test), chance(test)
    print(f"train {len(train)}, test {len(test)}")
    print(f"chance: step {base['step']:.3f}, agent {base['agent']:.3f}")
    print(f"attacker: step {scored['step']:.3f}, agent {scored['agent']:.3f}")
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    hits: dict[str, list[float]] = defaultdict(list)
    for (_, step), trajectory in zip(predictions, test, strict=True):
        kind = str(trajectory.metadata.get("error_type", "unknown"))
        groups[kind].append(trajectory)
        hits[kind].append(float(step == trajectory.mistake_step))
    print(f"{'error type':24} {'n':>4} {'attacker':>8} {'chance':>7}")
    for kind in sorted(groups):
        score = sum(hits[kind]) / len(hits[kind])
        print(f"{kind:24} {len(hits[kind]):4d} {score:8.3f} {chance(groups[kind])['step']:7.3f}")


if __name__ == "__main__":
    main()
