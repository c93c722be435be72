"""Issue 29 item 4: `docket generate correct` writes a private split that `-T data=DIR` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docket.benchmarks.correct.correct import correct_localization
from docket.benchmarks.correct.dataset import SHIPPED, SPLIT_FILE, load_trajectories
from docket.benchmarks.correct.generated import generate_split
from docket.benchmarks.correct.simulator.records import read_trajectories
from docket.cli import main
from docket.core.inspect_private import PrerequisiteError
from docket.core.splits import MANIFEST, SPLIT_KEY, files_digest, secret_seed


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "private"
    assert (
        main(["generate", "correct", "--seed", "a secret", "--out", str(out), "--size", "6"]) == 0
    )
    return out


def test_generate_writes_a_fresh_test_split_without_the_seed(private: Path) -> None:
    manifest = json.loads((private / MANIFEST).read_text())
    assert manifest == {
        "benchmark": "correct",
        "sha256": files_digest(private),
        "source": "generated",
    }
    rows = read_trajectories(private / SPLIT_FILE)
    assert len(rows) == 6 and {t.metadata["split"] for t in rows} == {"test"}
    shipped = {t.id for t in load_trajectories()} | {t.question for t in load_trajectories()}
    assert not {t.id for t in rows} & shipped and not {t.question for t in rows} & shipped
    text = (private / SPLIT_FILE).read_bytes()
    assert str(secret_seed("a secret")).encode() not in text and b"a secret" not in text


def test_the_same_secret_gives_the_same_split_and_another_does_not(
    private: Path, tmp_path: Path
) -> None:
    generate_split(secret_seed("a secret"), tmp_path, 6)
    assert (tmp_path / SPLIT_FILE).read_bytes() == (private / SPLIT_FILE).read_bytes()
    other = tmp_path / "other"
    other.mkdir()
    generate_split(secret_seed("another"), other, 6)
    assert (other / SPLIT_FILE).read_bytes() != (private / SPLIT_FILE).read_bytes()


def test_the_task_runs_on_it_and_records_the_split(private: Path) -> None:
    task = correct_localization(data=str(private))
    assert len(task.dataset) == 6
    assert task.metadata is not None
    assert task.metadata[SPLIT_KEY] == {
        "sha256": files_digest(private),
        "source": "generated",
        "name": "private",
    }
    baseline = correct_localization(data=str(private), method="surface_baseline")
    assert len(baseline.dataset) == 6  # trains on the shipped train split


def test_the_shipped_split_records_its_file_hash() -> None:
    task = correct_localization(size=2)
    assert task.metadata is not None
    assert task.metadata[SPLIT_KEY] == {
        "sha256": files_digest(SHIPPED.parent, [SHIPPED]),
        "source": "shipped",
    }


def test_an_edited_or_foreign_split_stops_with_one_line(private: Path, tmp_path: Path) -> None:
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / SPLIT_FILE).write_bytes((private / SPLIT_FILE).read_bytes()[:-40])
    (edited / MANIFEST).write_text((private / MANIFEST).read_text())
    with pytest.raises(PrerequisiteError, match="files changed since"):
        correct_localization(data=str(edited))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / SPLIT_FILE).write_bytes((private / SPLIT_FILE).read_bytes())
    manifest = {"benchmark": "docval", "sha256": files_digest(foreign), "source": "generated"}
    (foreign / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(PrerequisiteError, match="is a split of 'docval'"):
        correct_localization(data=str(foreign))
    with pytest.raises(ValueError, match="at least 1"):
        generate_split(1, tmp_path / "x", 0)
