"""docket/fed_topics: the label-skewed partition, the baseline's exact score, the scorer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.fed_topics.dataset import LABELS, partition, read_examples, write_clients
from docket.benchmarks.fed_topics.scorer import first_label
from docket.core.inspect_private import PrerequisiteError


def test_partition_is_deterministic_and_label_skewed() -> None:
    clients = partition(8, alpha=0.3, seed=0)
    assert clients == partition(8, alpha=0.3, seed=0)
    assert [len(c.train) for c in clients] == [64] * 8
    shares = [max(c.label_share) for c in clients]
    assert max(shares) > 0.6  # some client is dominated by one topic
    counts = {label: sum(e.label == label for e in clients[0].train) for label in LABELS}
    assert (
        max(counts, key=counts.__getitem__)
        == LABELS[max(range(4), key=lambda i: clients[0].label_share[i])]
    )
    swapped = partition(2, seed=0, swap=True)[1]
    plain = partition(2, seed=0)[1]
    relabelled = {"sports": "weather", "weather": "sports"}
    assert [e.label for e in swapped.train] == [
        relabelled.get(e.label, e.label) for e in plain.train
    ]


def test_written_clients_round_trip(tmp_path: Path) -> None:
    clients = partition(3, seed=1)
    folder = write_clients(clients, tmp_path / "data")
    assert json.loads((folder / "task.json").read_text())["labels"] == list(LABELS)
    assert read_examples(folder / "client-2" / "heldout.jsonl") == list(clients[2].heldout)
    (tmp_path / "bad.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(PrerequisiteError, match=r"bad.jsonl line 1: no field .label."):
        read_examples(tmp_path / "bad.jsonl")


def test_first_label_baseline_scores_the_share_of_sports(tmp_path: Path) -> None:
    client = partition(8, alpha=0.5, seed=0)[3]
    expected = sum(e.label == "sports" for e in client.heldout) / len(client.heldout)
    log = inspect_eval(
        "docket/fed_topics",
        model=get_model("docket/scripted", policy="fed_topics_first_label"),
        task_args={"client": 3},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(expected)
    with pytest.raises(PrerequisiteError, match=r"-T client=9 must be in 0..7"):
        inspect_eval(
            "docket/fed_topics",
            model=get_model("docket/scripted", policy="refuse"),
            task_args={"client": 9},
        )
    for bad, message in (({"alpha": 0.0}, "alpha=0.0 must be above 0"), ({"seed": -1}, "seed=-1")):
        with pytest.raises(PrerequisiteError, match=message):
            inspect_eval(
                "docket/fed_topics",
                model=get_model("docket/scripted", policy="refuse"),
                task_args=bad,
            )


def test_first_label_reads_the_first_topic_named() -> None:
    assert first_label("It is about Music, not food.") == "music"
    assert first_label("no idea") is None
    assert first_label("sportsman") is None  # whole words only
