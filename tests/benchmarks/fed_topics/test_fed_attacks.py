"""docket/fed_topics: the per-client majority label is the chance row (exact values on a case
with known labels and on the default partitions), and the task records it."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.fed_topics import attacks
from docket.benchmarks.fed_topics.dataset import Example, partition, write_clients


def _examples(*labels: str) -> list[Example]:
    return [Example(f"text {i}", label) for i, label in enumerate(labels)]


def test_majority_label_and_its_accuracy_on_known_labels() -> None:
    train = _examples("food", "music", "food", "sports")
    heldout = _examples("food", "music", "food", "weather", "food")
    assert attacks.majority_label(train) == "food"
    assert attacks.majority_label(_examples("music", "food")) == "food"  # tie: LABELS order
    assert attacks.client_chance(train, heldout) == attacks.Chance("food", 0.6)
    assert attacks.surface_booster(_examples("music"), heldout) == 0.2  # one label: constant


def test_the_chance_rows_of_the_federated_table() -> None:
    means = [attacks.mean_chance(partition(8, alpha=0.5, seed=s)) for s in (0, 1, 2)]
    assert means == [0.578125, 0.62890625, 0.48828125]  # README: 0.565 ± 0.071
    clients = partition(8, alpha=0.5, seed=0)
    boosted = [attacks.surface_booster(c.train, c.heldout) for c in clients]
    assert sum(boosted) / len(boosted) == 0.53515625  # below the majority label (0.578)


def test_the_task_records_each_clients_chance_row_and_the_label_policy_scores_it(
    tmp_path: Path,
) -> None:
    client = partition(8, alpha=0.5, seed=0)[3]
    chance = attacks.client_chance(client.train, client.heldout)
    assert chance == attacks.Chance("weather", 0.375)
    log = inspect_eval(
        "docket/fed_topics",
        model=get_model("docket/scripted", policy="fed_topics_label", label=chance.label),
        task_args={"client": 3},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.375)
    assert (log.eval.metadata or {})["chance"] == {
        "value": 0.375,
        "attacker": "majority",
        "source": "benchmarks/fed_topics/results/chance.json",
        "label": "weather",
    }
    folder = write_clients(partition(8, alpha=0.5, seed=0), tmp_path / "data")
    log = inspect_eval(
        "docket/fed_topics",
        model=get_model("docket/scripted", policy="refuse"),
        task_args={"data": str(folder / "client-3" / "heldout.jsonl")},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert (log.eval.metadata or {})["chance"]["value"] == 0.375
    (tmp_path / "alone.jsonl").write_bytes((folder / "client-3" / "heldout.jsonl").read_bytes())
    log = inspect_eval(
        "docket/fed_topics",
        model=get_model("docket/scripted", policy="refuse"),
        task_args={"data": str(tmp_path / "alone.jsonl")},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert "chance" not in (log.eval.metadata or {})  # no training split beside it
