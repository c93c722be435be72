"""Blind students of `docket/toy_math_sar` (issue #53 item 3): traces that never compute a step.

The headline, `rs_yield`, is the share of the student's K samples whose every step verifies
(`scorer.trace_verifier`). A blind student copies each step's operator and operand from the
problem and writes a result it recalls or guesses, never one it computes. It writes the same
trace K times (sampling its guesses could only lower its expected yield), so its yield on a
problem is 1 when its trace verifies, else 0. Each is fitted on every public chain that is not a
SAR problem (`fit_chains`: the `test` and `pretrain` splits to their public reach, less the
first 1 000 `train` chains) and scored on the task's default problems (the first 100 `train`
chains), each style-A trace checked by the task's verifier:

- `constant`: `toy_math_constant`'s `ANSWER: 0` (no step): never verifies;
- `step_majority`: each step's result the most frequent result at that step position;
- `step_prior`: each step's result drawn from the frequencies at that position; its exact
  expected yield (the product of the true results' frequencies, averaged over problems);
- `forest`: per step position, a random forest over the problem's surface numbers
  (`attacks.surface`) predicts the result as a class;
- `prefix_memory`: the result a fitted chain with the same start and the same steps so far
  records (a longer problem that begins like this one), else the forest's guess.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docket.benchmarks.toy_math.attacks import MAX_STEPS, surface
from docket.benchmarks.toy_math.dataset import PUBLIC_REACH, public_chains, split_chains
from docket.benchmarks.toy_math.reference import Chain, style_a
from docket.benchmarks.toy_math.scorer import trace_verifier

#: The task's default problems (`toy_math_sar -T split=train -T size=100`).
SCORED = 100
#: `toy_math_constant`'s reply.
CONSTANT_REPLY = "ANSWER: 0"

#: A blind student's result for each step of a problem.
Guess = Callable[[Chain], list[int]]


@dataclass(frozen=True)
class Row:
    """One blind student's rs_yield on the scored problems."""

    name: str
    rs_yield: float


def fit_chains() -> list[Chain]:
    """Every public chain that is not one of the first `PUBLIC_REACH["train"]` train problems,
    in a fixed order (start, steps)."""
    sar = set(split_chains("train", PUBLIC_REACH["train"]))
    return sorted(public_chains() - sar, key=lambda c: (c.start, c.steps))


def written(chain: Chain, results: Sequence[int]) -> str:
    """A style-A trace of `chain` stating `results` (each line starts from the previous result
    it states, as a student's running value does)."""
    lines, value = [], chain.start
    for (op, operand), result in zip(chain.steps, results, strict=True):
        lines.append(f"{value}{op}{operand}={result}")
        value = result
    return "\n".join([*lines, f"ANSWER: {value}"])


def verified_share(texts: Sequence[str], problems: Sequence[Chain]) -> float:
    """The share of `texts` (one trace per problem) that the task's verifier accepts."""
    ok = [trace_verifier(c)(t) for t, c in zip(texts, problems, strict=True)]
    return sum(ok) / len(problems)


def guess_yield(guess: Guess, problems: Sequence[Chain]) -> float:
    """rs_yield of a deterministic blind student (its trace, K times, on each problem)."""
    return verified_share([written(c, guess(c)) for c in problems], problems)


def position_counts(fit: Sequence[Chain]) -> list[Counter[int]]:
    """The results at each step position of the fitted chains."""
    counts: list[Counter[int]] = [Counter() for _ in range(MAX_STEPS)]
    for chain in fit:
        for position, value in enumerate(chain.values()):
            counts[position][value] += 1
    return counts


def step_majority(fit: Sequence[Chain]) -> Guess:
    """Each step's most frequent result at its position (the first of tied results)."""
    modes = [c.most_common(1)[0][0] if c else 0 for c in position_counts(fit)]
    return lambda chain: modes[: len(chain.steps)]


def expected_prior_yield(fit: Sequence[Chain], problems: Sequence[Chain]) -> float:
    """The exact expected rs_yield of results drawn from each position's frequencies: a trace
    verifies only when every drawn result is the true one.

    Args:
        fit: The chains the frequencies are counted on.
        problems: The scored problems.

    Returns:
        The mean over `problems` of the product of their true results' frequencies.
    """
    counts = position_counts(fit)
    total = 0.0
    for chain in problems:
        p = 1.0
        for position, value in enumerate(chain.values()):
            seen = sum(counts[position].values())
            p *= counts[position][value] / seen if seen else 0.0
        total += p
    return total / len(problems)


def forest(fit: Sequence[Chain]) -> Guess:
    """One random forest per step position over `attacks.surface`, fitted on `fit`."""
    from sklearn.ensemble import RandomForestClassifier

    models = []
    for position in range(MAX_STEPS):
        rows = [c for c in fit if len(c.steps) > position]
        model = RandomForestClassifier(n_estimators=100, random_state=0)
        model.fit([surface(c) for c in rows], [c.values()[position] for c in rows])
        models.append(model)

    def guess(chain: Chain) -> list[int]:
        features = [surface(chain)]
        return [int(models[i].predict(features)[0]) for i in range(len(chain.steps))]

    return guess


def prefix_memory(fit: Sequence[Chain], fallback: Guess) -> Guess:
    """The result a fitted chain with the same start and steps so far records, else
    `fallback`'s guess for that step.

    Args:
        fit: The chains it recalls.
        fallback: The guess for steps whose prefix no fitted chain holds.

    Returns:
        The guess.
    """
    recalled: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
    for chain in fit:
        for n, value in enumerate(chain.values(), 1):
            recalled.setdefault((chain.start, chain.steps[:n]), value)

    def guess(chain: Chain) -> list[int]:
        other = fallback(chain)
        keys = [(chain.start, chain.steps[:n]) for n in range(1, len(chain.steps) + 1)]
        return [recalled.get(key, o) for key, o in zip(keys, other, strict=True)]

    return guess


def oracle_yield(problems: Sequence[Chain]) -> float:
    """rs_yield of `toy_math_student -M error_rate=0` (style A, every step computed)."""
    return verified_share([style_a(c) for c in problems], problems)


def attack_rows(
    fit: Sequence[Chain] | None = None, problems: Sequence[Chain] | None = None
) -> list[Row]:
    """Every blind student's rs_yield, fitted on `fit`, scored on `problems`.

    Args:
        fit: The chains it may recall (default: `fit_chains()`).
        problems: The scored problems (default: the first `SCORED` train chains).

    Returns:
        One row per blind student: constant, step_majority, step_prior, forest, prefix_memory.
    """
    fit = list(fit) if fit is not None else fit_chains()
    problems = list(problems) if problems is not None else split_chains("train", SCORED)
    learned = forest(fit)
    return [
        Row("constant", verified_share([CONSTANT_REPLY] * len(problems), problems)),
        Row("step_majority", guess_yield(step_majority(fit), problems)),
        Row("step_prior", round(expected_prior_yield(fit, problems), 6)),
        Row("forest", guess_yield(learned, problems)),
        Row("prefix_memory", guess_yield(prefix_memory(fit, learned), problems)),
    ]
