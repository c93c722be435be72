"""`docket/rl_arith`: multi-digit arithmetic (`347+8=`, `90-6=`) scored by an exact verifier.

The benchmark of `python -m docket.methods.rl.run --task arith`: a checkpoint it writes is
scored with `inspect eval docket/rl_arith --model docket/local/OUT/model`.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate

from docket.core.headline import headline
from docket.core.options import checked, one_of, positive

from .dataset import load_problems, to_dataset
from .prompts import STYLES
from .scorer import verifiable_reward

VERSION = "1-A"


#: Generation limit per answer when -T max_tokens is not given: the RL runner's for `bare`,
#: room for a chat model's sentence for `instructed`.
DEFAULT_TOKENS = {"arith": 5, "constraints": 8, "instructed": 32}


def verifiable_task(
    name: str,
    family: str,
    benchmark: str,
    data: str,
    style: str,
    max_tokens: int | None,
    tags: list[str],
) -> Task:
    """The Task shared by the verifiable-reward benchmarks."""
    style = one_of(name, "style", style, STYLES)
    if max_tokens is None:
        max_tokens = DEFAULT_TOKENS[family if style == "bare" else style]
    problems = load_problems(name, family, checked(name, "data", data, str), benchmark)
    h = headline(
        "verifiable_reward",
        "mean",
        score="reward",
        direction="higher",
        value="binary",
        sample_key="reward",
    )
    return Task(
        dataset=to_dataset(family, problems, style, benchmark),
        solver=generate(),
        scorer=verifiable_reward(family),
        config=GenerateConfig(temperature=0.0, max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        tags=tags,
        headline_metric=h["headline_metric"],
        metadata={**h["metadata"], "benchmark": benchmark, "family": family, "style": style},
    )


@task
def rl_arith(data: str = "", style: str = "bare", max_tokens: int | None = None) -> Task:
    """Addition and subtraction of a 3-digit and a 1-digit number; exact-match reward.

    Args:
        data: '' for the shipped 200-problem test split, or a JSONL path with the same fields
            (id, prompt, answer).
        style: `bare` (the expression alone, as the RL runner trains) or `instructed` (one line
            asking for the number only, for chat models).
        max_tokens: Generation limit per answer (default 5, what the RL runner samples; 32
            with style=instructed).
    """
    return verifiable_task(
        "rl_arith", "arith", "rl_arith", data, style, max_tokens, ["rl", "math", "verifiable"]
    )
