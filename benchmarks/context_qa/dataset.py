"""Context-QA data: short made-up profiles (who lives where, works as what, keeps which pet,
likes which colour) and one-word questions about them.

`generate(n_contexts, seed)` draws them deterministically; the shipped evaluation set
(`data/contexts.jsonl`, `data/questions.jsonl`) is `generate(40, EVAL_SEED)` and the SHINE runner
trains on other seeds, so every evaluated context is a combination it never saw. No answer can
be guessed from the question: every value is drawn uniformly (chance = 1 / number of values).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from docket.core.inspect_private import PrerequisiteError
from docket.core.jsonl import read_jsonl, write_jsonl

DATA = Path(__file__).parent / "data"
CONTEXTS_FILE = DATA / "contexts.jsonl"
QUESTIONS_FILE = DATA / "questions.jsonl"
EVAL_SEED = 20260720
EVAL_CONTEXTS = 40

NAMES = (
    "Mira", "Tomas", "Anya", "Kofi", "Lena", "Ravi", "Iris", "Bruno", "Sana", "Oskar",
    "Nadia", "Felix", "Yuki", "Marco", "Elif", "Jonas", "Priya", "Hugo", "Zara", "Emil",
)  # fmt: skip
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "city": ("Oslo", "Lima", "Cairo", "Lyon", "Perth", "Quito", "Porto", "Delhi"),
    "job": ("baker", "pilot", "nurse", "farmer", "judge", "tailor", "miner", "chef"),
    "pet": ("cat", "dog", "parrot", "rabbit", "turtle", "hamster", "goat", "snake"),
    "colour": ("red", "blue", "green", "yellow", "purple", "orange", "black", "white"),
}
#: How a fact is stated in a context, and how it is asked.
STATEMENTS = {
    "city": "{name} lives in {value}.",
    "job": "{name} works as a {value}.",
    "pet": "{name} keeps a {value}.",
    "colour": "{name} likes the colour {value}.",
}
QUESTIONS = {
    "city": "Where does {name} live?",
    "job": "What is {name}'s job?",
    "pet": "Which animal does {name} keep?",
    "colour": "Which colour does {name} like?",
}


@dataclass(frozen=True)
class Context:
    """A profile text and its facts."""

    id: str
    text: str
    facts: tuple[tuple[str, str, str], ...]  # (name, attribute, value)


@dataclass(frozen=True)
class Question:
    """A question about one fact of a context."""

    id: str
    context_id: str
    question: str
    answer: str
    attribute: str
    #: Index of the asked fact's sentence in the context (0 = first).
    position: int


def make_context(rng: random.Random, key: str, people: int) -> Context:
    """`people` distinct people with every attribute, sentences in a shuffled order."""
    facts = [
        (name, attribute, rng.choice(values))
        for name in rng.sample(NAMES, people)
        for attribute, values in ATTRIBUTES.items()
    ]
    rng.shuffle(facts)
    text = " ".join(STATEMENTS[a].format(name=n, value=v) for n, a, v in facts)
    return Context(key, text, tuple(facts))


def questions_for(context: Context, rng: random.Random, per_context: int) -> list[Question]:
    """`per_context` questions about distinct facts of `context`."""
    picked = rng.sample(range(len(context.facts)), per_context)
    return [
        Question(
            id=f"{context.id}-q{i}",
            context_id=context.id,
            question=QUESTIONS[context.facts[p][1]].format(name=context.facts[p][0]),
            answer=context.facts[p][2],
            attribute=context.facts[p][1],
            position=p,
        )
        for i, p in enumerate(picked)
    ]


def context_id(seed: int, index: int, prefix: str = "ctx") -> str:
    """The opaque id of context `index` of the split seeded by `seed`: 12 hex digits of a SHA-256.

    Neither the seed nor the index can be read back from the id (a `[context: ID]` prompt shows
    it), so no generator call can be driven from it; with a secret seed not even by enumeration.
    The hash draws nothing from the split's random stream, so the texts do not depend on it.

    Args:
        seed: The split's seed.
        index: The context's place in the split.
        prefix: The id's prefix (`ctx` for evaluated splits and SHINE's corpus).

    Returns:
        `PREFIX-` and 12 lower-case hex digits.
    """
    digest = hashlib.sha256(f"docket-context-qa:{prefix}:{seed}:{index}".encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


def generate(
    n_contexts: int, seed: int, *, people: int = 2, per_context: int = 2, prefix: str = "ctx"
) -> tuple[list[Context], list[Question]]:
    """`n_contexts` contexts and `per_context` questions each, deterministic in `seed`.

    Args:
        n_contexts: Contexts to draw.
        seed: The split's seed (the shipped set's `EVAL_SEED`, or a private split's secret).
        people: People per context (four facts each).
        per_context: Questions per context, about distinct facts.
        prefix: The prefix of the opaque context ids (`context_id`).

    Returns:
        The contexts and their questions, in order.
    """
    rng = random.Random(seed)
    contexts = [make_context(rng, context_id(seed, i, prefix), people) for i in range(n_contexts)]
    questions = [q for c in contexts for q in questions_for(c, rng, per_context)]
    return contexts, questions


def write(contexts: Iterable[Context], questions: Iterable[Question], folder: Path) -> None:
    """Write `contexts.jsonl` (id, text) and `questions.jsonl` to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / CONTEXTS_FILE.name, ({"id": c.id, "text": c.text} for c in contexts))
    write_jsonl(folder / QUESTIONS_FILE.name, (asdict(q) for q in questions))


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a fresh evaluation split (`docket generate context_qa`) for `-T data=DIR`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`).
        out: The directory to write `contexts.jsonl` and `questions.jsonl` into.
        size: Contexts (two questions each; default: the shipped set's `EVAL_CONTEXTS`).
    """
    write(*generate(size or EVAL_CONTEXTS, seed), out)


def load(folder: Path = DATA) -> tuple[dict[str, str], list[Question]]:
    """Contexts by id and the questions of a data folder (the shipped set by default)."""
    contexts = {
        str(r["id"]): str(r["text"])
        for r in read_jsonl(folder / CONTEXTS_FILE.name, "context_qa", ("id", "text"))
    }
    questions = []
    fields = ("id", "context_id", "question", "answer")
    for row in read_jsonl(folder / QUESTIONS_FILE.name, "context_qa", fields):
        if str(row["context_id"]) not in contexts:
            raise PrerequisiteError(
                f"context_qa: question {row['id']} names unknown context {row['context_id']}"
            )
        questions.append(
            Question(
                id=str(row["id"]),
                context_id=str(row["context_id"]),
                question=str(row["question"]),
                answer=str(row["answer"]),
                attribute=str(row.get("attribute", "")),
                position=int(str(row.get("position", -1))),
            )
        )
    return contexts, questions
