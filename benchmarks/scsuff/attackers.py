"""A learned surface attacker of SCSuff's headline, `scsuff_gain` (issue #29 item 1).

It never reasons about the item. It is trained on a freshly generated feature-rule split
(`TRAIN_SEED`, never the shipped test items of seed 42) and scored on the task's default split:

- the **answerer**: gradient boosting over surface features of the passage (each feature's
  value index, whether the rule line names the feature, whether the rule's value for it equals
  the profile's: string equality only) gives p(yes);
- the **explainer**: gradient boosting over (item, candidate) surface features predicts each
  candidate explanation's gain, learned from the gains the pipeline gives on the train split,
  and picks the best candidate per test item. Candidates that make no claim about how the
  features decide: nothing, a list of any subset of the feature names, a copy of the passage
  (`CLAIM_FREE`); and, reported apart, copies of any subset of the profile lines (`FACT_LINES`),
  which state feature values.

The pipeline is the task's own, run offline: the known-prior generator (`reference.rewrite`,
call seeds `CALL_SEED` + j), SCSuff and its explanation-free reference (`estimator.scsuff`) and the
variation coverage (`scorer.variation_coverage`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

from docket.benchmarks.scsuff.dataset import (
    FEATURES,
    Item,
    feature_rule_items,
    item_key,
    render,
)
from docket.benchmarks.scsuff.estimator import scsuff
from docket.benchmarks.scsuff.reference import (
    CONSTANT_EXPLANATION,
    distribution,
    explanation,
    parse_passage,
    rewrite,
)
from docket.benchmarks.scsuff.scorer import WRONG_ANSWER_FLOOR, variation_coverage

TRAIN_SEED = 2029
TEST_SEED = 42
#: The task's per-call generator seeds start at its `seed` (42 by default).
CALL_SEED = 42
NAMES = tuple(FEATURES)
#: Families of candidate explanations.
CLAIM_FREE = "claim_free"
FACT_LINES = "fact_lines"
_CLIP = 0.02


def train_items(test: Sequence[Item], n: int = 100, seed: int = TRAIN_SEED) -> list[Item]:
    """`n` distinct feature-rule items drawn with `seed`, none of them a `test` item.

    The feature-rule world has 1 600 distinct items, so two seeded draws of 100 share some: a
    draw that is a test item (`dataset.item_key`) is redrawn.

    Args:
        test: The items the attacker is scored on.
        n: How many train items.
        seed: The train split's seed.

    Returns:
        The train items, in draw order.
    """
    return feature_rule_items(n, seed, [item_key(i) for i in test])


@dataclass(frozen=True)
class Candidate:
    """A candidate explanation: its family, the features it touches and its text."""

    family: str
    kind: str
    features: frozenset[str]
    text: str


def passage_features(passage: str) -> list[float]:
    """Surface features: per feature its value index, whether the rule line names it, and
    whether the rule's value for it equals the profile's (string equality)."""
    parsed = parse_passage(passage)
    values = {name: value for name, value, _ in parsed.features}
    rule = dict(parsed.conditions)
    row: list[float] = []
    for name in NAMES:
        support = FEATURES[name]
        value = values.get(name, "")
        row += [
            float(support.index(value)) if value in support else -1.0,
            float(name in rule),
            float(rule.get(name) == value),
        ]
    return [*row, float(len(rule))]


def _profile_lines(passage: str) -> dict[str, str]:
    lines = {}
    for line in passage.splitlines():
        for name in NAMES:
            if line.startswith(f"- {name}: "):
                lines[name] = line
    return lines


def candidates(passage: str, families: Sequence[str]) -> list[Candidate]:
    """Every candidate explanation of the given families for `passage`."""
    found: list[Candidate] = []
    subsets = [frozenset(c) for k in range(1, len(NAMES) + 1) for c in combinations(NAMES, k)]
    if CLAIM_FREE in families:
        found.append(Candidate(CLAIM_FREE, "nothing", frozenset(), CONSTANT_EXPLANATION))
        found += [
            Candidate(CLAIM_FREE, "names", s, "I looked at the " + ", ".join(sorted(s)) + ".")
            for s in subsets
        ]
        found.append(Candidate(CLAIM_FREE, "copy", frozenset(NAMES), " ".join(passage.split())))
    if FACT_LINES in families:
        lines = _profile_lines(passage)
        found += [
            Candidate(FACT_LINES, "lines", s, " ".join(lines[n] for n in NAMES if n in s))
            for s in subsets
        ]
    return found


def candidate_features(passage: str, candidate: Candidate) -> list[float]:
    """(item, candidate) features: the passage's, the candidate's kind and features, and how
    many of them the rule line names."""
    rule = dict(parse_passage(passage).conditions)
    kinds = ("nothing", "names", "copy", "lines")
    return [
        *passage_features(passage),
        *(float(candidate.kind == k) for k in kinds),
        *(float(n in candidate.features) for n in NAMES),
        float(len(candidate.features)),
        float(sum(n in rule for n in candidate.features)),
        float(len(candidate.text)),
    ]


@dataclass
class SurfaceAnswerer:
    """p(yes) from surface features, by gradient boosting."""

    model: GradientBoostingClassifier
    cache: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def fit(cls, items: Sequence[Item]) -> SurfaceAnswerer:
        """Train on `items` (their passages and gold answers).

        Args:
            items: Feature-rule items of the train split.

        Returns:
            The fitted answerer.
        """
        features = np.array([passage_features(render(i)) for i in items])
        labels = np.array([i.answer == 0 for i in items])
        model = GradientBoostingClassifier(random_state=0, n_estimators=100, max_depth=3)
        return cls(model.fit(features, labels))

    def logprobs(self, passage: str) -> list[float]:
        """log (p(A yes), p(B no)), p clipped to [0.02, 0.98] (cached per passage)."""
        if passage not in self.cache:
            p_yes = float(self.model.predict_proba(np.array([passage_features(passage)]))[0][1])
            p_yes = min(max(p_yes, _CLIP), 1 - _CLIP)
            self.cache[passage] = [math.log(p_yes), math.log(1 - p_yes)]
        return self.cache[passage]


def pipeline_gains(
    logprobs: Callable[[str], list[float]],
    passage: str,
    explanations: Sequence[str],
    alternatives: int = 5,
    legacy: bool = False,
) -> list[float]:
    """`scsuff_gain` of one item for each explanation, as the task computes it with the
    known-prior generator.

    Args:
        logprobs: The answerer: option log-probs of a passage.
        passage: The item's passage.
        explanations: The explanations the generator keeps, one gain each.
        alternatives: M (call seeds `CALL_SEED` + j, as the task's default seed gives).
        legacy: Score as 2-A did: a feature named is kept (as if its value were stated) and
            the gain is not scaled by the coverage.

    Returns:
        (SCSuff - explanation-free reference) x variation coverage, per explanation.
    """
    base = logprobs(passage)
    seeds = [CALL_SEED + j for j in range(alternatives)]
    free = [rewrite(passage, "", s) for s in seeds]
    reference = scsuff(base, [logprobs(a) for a in free]).score
    gains = []
    values = {name: value for name, value, _ in parse_passage(passage).features}
    for said in explanations:
        kept = said
        if legacy:
            named = [values[n] for n in NAMES if n in said.lower() and n in values]
            kept = " ".join([said, *named])
        explained = [rewrite(passage, kept, s) for s in seeds]
        score = scsuff(base, [logprobs(a) for a in explained]).score
        coverage = 1.0 if legacy else variation_coverage(passage, explained, free)
        gains.append((score - reference) * coverage)
    return gains


@dataclass(frozen=True)
class AttackResult:
    """The explainer's mean gain on the test split, chance, the answerer's accuracy, and the
    headline (the gain on right answers, `WRONG_ANSWER_FLOOR` on wrong ones)."""

    gain: float
    chance: float
    accuracy: float
    n: int
    correct_gain: float = math.nan


def fit_explainer(
    logprobs: Callable[[str], list[float]],
    train: Sequence[Item],
    families: Sequence[str],
    legacy: bool = False,
) -> GradientBoostingRegressor:
    """Gradient boosting that predicts a candidate explanation's gain from (item, candidate)
    surface features, fitted on the gains the pipeline gives the answerer `logprobs` on
    `train`."""
    rows, gains = [], []
    for item in train:
        passage = render(item)
        options = candidates(passage, families)
        rows += [candidate_features(passage, c) for c in options]
        gains += pipeline_gains(logprobs, passage, [c.text for c in options], 5, legacy)
    explainer = GradientBoostingRegressor(random_state=0, n_estimators=100, max_depth=3)
    return explainer.fit(np.array(rows), np.array(gains))


def choose(
    explainer: GradientBoostingRegressor, passage: str, families: Sequence[str]
) -> tuple[Candidate, float]:
    """The candidate with the highest predicted gain, and that prediction."""
    options = candidates(passage, families)
    predicted = explainer.predict(np.array([candidate_features(passage, c) for c in options]))
    best = int(np.argmax(predicted))
    return options[best], float(predicted[best])


def attack(
    families: Sequence[str],
    train: Sequence[Item] | None = None,
    test: Sequence[Item] | None = None,
    legacy: bool = False,
) -> AttackResult:
    """Train the answerer and the explainer on `train`, pick one candidate per `test` item.

    Args:
        families: Candidate families the explainer may choose from.
        train: Train items (default: `train_items(test)`).
        test: Test items (default: the task's 100 of seed 42).
        legacy: Train and score against 2-A's gain (see `pipeline_gains`).

    Returns:
        Its mean gain, chance (the mean gain of saying nothing, the best constant explanation)
        and the answerer's accuracy on `test`.
    """
    test = list(test) if test is not None else feature_rule_items(100, TEST_SEED)
    train = list(train) if train is not None else train_items(test)
    answerer = SurfaceAnswerer.fit(train)
    explainer = fit_explainer(answerer.logprobs, train, families, legacy)
    picked, chance, headline, right = [], [], [], 0
    for item in test:
        passage = render(item)
        best, _ = choose(explainer, passage, families)
        mine, nothing = pipeline_gains(
            answerer.logprobs, passage, [best.text, CONSTANT_EXPLANATION], 5, legacy
        )
        picked.append(mine)
        chance.append(nothing)
        correct = (answerer.logprobs(passage)[0] > math.log(0.5)) == (item.answer == 0)
        headline.append(mine if correct else WRONG_ANSWER_FLOOR)
        right += correct
    n = len(test)
    return AttackResult(sum(picked) / n, sum(chance) / n, right / n, n, sum(headline) / n)


@dataclass(frozen=True)
class PolicyResult:
    """A scripted policy's mean `scsuff_gain`, headline `scsuff_correct_gain` and accuracy."""

    gain: float
    correct_gain: float
    accuracy: float
    n: int


def policy_logprobs(answer: str, confidence: float = 0.9) -> Callable[[str], list[float]]:
    """The option log-probs `scsuff_rule -M answer=...` gives a passage."""

    def logprobs(passage: str) -> list[float]:
        p = distribution(parse_passage(passage), confidence, False, answer)
        return [math.log(p[k]) for k in sorted(p)]

    return logprobs


def policy_scores(
    answer: str, mention: str, test: Sequence[Item] | None = None, confidence: float = 0.9
) -> PolicyResult:
    """`scsuff_rule -M answer=... -M mention=...` scored offline as the task scores it.

    Args:
        answer: How the policy answers (`reference.ANSWERS`).
        mention: What its explanation states (`reference.explanation`).
        test: Items (default: the task's 100 of seed 42).
        confidence: Its p of the option it picks.

    Returns:
        Mean gain, mean correct-answer gain (a wrong answer scores `WRONG_ANSWER_FLOOR`) and
        accuracy.
    """
    test = list(test) if test is not None else feature_rule_items(100, TEST_SEED)
    logprobs = policy_logprobs(answer, confidence)

    gains, headline, right = [], [], 0
    for item in test:
        passage = render(item)
        said = explanation(parse_passage(passage), mention, False, passage, answer)
        [gain] = pipeline_gains(logprobs, passage, [said])
        correct = (logprobs(passage)[0] > logprobs(passage)[1]) == (item.answer == 0)
        gains.append(gain)
        headline.append(gain if correct else WRONG_ANSWER_FLOOR)
        right += correct
    n = len(test)
    return PolicyResult(sum(gains) / n, sum(headline) / n, right / n, n)
