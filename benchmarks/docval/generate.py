"""Generate the procedural DocVAL split (`python benchmarks/docval/scripts/generate.py OUT`).

Reproducible from `--seed`: document i uses `random.Random(f"{seed}:{i}")` for its layout and
`random.Random(f"{seed}:{i}:ocr")` for its simulated OCR and `random.Random(f"{seed}:{i}:opener")`
for its test questions' openers, so any document can be regenerated alone. Writes
`OUT/images/<doc_id>.jpg` and `OUT/<split>.jsonl.gz` (one document per line with
its words, segments, OCR tokens, facts and questions). The shipped split is
`generate data --seed 0 --docs 210 --questions 5`; `docket generate docval --seed SECRET`
(`generate_split`) gives fresh private splits. Test splits use the `test` wording and
training data the `train` wording (`wording.py`: no label or question template in common).
Document ids are opaque (`document_id`): they name neither the seed nor the index.
"""

from __future__ import annotations

import gzip
import hashlib
import random
from pathlib import Path
from typing import Any

from docket.benchmarks.docval.layouts import BUILDERS, DOC_TYPES, QA
from docket.benchmarks.docval.ocr import simulate_ocr
from docket.benchmarks.docval.render import Augment, Page, augment, jpeg_bytes, page_record, union
from docket.benchmarks.docval.wording import Wording
from docket.core.jsonl import jsonl_text

SHIPPED_DOCS = 210
SPLIT_STEM = "test"  # a split directory holds SPLIT_STEM.jsonl.gz
SHIPPED_QUESTIONS = 5

#: difficulty -> (rotation degrees range, scale range, blur radius, JPEG quality)
DIFFICULTY: dict[str, tuple[tuple[float, float], tuple[float, float], float, int]] = {
    "easy": ((0.0, 0.0), (1.0, 1.0), 0.0, 60),
    "medium": ((0.5, 1.0), (0.8, 0.95), 0.3, 50),
    "hard": ((1.0, 2.0), (0.6, 0.8), 0.6, 40),
}


_LETTERS = str.maketrans("0123456789abcdef", "bcdfghjkmnpqrstv")


def document_id(seed: int, index: int) -> str:
    """The opaque id of document `index` of split `seed`: 12 letters from a SHA-256.

    The id holds no digit, and neither the seed nor the index can be read back from it, so
    nothing a model sees drives the generator (with a secret seed, not even by enumeration).
    """
    digest = hashlib.sha256(f"docval-document:{seed}:{index}".encode()).hexdigest()
    return f"doc-{digest[:12].translate(_LETTERS)}"


def _page(
    seed: int, index: int, difficulty: str, family: str
) -> tuple[random.Random, Page, list[QA], dict[str, Any]]:
    """Document `index`'s rng (after the page), augmented page, candidate questions and facts."""
    rng = random.Random(f"{seed}:{index}")
    doc_type = DOC_TYPES[index % len(DOC_TYPES)]
    wording = Wording(family, rng, random.Random(f"{seed}:{index}:opener"))
    page, qas, facts = BUILDERS[doc_type](rng, wording)
    (rot_lo, rot_hi), (sc_lo, sc_hi), blur, _ = DIFFICULTY[difficulty]
    rotation = rng.uniform(rot_lo, rot_hi) * rng.choice([-1, 1]) if rot_hi else 0.0
    page = augment(page, Augment(rotate=rotation, scale=rng.uniform(sc_lo, sc_hi), blur=blur))
    return rng, page, qas, facts


def _question(page: Page, qa: QA) -> dict[str, Any]:
    words = [w for s in qa.segments for w in page.segments[s].word_ids]
    return {
        "question": qa.question,
        "answers": qa.answers,
        "bbox": list(union([page.words[w].box for w in words])),
        "segments": qa.segments,
        "kind": qa.kind,
        "field": qa.field,
    }


def candidate_questions(
    seed: int, index: int, difficulty: str, family: str = "test"
) -> list[dict[str, Any]]:
    """Every question document `index` supports (one per field), before the split draws some.

    For analysis only (e.g. what always answering one field would score); the split's own
    questions are `make_document`'s.
    """
    _, page, qas, _ = _page(seed, index, difficulty, family)
    return [_question(page, qa) for qa in qas]


def make_document(
    seed: int, index: int, difficulty: str, n_questions: int, family: str = "test"
) -> tuple[dict[str, Any], bytes]:
    """Render document `index` of the split seeded by `seed`; return its record and JPEG bytes.

    Args:
        seed: The split's seed.
        index: The document's position in the split (its type is `DOC_TYPES[index % 5]`).
        difficulty: `easy`, `medium` or `hard` (see `DIFFICULTY`).
        n_questions: Questions drawn from the document's candidates.
        family: The labels and question wording (`wording.FAMILIES`): `test` for test splits,
            `train` for training data (the two share no label and no question template).

    Returns:
        The document's record and its JPEG page.
    """
    rng, page, qas, facts = _page(seed, index, difficulty, family)
    doc_id = document_id(seed, index)
    questions = [
        {"qid": f"{doc_id}-q{j}", **_question(page, qa)}
        for j, qa in enumerate(rng.sample(qas, min(n_questions, len(qas))))
    ]
    layout = page_record(page)
    ocr = simulate_ocr(
        layout["words"], page.size[0], page.size[1], random.Random(f"{seed}:{index}:ocr")
    )
    record = {
        "doc_id": doc_id,
        "doc_type": DOC_TYPES[index % len(DOC_TYPES)],
        "difficulty": difficulty,
        "image": f"images/{doc_id}.jpg",
        **layout,
        "ocr": [list(token) for token in ocr],
        "facts": facts,
        "questions": questions,
    }
    return record, jpeg_bytes(page.image, DIFFICULTY[difficulty][3])


def generate(
    out: Path,
    seed: int = 0,
    docs: int = SHIPPED_DOCS,
    questions: int = SHIPPED_QUESTIONS,
    split: str = "test",
    difficulties: tuple[str, ...] = ("easy", "medium", "hard"),
    family: str = "test",
) -> Path:
    """Write `docs` documents (cycling through types and difficulties) under `out`.

    Args:
        out: The split's directory (`images/` and `<split>.jsonl.gz` go there).
        seed: The split's seed.
        docs: How many documents.
        questions: Questions per document.
        split: The JSONL file's stem.
        difficulties: The difficulties to cycle through (five documents each in turn).
        family: `test` (test splits) or `train` (training data): see `make_document`.

    Returns:
        The JSONL file written.
    """
    (out / "images").mkdir(parents=True, exist_ok=True)
    path = out / f"{split}.jsonl.gz"
    records = []
    for i in range(docs):
        difficulty = difficulties[(i // len(DOC_TYPES)) % len(difficulties)]
        record, jpeg = make_document(seed, i, difficulty, questions, family)
        (out / record["image"]).write_bytes(jpeg)
        records.append(record)
    # mtime 0: the same seed gives byte-identical files (and so the same split hash)
    with gzip.GzipFile(path, "wb", mtime=0) as handle:
        handle.write(jsonl_text(records, compact=True).encode("utf-8"))
    return path


def generate_split(seed: int, out: Path, size: int | None = None) -> None:
    """`docket generate docval --seed SECRET --out DIR [--size N]`: a private test split.

    Writes `DIR/test.jsonl.gz` and `DIR/images/` in the test wording, the layout
    `-T data=DIR` reads (after `docket generate` adds its `split.json` manifest).

    Args:
        seed: The integer `docket generate` derives from the secret seed.
        out: The (new, empty) directory.
        size: Documents to write (5 questions each); default the shipped 210.

    Raises:
        ValueError: `size` is below 1.
    """
    docs = SHIPPED_DOCS if size is None else size
    if docs < 1:
        raise ValueError(f"docval: --size {docs}; a split needs at least 1 document")
    generate(out, seed=seed, docs=docs, questions=SHIPPED_QUESTIONS, split=SPLIT_STEM)
