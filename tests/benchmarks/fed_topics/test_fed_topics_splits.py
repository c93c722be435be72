"""Private fed_topics partitions (`docket generate fed_topics`, `-T data=DIR -T client=K`):
fresh per seed, reproducible, and the chance row on them at its stated level."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.fed_topics.attacks import client_chance
from docket.benchmarks.fed_topics.dataset import (
    SPLIT_CLIENTS,
    generate_split,
    partition,
    read_examples,
)
from docket.benchmarks.fed_topics.fed_topics import fed_topics
from docket.core import splits
from docket.core.inspect_private import PrerequisiteError
from tests.benchmarks.generated import generator, manifest

_generate = generator("fed_topics", 32)
#: listing.yaml (1-B): the mean over clients of the training-majority label on private partitions,
#: 0.608 ± 0.066 over 40 secret seeds (range 0.445-0.734).
PRIVATE_CHANCE = 0.608


def _texts(out: Path) -> list[str]:
    folders = [out / f"client-{k}" for k in range(SPLIT_CLIENTS)]
    return [e.text for folder in folders for e in read_examples(folder / "heldout.jsonl")]


def test_seeds_give_fresh_reproducible_partitions(tmp_path: Path) -> None:
    first, again = _generate(tmp_path, "s1", "a"), _generate(tmp_path, "s1", "b")
    other = _generate(tmp_path, "s2", "c")
    assert splits.files_digest(first) == splits.files_digest(again) != splits.files_digest(other)
    assert len(_texts(first)) == SPLIT_CLIENTS * 32
    assert _texts(first) != _texts(other)
    shipped = {e.text for s in range(3) for c in partition(seed=s) for e in c.heldout}
    assert len(set(_texts(first)) & shipped) < len(_texts(first)) // 10
    assert "s1" not in "".join(p.read_text() for p in first.rglob("*") if p.is_file())


def test_the_chance_row_holds_on_a_generated_partition(tmp_path: Path) -> None:
    out = _generate(tmp_path, "a private seed")
    written = manifest(out)
    accuracies = []
    for client in range(SPLIT_CLIENTS):
        task = fed_topics(data=str(out), client=client)
        metadata = task.metadata or {}
        assert metadata[splits.SPLIT_KEY] == {
            "sha256": written["sha256"], "source": "generated", "name": "split",
        }  # fmt: skip
        folder = out / f"client-{client}"
        heldout = read_examples(folder / "heldout.jsonl")
        row = client_chance(read_examples(folder / "train.jsonl"), heldout)
        assert metadata["chance"]["label"] == row.label
        assert metadata["chance"]["value"] == row.accuracy
        assert [s.target for s in task.dataset] == [e.label for e in heldout]
        accuracies.append(row.accuracy)
    assert abs(sum(accuracies) / SPLIT_CLIENTS - PRIVATE_CHANCE) <= 0.2  # 3 sd of the seeds
    label = (fed_topics(data=str(out), client=0).metadata or {})["chance"]["label"]
    log = inspect_eval(
        fed_topics(data=str(out), client=0),
        model=get_model("docket/scripted", policy="fed_topics_label", label=label),
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(accuracies[0])


def test_the_default_partition_is_named_shipped_and_bad_data_is_one_line(tmp_path: Path) -> None:
    first, again = fed_topics(client=1).metadata, fed_topics(client=1).metadata
    assert (
        first is not None
        and again is not None
        and first[splits.SPLIT_KEY] == again[splits.SPLIT_KEY]
    )
    assert first[splits.SPLIT_KEY]["source"] == "shipped"
    out = _generate(tmp_path, "x", size=4)
    expected = {"client=9": "has no client-9/", "stale": "files changed since"}
    with pytest.raises(PrerequisiteError, match=expected["client=9"]):
        fed_topics(data=str(out), client=9)
    (out / "client-0" / "heldout.jsonl").write_text("")
    with pytest.raises(PrerequisiteError, match=expected["stale"]) as error:
        fed_topics(data=str(out))
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="--size 0 must be at least 1"):
        generate_split(1, tmp_path / "empty", 0)
