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
from docket.core.results_tables import chance_source
from docket.core.splits import checked_split, files_digest, rows_digest, split_metadata

VERSION = "1-B"
TAGS = ["federated-learning", "personalisation", "classification"]
#: Every blind attacker on the default partition, mean over clients (`scripts/chance.py`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
#: Its strongest, each client's training-majority label: measured per client on the task's
#: split (`attacks.client_chance`), it is the chance row the task records.
CHANCE_ATTACKER = "majority"


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
    """Task metadata `chance`: this client's chance row on the headline, its training-majority
    label (`label`, what `fed_topics_label` plays) and that label's accuracy on the scored
    split (`value`). The committed file (`source`, mean over clients) shows it the strongest
    blind attacker; its value is this split's own, not the file's mean."""
    if not train:
        return {}
    row = client_chance(train, examples)
    source = {"source": chance_source(CHANCE)} if CHANCE.is_file() else {}
    entry = {"value": row.accuracy, "attacker": CHANCE_ATTACKER, **source, "label": row.label}
    return {"chance": entry}


Loaded = tuple[list[Example] | None, list[Example], dict[str, Any]]


def _from_data(data: str, client: int) -> Loaded:
    """(training split or None, held-out split, split metadata) of a `-T data` file or folder.

    A folder is a private partition from `docket generate fed_topics` (checked against its
    manifest); `client` picks its `client-<client>/`. A file is a runner's held-out JSONL.
    """
    name = "fed_topics"
    path = Path(checked(name, "data", data, str))
    if path.is_dir():
        manifest = checked_split(name, name, path)
        folder = path / f"client-{checked(name, 'client', client, int)}"
        if not folder.is_dir():
            raise PrerequisiteError(f"{name}: -T data={data} has no {folder.name}/")
        split = split_metadata(str(manifest["sha256"]), generated=True, name=path.name)
        return read_examples(folder / "train.jsonl"), read_examples(folder / "heldout.jsonl"), split
    examples = read_examples(path)
    beside = path.with_name("train.jsonl")  # the runner's layout: client-K/{train,heldout}
    train = read_examples(beside) if beside.is_file() and beside != path else None
    return train, examples, split_metadata(files_digest(path.parent, [path]), generated=True)


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
        data: A held-out JSONL file (`{"text", "label"}` rows) written by the Flower runner
            (a `train.jsonl` beside it gives the chance row, metadata `chance`), or a private
            partition's folder from `docket generate fed_topics --seed SECRET --out DIR`.
        client: The client whose held-out split is scored: of a `data` folder, or (without
            `data`) of the regenerated default partition.
        clients: Without `data`: number of clients of the partition.
        alpha: Without `data`: Dirichlet label skew of the partition.
        seed: Without `data`: seed of the partition.
        max_tokens: Tokens each answer may use.

    Returns:
        The task: one client's held-out texts, answered by `generate()`, scored by `topic_label`.
    """
    name = "fed_topics"
    train: list[Example] | None
    if data is not None:
        train, examples, split = _from_data(data, client)
    else:
        train, examples = splits(
            checked(name, "client", client, int),
            positive(name, "clients", clients),
            checked(name, "alpha", alpha, float),
            checked(name, "seed", seed, int),
        )
        rows = ({"text": e.text, "label": e.label} for e in examples)
        split = split_metadata(rows_digest(rows), generated=False, name=f"client-{client}")
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
        metadata={
            **h["metadata"],
            "benchmark": "fed_topics",
            **_chance(train, examples),
            **split,
        },  # fmt: skip
        tags=TAGS,
    )
