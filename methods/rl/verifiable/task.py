"""The Task of a verifiable-reward benchmark (`docket/rl_arith`, `docket/rl_constraints`).

Each benchmark names itself with a `VerifiableBenchmark` (its task name, the `docket.methods.rl`
task family that verifies its answers, its own shipped test split) and builds its task with
`verifiable_task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate

from docket.core.headline import headline
from docket.core.options import checked, one_of, positive
from docket.core.results_tables import attacker_scores, chance_metadata

from .dataset import load_problems, to_dataset
from .prompts import STYLES
from .scorer import verifiable_reward

#: 2-A: `instructed` is the default style, and a chat model's stated answer counts (`scorer.py`);
#: 1-A read the first integer / first word of every reply.
VERSION = "2-A"


#: Generation limit per answer when -T max_tokens is not given: the RL runner's for `bare`,
#: room for a chat model's sentence for `instructed`.
DEFAULT_TOKENS = {"arith": 5, "constraints": 8, "instructed": 32}


@dataclass(frozen=True)
class VerifiableBenchmark:
    """A verifiable-reward benchmark.

    Attributes:
        name: The task name without `docket/`.
        family: The `docket.methods.rl` task family that renders and verifies its problems.
        tags: The task's tags.
        shipped: The benchmark's shipped test split (a JSONL file in its own folder).
        version: The task's version (`N-X`; each benchmark bumps its own).
        chance: The benchmark's committed chance file (`{"name", "reward"}` per blind
            attacker, on its shipped test split), whose strongest attacker the task records in
            its metadata (`chance`); None records none.
    """

    name: str
    family: str
    tags: tuple[str, ...]
    shipped: Path
    version: str = VERSION
    chance: Path | None = None


def verifiable_task(
    benchmark: VerifiableBenchmark, data: str, style: str, max_tokens: int | None
) -> Task:
    """The Task of a verifiable-reward benchmark, checked `-T` arguments applied.

    Args:
        benchmark: Which benchmark (name, task family, tags).
        data: '' for the benchmark's shipped test split, or a JSONL path with the same fields.
        style: `instructed` or `bare` (see `prompts.py`; it also sets what counts as an answer).
        max_tokens: Generation limit per answer (None: `DEFAULT_TOKENS`).

    Returns:
        The Inspect task, scored by the family's exact verifier.
    """
    name, family = benchmark.name, benchmark.family
    style = one_of(name, "style", style, STYLES)
    if max_tokens is None:
        max_tokens = DEFAULT_TOKENS[family if style == "bare" else style]
    problems = load_problems(name, family, checked(name, "data", data, str), benchmark.shipped)
    h = headline(
        "verifiable_reward",
        "mean",
        score="reward",
        direction="higher",
        value="binary",
        sample_key="reward",
    )
    return Task(
        dataset=to_dataset(family, problems, style, name),
        solver=generate(),
        scorer=verifiable_reward(family, style),
        config=GenerateConfig(temperature=0.0, max_tokens=positive(name, "max_tokens", max_tokens)),
        version=benchmark.version,
        tags=list(benchmark.tags),
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": name,
            "family": family,
            "style": style,
            **_chance(benchmark.chance),
        },
    )


def _chance(path: Path | None) -> dict[str, Any]:
    """Task metadata `chance`: the strongest blind attacker's reward (the headline)."""
    if path is None:
        return {}
    return chance_metadata(path, lambda rows: attacker_scores(rows, "reward"))
