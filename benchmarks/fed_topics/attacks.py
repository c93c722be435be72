"""No-reasoning attackers of `docket/fed_topics` (README.md: "Chance rows and attackers").

Under a Dirichlet label skew a client can score well without reading a text:

- `majority_label`: the client's most frequent training label, answered to every held-out text.
  Its held-out accuracy is the **chance row** a personalised model must beat (`client_chance`;
  the task records it in its metadata under `chance`).
- `surface_booster`: scikit-learn gradient boosting over surface features that name no topic
  (word count, character count, filler words, the longest word's length), fitted on the
  client's own training split.
- `pooled_forest` (the learned attacker, issue #53 item 6): a random forest over the client's
  index and the same surface features, fitted on all clients' training splits pooled.

Reading the topic words is the task (a bag-of-words classifier is a reader, not an attacker).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docket.benchmarks.fed_topics.dataset import FILLER, LABELS, TOPIC_WORDS, Client, Example
from docket.core.agreement import match_share


def majority_label(train: Sequence[Example]) -> str:
    """The most frequent label of a training split (ties: the first in `LABELS`).

    Args:
        train: A client's training examples.

    Returns:
        The label.
    """
    counts = Counter(e.label for e in train)
    return max(LABELS, key=lambda label: (counts[label], -LABELS.index(label)))


def _labels(examples: Sequence[Example]) -> list[str]:
    return [e.label for e in examples]


@dataclass(frozen=True)
class Chance:
    """A client's chance row: its training-majority label and that label's held-out accuracy."""

    label: str
    accuracy: float


def client_chance(train: Sequence[Example], heldout: Sequence[Example]) -> Chance:
    """The chance row of one client.

    Args:
        train: The client's training split.
        heldout: The split it is scored on.

    Returns:
        The majority training label and its accuracy on `heldout`.
    """
    label = majority_label(train)
    return Chance(label, match_share([label] * len(heldout), _labels(heldout)))


def mean_chance(clients: Sequence[Client]) -> float:
    """The mean over clients of each client's chance row (the federated table's baseline).

    Args:
        clients: A partition.

    Returns:
        The mean held-out accuracy of the per-client majority labels.
    """
    return sum(client_chance(c.train, c.heldout).accuracy for c in clients) / len(clients)


def surface_features(text: str) -> list[float]:
    """Features that name no topic word.

    Args:
        text: One text.

    Returns:
        Word count, character count, filler-word count, longest word's length.
    """
    words = text.split()
    return [
        float(len(words)),
        float(len(text)),
        float(sum(w in FILLER for w in words)),
        float(max((len(w) for w in words), default=0)),
    ]


def surface_booster(train: Sequence[Example], heldout: Sequence[Example], seed: int = 0) -> float:
    """Held-out accuracy of gradient boosting over `surface_features`, fitted on `train`.

    Args:
        train: The client's training split.
        heldout: The split it is scored on.
        seed: The booster's random state.

    Returns:
        The accuracy (the majority label's when the training split has one label only).
    """
    from sklearn.ensemble import GradientBoostingClassifier

    labels = [e.label for e in train]
    if len(set(labels)) < 2:
        return match_share([labels[0]] * len(heldout), _labels(heldout)) if labels else 0.0
    model = GradientBoostingClassifier(random_state=seed)
    model.fit([surface_features(e.text) for e in train], labels)
    predicted = model.predict([surface_features(e.text) for e in heldout])
    return match_share([str(p) for p in predicted], _labels(heldout))


def example_surface(example: Example) -> list[float]:
    """`surface_features` of an example's text (the pooled forest's default features)."""
    return surface_features(example.text)


def pooled_forest(
    clients: Sequence[Client],
    features: Callable[[Example], list[float]] = example_surface,
    seed: int = 0,
) -> float:
    """The learned attacker of issue #53 item 6: a random forest over the client's index and
    `features`, fitted on every client's training split pooled (so it sees each client's label
    prior and 8× the data the per-client booster sees), scored on each client's held-out split.

    Args:
        clients: A partition.
        features: What the forest reads of an example (default its surface features; a test
            plants the label here to check the attacker can score 1.0).
        seed: The forest's random state.

    Returns:
        The mean over clients of each client's held-out accuracy.
    """
    from sklearn.ensemble import RandomForestClassifier

    def rows(client: Client, examples: Sequence[Example]) -> list[list[float]]:
        onehot = [float(client.index == c.index) for c in clients]
        return [onehot + features(e) for e in examples]

    model = RandomForestClassifier(
        n_estimators=100, min_samples_leaf=3, max_features=None, random_state=seed
    )
    model.fit(
        [row for c in clients for row in rows(c, c.train)],
        [e.label for c in clients for e in c.train],
    )
    scores = [
        match_share([str(p) for p in model.predict(rows(c, c.heldout))], _labels(c.heldout))
        for c in clients
    ]
    return sum(scores) / len(scores)


def topic_reader(text: str) -> str:
    """The oracle row's reader: the label with the most topic words in `text` (ties: `LABELS`
    order). It reads the text, so it is the ceiling, not an attacker."""
    words = text.split()
    counts = {label: sum(w in TOPIC_WORDS[label] for w in words) for label in LABELS}
    return max(LABELS, key=lambda label: (counts[label], -LABELS.index(label)))


def reader_accuracy(clients: Sequence[Client]) -> float:
    """The mean over clients of `topic_reader`'s held-out accuracy."""
    scores = [
        match_share([topic_reader(e.text) for e in c.heldout], _labels(c.heldout)) for c in clients
    ]
    return sum(scores) / len(scores)
