"""Regenerate the shipped evaluation set of `docket/context_qa`.

    python benchmarks/context_qa/scripts/dataset.py

writes `benchmarks/context_qa/data/` from `docket.benchmarks.context_qa.dataset` (a test checks
that the shipped files match what it generates).
"""

from __future__ import annotations

from docket.benchmarks.context_qa.dataset import DATA, EVAL_CONTEXTS, EVAL_SEED, generate, write


def main() -> None:
    """Write the shipped evaluation set from its fixed seed."""
    write(*generate(EVAL_CONTEXTS, EVAL_SEED), DATA)


if __name__ == "__main__":
    main()
