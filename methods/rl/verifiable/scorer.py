"""The verifier as an Inspect scorer: the family's own reward (what RL optimised) per sample.

What counts as an answer depends on the prompt style. `instructed` (chat models): the answer a
chat model states (`docket.core.answers`: for arith a `\\boxed{}` value, `ANSWER: N`, the value
after the last `=`, else the last number that is not an operand; for constraints the one word of
the reply, `ANSWER: word` or a bare word). `bare` (the RL runner's checkpoints): what the runner
rewards, the first integer / the first word, except that an arith reply restating the
expression (`779 + 2 = 781`) is read as a chat model's. A reply that states no answer, only
repeats the operands, or lists several candidates scores 0 with `parsed: false` and its reason
in the metadata, and counts in the `unparsed` metric.
"""

from __future__ import annotations

import re

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from docket.core.answers import Extraction, extract_number, extract_text, parse_metadata
from docket.methods.rl.tasks import Problem
from docket.methods.rl.tasks import family as task_family
from docket.methods.rl.tasks.arith import first_integer

_LETTERS = re.compile(r"[A-Za-z]+")
_WORD_LEAD = re.compile(r"^(?:the\s+)?(?:final\s+)?(?:word|answer)\s*(?:is\b|:)\s*", re.I)


def arith_answer(problem: Problem, response: str, style: str) -> Extraction:
    """The number an arith reply answers (see the module docstring).

    Args:
        problem: The problem (`a`, `b`, `answer`).
        response: The reply.
        style: `instructed` or `bare`.

    Returns:
        The extraction (its value the answer as text).
    """
    operands = (str(problem["a"]), str(problem["b"]))
    first = first_integer(response)
    if style == "bare" and first is not None and str(first) != operands[0]:
        return Extraction(str(first), "first_integer")
    return extract_number(response, echoed=operands)


def constraints_answer(response: str, style: str) -> Extraction:
    """The word a constraints reply answers (see the module docstring).

    Args:
        response: The reply.
        style: `instructed` or `bare`.

    Returns:
        The extraction (its value the lower-cased word).
    """
    if style == "bare":
        words = response.strip().split()
        return Extraction(words[0], "first_word") if words else Extraction(None, reason="empty")
    found = extract_text(response)
    if found.value is None:
        return found
    words = _LETTERS.findall(_WORD_LEAD.sub("", found.value))
    if len(words) != 1:
        shown = ", ".join(words[:4]) or found.value[:30]
        return Extraction(None, reason=f"not one word ({shown})")
    return Extraction(words[0].lower(), found.form)


def verify(
    family: str, problem: Problem, response: str, style: str
) -> tuple[float, float, Extraction]:
    """The reward, the constraint share and the extraction of one reply.

    Args:
        family: arith or constraints.
        problem: The problem (its metadata row).
        response: The reply.
        style: `instructed` or `bare` (what counts as an answer, see the module docstring).

    Returns:
        (reward, cla, extraction): 0 and 0 for an unparsed reply.
    """
    if family == "arith":
        found = arith_answer(problem, response, style)
        reward = float(found.value is not None and found.value == str(problem["answer"]))
        return reward, reward, found
    found = constraints_answer(response, style)
    if found.value is None:
        return 0.0, 0.0, found
    checker = task_family(family)
    details = checker.details(problem, found.value)
    return checker.reward(problem, found.value), float(str(details["cla"])), found


@scorer(metrics={"reward": [mean(), stderr()], "cla": [mean(), stderr()], "unparsed": [mean()]})
def verifiable_reward(family: str, style: str = "instructed") -> Scorer:
    """`reward` is 1 for a verified answer, else 0 (arith: the answer equals the result;
    constraints: every constraint holds); `cla` is the share of constraints satisfied (for
    arith, equal to `reward`); `unparsed` is 1 when the reply states no readable answer.

    Args:
        family: Task family whose checker verifies the response: arith or constraints.
        style: The prompt style (`instructed` or `bare`), which sets what counts as an answer.

    Returns:
        A scorer with the values `reward`, `cla` and `unparsed`.
    """
    task_family(family)  # an unknown family fails when the task is built

    async def score(state: TaskState, target: Target) -> Score:
        problem = state.metadata["problem"]
        response = state.output.completion
        reward, cla, found = verify(family, problem, response, style)
        verdict = "VERIFIED" if reward else "REJECTED" if found.parsed else "UNPARSED"
        shown = response.strip()[:40] or "(empty)"
        why = f"{found.form}: {found.value!r}" if found.parsed else found.reason
        return Score(
            value={"reward": reward, "cla": cla, "unparsed": float(not found.parsed)},
            answer=found.value,
            explanation=f"{verdict}: {shown!r} for {problem['prompt']!r} ({why}); cla {cla:g}",
            metadata=parse_metadata(found),
        )

    return score
