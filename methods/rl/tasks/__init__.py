"""Verifiable-reward task families (pure Python): multi-digit arithmetic and instruction
following with mechanically checkable constraints. Shared by the runner and the Inspect tasks
`docket/rl_arith` and `docket/rl_constraints`."""

from __future__ import annotations

from .arith import ArithFamily
from .base import Problem, TaskFamily
from .constraints import ConstraintsFamily

FAMILIES: dict[str, type[TaskFamily]] = {"arith": ArithFamily, "constraints": ConstraintsFamily}


def family(name: str) -> TaskFamily:
    """The task family called `name` (ValueError listing the accepted names otherwise)."""
    if name not in FAMILIES:
        raise ValueError(f"unknown task family {name!r} (accepted: {', '.join(FAMILIES)})")
    return FAMILIES[name]()


__all__ = ["FAMILIES", "ArithFamily", "ConstraintsFamily", "Problem", "TaskFamily", "family"]
