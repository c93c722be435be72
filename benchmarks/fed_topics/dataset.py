"""Fed-topics data: short made-up sentences about one of four topics, split over clients with a
Dirichlet label skew (the usual non-IID protocol of federated learning benchmarks).

Every text holds two words of its topic among filler words; with probability `noise` one of them
is swapped for a word of another topic, so no text is a giveaway and a perfect classifier scores
about 1 − noise/2. `swap` (concept shift, off by default) gives the odd-numbered clients two
topics' labels exchanged, so a single global model cannot fit every client.
`partition(...)` is deterministic in its arguments; the Flower runner writes it to a folder
(`write_clients`) that the clients and `docket/fed_topics -T data=` read.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docket.core.jsonl import read_jsonl, write_jsonl

LABELS = ("sports", "weather", "food", "music")
TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "sports": tuple("goal match team coach score league player referee stadium tennis".split()),
    "weather": tuple("rain storm cloud wind snow sunny forecast thunder fog humid".split()),
    "food": tuple("bread soup pasta cheese recipe salad spice oven dessert noodle".split()),
    "music": tuple("guitar song band piano concert melody drum chorus album violin".split()),
}
FILLER = (
    "the", "a", "today", "we", "saw", "new", "big", "after", "with", "again",
    "my", "friend", "talked", "about", "near", "city", "old", "long", "quiet", "late",
)  # fmt: skip
PROMPT = "Which topic is the text about: sports, weather, food or music?\n\nText: {text}"


@dataclass(frozen=True)
class Example:
    """One text and its topic label."""

    text: str
    label: str


def make_text(rng: random.Random, topic: str, noise: float) -> str:
    """Two topic words among three to five filler words, shuffled."""
    words = list(rng.sample(TOPIC_WORDS[topic], 2))
    if rng.random() < noise:
        other = rng.choice([t for t in LABELS if t != topic])
        words[1] = rng.choice(TOPIC_WORDS[other])
    words += rng.sample(FILLER, rng.randint(3, 5))
    rng.shuffle(words)
    return " ".join(words)


@dataclass(frozen=True)
class Client:
    """One client's label distribution and splits."""

    index: int
    label_share: tuple[float, ...]
    train: tuple[Example, ...]
    heldout: tuple[Example, ...]


def _label_of(topic: str, client: int, swap: bool) -> str:
    if swap and client % 2 == 1 and topic in LABELS[:2]:
        return LABELS[1] if topic == LABELS[0] else LABELS[0]
    return topic


def partition(
    clients: int = 8,
    *,
    alpha: float = 0.5,
    train: int = 64,
    heldout: int = 32,
    noise: float = 0.1,
    swap: bool = False,
    seed: int = 0,
) -> list[Client]:
    """`clients` clients, each with a Dirichlet(alpha) label distribution and its own train and
    held-out examples drawn from it."""
    shares = np.random.default_rng(seed).dirichlet([alpha] * len(LABELS), size=clients)
    rng = random.Random(seed)
    out = []
    for index in range(clients):
        weights = [float(w) for w in shares[index]]

        def draw(n: int, index: int = index, weights: list[float] = weights) -> tuple[Example, ...]:
            topics = rng.choices(LABELS, weights=weights, k=n)
            return tuple(
                Example(make_text(rng, t, noise), _label_of(t, index, swap)) for t in topics
            )

        out.append(Client(index, tuple(weights), draw(train), draw(heldout)))
    return out


def write_clients(clients: Sequence[Client], folder: Path) -> Path:
    """`task.json` plus `client-<i>/train.jsonl` and `heldout.jsonl` (the Flower app's layout)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps({"labels": list(LABELS), "prompt": PROMPT}))
    for client in clients:
        target = folder / f"client-{client.index}"
        target.mkdir(exist_ok=True)
        for split in ("train", "heldout"):
            rows = getattr(client, split)
            write_jsonl(
                target / f"{split}.jsonl", ({"text": e.text, "label": e.label} for e in rows)
            )
    return folder


#: Held-out texts per client of a private split (the runner's default) and its client count.
SPLIT_HELDOUT = 32
SPLIT_CLIENTS = 8


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """Write a private partition (`docket generate fed_topics`) for `-T data=DIR -T client=K`.

    Args:
        seed: The secret seed's integer (`docket.core.splits.secret_seed`): it draws the
            clients' label shares and every text.
        out: The directory to write `task.json` and `client-<i>/{train,heldout}.jsonl` into.
        size: Held-out texts per client (default 32; 8 clients of 64 training texts each).

    Raises:
        ValueError: `size` below 1.
    """
    heldout = SPLIT_HELDOUT if size is None else size
    if heldout < 1:
        raise ValueError(f"--size {heldout} must be at least 1")
    write_clients(partition(SPLIT_CLIENTS, heldout=heldout, seed=seed), out)


def read_examples(path: Path) -> list[Example]:
    """Rows `{"text", "label"}` of a JSONL file; one clear error naming the file and line."""
    return [
        Example(str(row["text"]), str(row["label"]))
        for row in read_jsonl(path, "fed_topics", ("text", "label"))
    ]
