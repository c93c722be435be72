"""Private DocVAL test splits: `docket generate docval` end to end, `-T data=DIR`, split hashes."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.docval.dataset import DATA_DIR, SHIPPED, DocvalDataError, load_documents
from docket.benchmarks.docval.docval import docval_grounding, docval_teacher
from docket.benchmarks.docval.generate import generate_split
from docket.cli import main
from docket.core.splits import SPLIT_KEY, files_digest, read_manifest


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("private") / "split"
    assert main(["generate", "docval", "--seed", "a secret", "--out", str(out), "--size", "4"]) == 0
    return out


def test_generate_writes_a_fresh_split_with_a_manifest(split: Path) -> None:
    manifest = read_manifest(split)
    assert manifest == {"benchmark": "docval", "sha256": files_digest(split), "source": "generated"}
    docs = load_documents(split / "test.jsonl.gz")
    assert [d["doc_type"] for d in docs] == ["receipt", "invoice", "form", "table"]
    assert sum(len(d["questions"]) for d in docs) == 20
    shipped = {d["doc_id"] for d in load_documents(SHIPPED)}
    assert not shipped & {d["doc_id"] for d in docs}
    assert b"a secret" not in (split / "split.json").read_bytes()
    assert b"a secret" not in gzip.open(split / "test.jsonl.gz").read()


def test_the_same_secret_gives_the_same_split_and_another_a_different_one(
    split: Path, tmp_path: Path
) -> None:
    again, other = tmp_path / "again", tmp_path / "other"
    assert (
        main(["generate", "docval", "--seed", "a secret", "--out", str(again), "--size", "4"]) == 0
    )
    assert (
        main(["generate", "docval", "--seed", "another", "--out", str(other), "--size", "4"]) == 0
    )
    assert read_manifest(again)["sha256"] == read_manifest(split)["sha256"]
    assert read_manifest(other)["sha256"] != read_manifest(split)["sha256"]


def test_tasks_run_on_the_split_and_name_it_in_their_metadata(split: Path) -> None:
    sha256 = read_manifest(split)["sha256"]
    for task in (
        docval_grounding(mode="layout_text", data=str(split)),
        docval_teacher(data=str(split), self_teacher=True, with_image=False),
    ):
        assert len(task.dataset) == 20
        assert (task.metadata or {})[SPLIT_KEY] == {
            "sha256": sha256,
            "source": "generated",
            "name": "split",
        }
    shipped = docval_grounding(mode="layout_text")
    assert (shipped.metadata or {})[SPLIT_KEY] == {
        "sha256": files_digest(DATA_DIR),
        "source": "shipped",
        "name": "docval",
    }


def test_the_oracle_scores_one_on_the_private_split(split: Path, tmp_path: Path) -> None:
    log = inspect_eval(
        docval_grounding(mode="layout_text", data=str(split)),
        model=get_model(
            "docket/scripted", policy="docval_oracle", data=str(split / "test.jsonl.gz")
        ),
        log_dir=str(tmp_path),
        display="none",
        limit=5,
    )[0]
    assert log.status == "success" and log.results is not None
    scores = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert scores["anls"] == 1.0 and scores["map"] == 1.0
    assert log.eval.metadata is not None and log.eval.metadata[SPLIT_KEY]["source"] == "generated"


def test_a_changed_or_foreign_split_is_one_line(split: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in split.rglob("*"):
        if path.is_file():
            target = copy / path.relative_to(split)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    next((copy / "images").iterdir()).write_bytes(b"edited")
    with pytest.raises(DocvalDataError, match="files changed since `docket generate`"):
        docval_grounding(data=str(copy), mode="layout_text")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DocvalDataError, match="no split.json"):
        docval_grounding(data=str(empty), mode="layout_text")
    with pytest.raises(ValueError, match="docval: --size 0; a split needs at least 1 document"):
        generate_split(1, tmp_path / "z", 0)
