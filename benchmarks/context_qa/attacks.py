"""No-reasoning attackers of `docket/context_qa` (README.md: "Attackers and chance rows").

None of them binds a value to the asked person:

- `relation_first`: the first value the text states for the asked relation, whoever it belongs
  to (policy `context_qa_relation_first`); with two people per context it is right whenever the
  asked person's fact comes first or both people share the value;
- `surface_booster`: scikit-learn gradient boosting that ranks the text's values of the asked
  relation by surface features (the sentence's index, the value's rank among the relation's
  sentences, how often the value occurs in the text, the value's and the relation's ids),
  trained on a freshly generated corpus (`generate(ATTACK_CONTEXTS, ATTACK_SEED)`), never on the
  evaluated split. Adding the one feature it lacks, whether the sentence names the asked person,
  is the reader (`context_qa_reader`, 1.000): that binding is what the task measures.
- `best_constant`: for each relation the split's most frequent answer (the chance row of the
  `reference` and `none` conditions, where the text is not in the prompt);
- `name_memory`: for each question (a person's name and a relation), the answer most frequent
  for that very question in a freshly generated corpus of `MEMORY_CONTEXTS` contexts (names and
  values come from small pools, so questions recur across contexts): a prior over names that
  never reads the text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from docket.benchmarks.context_qa.dataset import ATTRIBUTES, STATEMENTS, Question, generate

#: The attackers that never read the text: they can play every condition, so the best of them
#: is the chance row of `reference` and `none` (the best of all is `prompt`'s).
TEXT_FREE = frozenset({"best_constant", "name_memory"})
ATTACK_SEED = 7331
ATTACK_CONTEXTS = 300
MEMORY_CONTEXTS = 3000
#: The question word that names each relation (as `reference._RELATIONS` reads it).
KEYWORDS = {"city": "live", "job": "job", "pet": "animal", "colour": "colour"}
_PATTERNS = {
    attribute: re.compile(
        re.escape(statement).replace(r"\{name\}", r"(\w+)").replace(r"\{value\}", r"(\w+)")
    )
    for attribute, statement in STATEMENTS.items()
}


@dataclass(frozen=True)
class Candidate:
    """One value the text states for the asked relation, with its surface position."""

    value: str
    sentence: int
    rank: int
    person: str


def asked_relation(question: str) -> str | None:
    """The attribute a question asks (city, job, pet, colour), None when none matches.

    Args:
        question: The question text.

    Returns:
        The attribute's key.
    """
    return next((a for a, word in KEYWORDS.items() if word in question), None)


def candidates(text: str, attribute: str) -> list[Candidate]:
    """The text's statements of `attribute`, in order.

    Args:
        text: The context.
        attribute: The relation asked.

    Returns:
        One candidate per sentence stating that relation.
    """
    sentences = [s.strip() + "." for s in text.split(".") if s.strip()]
    out: list[Candidate] = []
    for index, sentence in enumerate(sentences):
        found = _PATTERNS[attribute].fullmatch(sentence)
        if found:
            out.append(Candidate(found.group(2), index, len(out), found.group(1)))
    return out


def relation_first(text: str, question: str) -> str:
    """The first value stated for the asked relation, whoever it belongs to.

    Args:
        text: The context.
        question: The question.

    Returns:
        That value, or `unknown`.
    """
    attribute = asked_relation(question)
    found = candidates(text, attribute) if attribute else []
    return found[0].value if found else "unknown"


def best_constant(questions: Sequence[Question]) -> dict[str, str]:
    """Each relation's most frequent answer on a split (ties: the first value listed).

    Args:
        questions: The split's questions.

    Returns:
        attribute -> answer.
    """
    out = {}
    for attribute, values in ATTRIBUTES.items():
        counts = Counter(q.answer for q in questions if q.attribute == attribute)
        out[attribute] = max(values, key=lambda v: (counts[v], -values.index(v)))
    return out


def _features(text: str, attribute: str, candidate: Candidate, count: int) -> list[float]:
    values = ATTRIBUTES[attribute]
    return [
        float(candidate.sentence),
        float(candidate.rank),
        float(candidate.rank == count - 1),
        float(text.count(f" {candidate.value}.")),
        float(values.index(candidate.value)),
        float(list(ATTRIBUTES).index(attribute)),
    ]


def _rows(text: str, question: str) -> tuple[list[Candidate], list[list[float]]]:
    attribute = asked_relation(question)
    if attribute is None:
        return [], []
    found = candidates(text, attribute)
    return found, [_features(text, attribute, c, len(found)) for c in found]


def surface_booster(
    contexts: dict[str, str], questions: Sequence[Question], seed: int = 0
) -> list[str]:
    """Gradient boosting over candidate surface features, trained on a fresh corpus.

    Args:
        contexts: The evaluated split's texts by id.
        questions: Its questions.
        seed: The booster's random state.

    Returns:
        One answer per question: the candidate the booster scores highest.
    """
    from sklearn.ensemble import GradientBoostingClassifier

    train_contexts, train_questions = generate(
        ATTACK_CONTEXTS, ATTACK_SEED, per_context=8, prefix="attack"
    )
    texts = {c.id: c.text for c in train_contexts}
    features: list[list[float]] = []
    labels: list[int] = []
    for q in train_questions:
        found, rows = _rows(texts[q.context_id], q.question)
        features += rows
        labels += [int(c.value == q.answer) for c in found]
    model = GradientBoostingClassifier(random_state=seed).fit(features, labels)
    answers = []
    for q in questions:
        found, rows = _rows(contexts[q.context_id], q.question)
        if not found:
            answers.append("unknown")
            continue
        scores = model.predict_proba(rows)[:, 1]
        answers.append(found[max(range(len(found)), key=lambda i: scores[i])].value)
    return answers


def name_memory(
    questions: Sequence[Question], train: Sequence[Question] | None = None
) -> list[str]:
    """Answer each question by the answer the train corpus gives that question most often
    (its relation's most frequent train answer when the question never occurs there).

    Args:
        questions: The questions to answer.
        train: Train questions (default: `generate(MEMORY_CONTEXTS, ATTACK_SEED)`, 8 per
            context).

    Returns:
        One answer per question.
    """
    if train is None:
        train = generate(MEMORY_CONTEXTS, ATTACK_SEED, per_context=8)[1]
    seen: dict[str, Counter[str]] = {}
    for q in train:
        seen.setdefault(q.question, Counter())[q.answer] += 1
    fallback = best_constant(train)
    return [
        seen[q.question].most_common(1)[0][0] if q.question in seen else fallback[q.attribute]
        for q in questions
    ]
