"""Regenerate the shipped evaluation set of `docket/spatial_relations`.

    python benchmarks/spatial_relations/scripts/dataset.py

writes `benchmarks/spatial_relations/data/` from `docket.benchmarks.spatial_relations.dataset`
(a test checks that the shipped files match what it generates).
"""

from __future__ import annotations

from docket.benchmarks.spatial_relations.dataset import (
    DATA,
    EVAL_SEED,
    EVAL_SIZE,
    evaluation_split,
    write,
)


def main() -> None:
    """Write the shipped evaluation set from its fixed seed."""
    write(evaluation_split(EVAL_SIZE, EVAL_SEED), DATA)


if __name__ == "__main__":
    main()
