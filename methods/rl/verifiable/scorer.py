"""The verifier as an Inspect scorer: the family's own reward (what RL optimised) per sample."""

from __future__ import annotations

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from docket.methods.rl.tasks import family as task_family


@scorer(metrics={"reward": [mean(), stderr()], "cla": [mean(), stderr()]})
def verifiable_reward(family: str) -> Scorer:
    """`reward` is 1 for a verified response, else 0 (arith: the first integer equals the
    result; constraints: every constraint holds); `cla` is the share of constraints satisfied
    (for arith, equal to `reward`).

    Args:
        family: Task family whose checker verifies the response: arith or constraints.

    Returns:
        A scorer with the values `reward` and `cla`.
    """
    checker = task_family(family)

    async def score(state: TaskState, target: Target) -> Score:
        problem = state.metadata["problem"]
        response = state.output.completion
        reward = checker.reward(problem, response)
        details = checker.details(problem, response)
        cla = float(details.get("cla", reward))
        verdict = "VERIFIED" if reward else "REJECTED"
        shown = response.strip()[:40] or "(empty)"
        return Score(
            value={"reward": reward, "cla": cla},
            answer=response,
            explanation=f"{verdict}: {shown!r} for {problem['prompt']!r}; {details}",
        )

    return score
