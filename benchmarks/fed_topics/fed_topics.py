"""`docket/fed_topics`: one client's held-out split of the federated topic-classification task.

Each client of a FedPissa / FedSA-LoRA / FedAvg-LoRA run (`run_fed.py`) is scored on its own
held-out split with its personalised model: `inspect eval docket/fed_topics -T
data=RUN/s0/data/client-3/heldout.jsonl --model docket/local/RUN/s0/fedpissa/models/client-3`.
Without `-T data`, the split of `-T client` is regenerated from the partition arguments (the
runner's defaults), so the task runs offline with nothing written. See README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate

import docket.benchmarks.fed_topics.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.fed_topics.attacks import client_chance
from docket.benchmarks.fed_topics.dataset import Example, partition, read_examples
from docket.benchmarks.fed_topics.prompts import render
from docket.benchmarks.fed_topics.scorer import topic_label
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, positive

VERSION = "1-B"
TAGS = ["federated-learning", "personalisation", "classification"]


def splits(
    client: int, clients: int, alpha: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """Client `client`'s training and held-out splits of the default partition."""
    if not 0 <= client < clients:
        raise PrerequisiteError(f"fed_topics: -T client={client} must be in 0..{clients - 1}")
    if not alpha > 0:  # also rejects nan
        raise PrerequisiteError(f"fed_topics: -T alpha={alpha} must be above 0")
    if seed < 0:
        raise PrerequisiteError(f"fed_topics: -T seed={seed} must be at least 0")
    chosen = partition(clients, alpha=alpha, seed=seed)[client]
    return list(chosen.train), list(chosen.heldout)


def _chance(train: list[Example] | None, examples: list[Example]) -> dict[str, Any]:
    """Task metadata `chance`: the client's training-majority label and its accuracy here."""
    if not train:
        return {}
    row = client_chance(train, examples)
    return {"chance": {"attack": "training-majority label", "label": row.label,
                       "accuracy": row.accuracy}}  # fmt: skip


@task
def fed_topics(
    data: str | None = None,
    client: int = 0,
    clients: int = 8,
    alpha: float = 0.5,
    seed: int = 0,
    max_tokens: int = 4,
) -> Task:
    """Topic of short texts (sports, weather, food, music) on one client's held-out split.

    Args:
        data: A held-out JSONL file (`{"text", "label"}` rows) written by the Flower runner;
            a `train.jsonl` beside it gives the chance row (metadata `chance`).
        client: Without `data`: the client whose held-out split is regenerated.
        clients: Without `data`: number of clients of the partition.
        alpha: Without `data`: Dirichlet label skew of the partition.
        seed: Without `data`: seed of the partition.
        max_tokens: Tokens each answer may use.

    Returns:
        The task: one client's held-out texts, answered by `generate()`, scored by `topic_label`.
    """
    name = "fed_topics"
    train: list[Example] | None = None
    if data is not None:
        path = Path(checked(name, "data", data, str))
        examples = read_examples(path)
        beside = path.with_name("train.jsonl")  # the runner's layout: client-K/{train,heldout}
        train = read_examples(beside) if beside.is_file() and beside != path else None
    else:
        train, examples = splits(
            checked(name, "client", client, int),
            positive(name, "clients", clients),
            checked(name, "alpha", alpha, float),
            checked(name, "seed", seed, int),
        )
    dataset = [
        Sample(id=f"text-{i:03d}", input=render(e.text), target=e.label)
        for i, e in enumerate(examples)
    ]
    h = headline("topic_label", "accuracy", direction="higher", value="binary")
    return Task(
        dataset=MemoryDataset(dataset, name="fed_topics"),
        solver=generate(),
        scorer=topic_label(),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens)),
        version=VERSION,
        headline_metric=h["headline_metric"],
        metadata={**h["metadata"], "benchmark": "fed_topics", **_chance(train, examples)},
        tags=TAGS,
    )
