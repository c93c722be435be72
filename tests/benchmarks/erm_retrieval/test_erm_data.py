"""The shipped corpus regenerates byte for byte, its ids and row order carry nothing, its
mismatch is real, and BEIR folders load (the fixture is in BEIR's exact layout) or fail in one
line."""

from __future__ import annotations

import hashlib
import json
import re
import runpy
import statistics
from pathlib import Path
from typing import Any

import pytest

from docket.benchmarks.erm_retrieval.dataset import SHIPPED, BeirDataError, load_beir, read_qrels
from docket.benchmarks.erm_retrieval.generate import CONCEPTS, ID_DIGITS, generate
from docket.methods.retrieval.text import tokenize

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "beir_tiny"


def test_the_shipped_data_is_what_the_generator_writes(tmp_path: Path) -> None:
    sizes = generate(tmp_path)
    for name in ["corpus.jsonl", "queries.jsonl", "qrels/feedback.tsv", "qrels/test.tsv",
                 "thesaurus.json"]:  # fmt: skip
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name
    data = load_beir()
    assert (len(data.feedback), len(data.heldout)) == (sizes["feedback"], sizes["test"])
    assert len(data.doc_ids) == 240 and len(data.heldout) == 240


def _rows(folder: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _correlations(folder: Path) -> tuple[float, float]:
    """Correlation, over every query, of its row in queries.jsonl with its document's row in
    corpus.jsonl, and of its id's rank among the sorted query ids with its document id's."""
    docs = [row["_id"] for row in _rows(folder, "corpus.jsonl")]
    queries = _rows(folder, "queries.jsonl")
    row_of = {d: i for i, d in enumerate(docs)}
    doc_rank = {d: i for i, d in enumerate(sorted(docs))}
    query_rank = {q: i for i, q in enumerate(sorted(q["_id"] for q in queries))}
    targets = [q["metadata"]["target"] for q in queries]
    by_row = statistics.correlation(list(range(len(queries))), [row_of[t] for t in targets])
    by_id = statistics.correlation(
        [query_rank[q["_id"]] for q in queries], [doc_rank[t] for t in targets]
    )
    return by_row, by_id


def test_ids_are_opaque_and_all_the_same_length() -> None:
    docs = [row["_id"] for row in _rows(SHIPPED, "corpus.jsonl")]
    queries = [row["_id"] for row in _rows(SHIPPED, "queries.jsonl")]
    assert len(set(docs)) == 240 and len(set(queries)) == 528
    assert all(re.fullmatch(f"d[0-9a-f]{{{ID_DIGITS}}}", d) for d in docs)
    assert all(re.fullmatch(f"q[0-9a-f]{{{ID_DIGITS}}}", q) for q in queries)


def test_neither_ids_nor_rows_say_which_document_a_query_is_about(tmp_path: Path) -> None:
    """1-A: both correlations 0.9996 (one numbering pass). 2-A's shipped data: 0.0004 by row,
    -0.019 by id (bound 0.05); seeds 1 and 2: -0.023 / -0.104 and 0.035 / 0.025 (bound 0.15,
    about three standard errors: three queries of a seen document share its row)."""
    assert all(abs(c) < 0.05 for c in _correlations(SHIPPED)), _correlations(SHIPPED)
    for seed in (1, 2):
        generate(tmp_path / str(seed), seed=seed)
        found = _correlations(tmp_path / str(seed))
        assert all(abs(c) < 0.15 for c in found), (seed, found)


def test_the_qrels_list_queries_in_the_shuffled_file_order() -> None:
    """The qrels, which order the feedback stream and the held-out samples, follow
    queries.jsonl (no second order to read), and every query is judged in its own split."""
    queries = _rows(SHIPPED, "queries.jsonl")
    row_of = {q["_id"]: i for i, q in enumerate(queries)}
    for split in ("feedback", "test"):
        lines = (SHIPPED / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]
        ids = list(dict.fromkeys(line.split("\t")[0] for line in lines))
        assert [row_of[q] for q in ids] == sorted(row_of[q] for q in ids)
        assert ids == [q["_id"] for q in queries if q["metadata"]["split"] == split]


def test_the_content_is_version_1a_s() -> None:
    """2-A changed ids and order only: the sorted document and query texts hash as 1-A's did."""
    texts = [
        sorted(row["text"] for row in _rows(SHIPPED, "corpus.jsonl")),
        sorted(row["text"] for row in _rows(SHIPPED, "queries.jsonl")),
    ]
    digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
    assert digest == "675db38e98fb024a"


def test_queries_speak_a_vocabulary_the_documents_do_not() -> None:
    data = load_beir()
    doc_words = {w for text in data.doc_texts for w in tokenize(text)}
    lay = {w for _, words in CONCEPTS for phrase in words for w in tokenize(phrase)}
    assert not doc_words & lay
    used = [q for q in data.heldout if set(tokenize(q.text)) & lay]
    assert len(used) / len(data.heldout) > 0.8
    assert all(q.answers and q.metadata["split"] == "test" for q in data.heldout)


def test_a_beir_folder_with_its_own_feedback_qrels() -> None:
    data = load_beir(str(FIXTURE), split="test", feedback_split="train")
    assert data.doc_ids == ["doc1", "doc2", "doc3", "doc4", "doc5"]
    assert (
        data.doc_texts[0]
        == "Ophthalmology clinic\nThe clinic treats cataracts and glaucoma with laser surgery."
    )
    assert data.doc_texts[3] == "Orthodontic braces straighten teeth over eighteen months."
    assert [q.id for q in data.feedback] == ["q6"]
    assert [q.id for q in data.heldout] == ["q1", "q2", "q3", "q4", "q5"]  # q6 is never scored
    assert data.heldout[2].relevant == {"doc3": 2} and data.heldout[0].answers == ("doc1",)


def test_without_a_feedback_file_a_hash_splits_the_queries() -> None:
    data = load_beir(str(FIXTURE), split="test", feedback_split="missing", feedback_share=0.5)
    ids = sorted(q.id for q in [*data.feedback, *data.heldout])
    assert ids == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert not {q.id for q in data.feedback} & {q.id for q in data.heldout}
    again = load_beir(str(FIXTURE), split="test", feedback_split="missing", feedback_share=0.5)
    assert [q.id for q in again.feedback] == [q.id for q in data.feedback]


def test_qrels_keep_grades_and_skip_the_header() -> None:
    assert read_qrels(FIXTURE / "qrels" / "test.tsv")["q6"] == {"doc1": 1, "doc3": 0}


@pytest.mark.parametrize(
    ("corpus", "message"),
    [
        ('{"_id": "a", "text": "x"}\nnot json\n', "corpus.jsonl:2: not JSON"),
        ('{"text": "x"}\n', "corpus.jsonl:1: a row needs an '_id'"),
        ('{"_id": "a", "text": 3}\n', "row 'a' has no 'text' string"),
    ],
)
def test_malformed_rows_are_one_line_naming_file_and_row(
    tmp_path: Path, corpus: str, message: str
) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(corpus)
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\n")
    with pytest.raises(BeirDataError) as error:
        load_beir(str(tmp_path))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_folder_and_bad_qrels(tmp_path: Path) -> None:
    with pytest.raises(BeirDataError, match="not a folder"):
        load_beir(str(tmp_path / "nope"))
    (tmp_path / "bad.tsv").write_text("query-id\tcorpus-id\tscore\nq\td\thigh\n")
    with pytest.raises(BeirDataError, match="bad.tsv:2: score 'high' is not an integer"):
        read_qrels(tmp_path / "bad.tsv")


def test_the_experiment_table_is_mean_and_sd_over_corpora() -> None:
    scripts = Path(__file__).resolve().parents[3] / "benchmarks" / "erm_retrieval" / "scripts"
    table = runpy.run_path(str(scripts / "experiment.py"))["table"]

    lines = table({"erm": [(0.5, 0.8, 0.6, 0.4), (0.7, 0.8, 0.6, 0.2)]}).splitlines()
    assert lines[0] == "| method | nDCG@10 | Recall@20 | nDCG@10 seen | nDCG@10 unseen |"
    assert lines[2] == "| erm | 0.600 ± 0.141 | 0.800 ± 0.000 | 0.600 ± 0.000 | 0.300 ± 0.141 |"
    assert table({"static": [(0.25, 0.5, 0.125, 0.375)]}).splitlines()[2] == (
        "| static | 0.250 | 0.500 | 0.125 | 0.375 |"
    )
