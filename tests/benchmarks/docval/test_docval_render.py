"""Renderer and data tests: boxes verified by re-rendering crops, exact transforms, the split."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from docket.benchmarks.docval.dataset import SHIPPED, DocvalDataError, load_documents
from docket.benchmarks.docval.generate import make_document
from docket.benchmarks.docval.layouts import BUILDERS, DOC_TYPES
from docket.benchmarks.docval.render import Augment, Canvas, augment, font
from docket.methods.distill.boxes import iou


def _ink(image: object) -> np.ndarray:
    return np.asarray(image) < 200


@pytest.mark.parametrize("doc_type", DOC_TYPES)
def test_word_boxes_match_rerendered_crops(doc_type: str) -> None:
    from PIL import Image, ImageDraw

    page, qas, _ = BUILDERS[doc_type](random.Random(f"render:{doc_type}"), None)
    pixels = np.asarray(page.image)
    for word in page.words:
        face = font(word.style, word.size)
        offset = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), word.text, font=face)
        origin = (word.box[0] - offset[0], word.box[1] - offset[1])
        alone = Image.new("L", page.image.size, 255)
        ImageDraw.Draw(alone).text(origin, word.text, font=face, fill=0)
        alone_px = np.asarray(alone)
        x1, y1, x2, y2 = word.box
        assert _ink(alone_px).sum() == _ink(alone_px[y1:y2, x1:x2]).sum(), word  # box holds all ink
        assert _ink(alone_px[y1:y2, x1:x2]).any(), word
        assert np.array_equal(pixels[y1:y2, x1:x2], alone_px[y1:y2, x1:x2]), word  # nothing else
    for a in page.words:  # words never overlap, so every crop is one word
        assert all(iou(a.box, b.box) == 0 for b in page.words if b is not a)
    for qa in qas:
        assert all(0 <= s < len(page.segments) for s in qa.segments)


@pytest.mark.parametrize("angle", [2.0, -1.5])
def test_rotation_and_scale_move_boxes_exactly(angle: float) -> None:
    canvas = Canvas(400, 300)
    canvas.text(40, 40, "TOP-LEFT", "bold", 20)
    canvas.text(300, 240, "Corner", "sans", 18)
    page = augment(canvas.page, Augment(rotate=angle, scale=0.75))
    ink = _ink(page.image.convert("L"))
    for word in page.words:
        x1, y1, x2, y2 = word.box
        region = np.zeros_like(ink)
        region[max(0, y1 - 20) : y2 + 20, max(0, x1 - 20) : x2 + 20] = True
        ys, xs = np.nonzero(ink & region)
        # the transformed box encloses the word's ink and is at most 4 px looser on any side
        assert x1 <= xs.min() and xs.max() < x2 and y1 <= ys.min() and ys.max() < y2
        assert (
            xs.min() - x1 <= 4 and x2 - xs.max() <= 5 and ys.min() - y1 <= 4 and y2 - ys.max() <= 5
        )


@pytest.mark.parametrize("index", [0, 137])
def test_generation_is_reproducible_and_matches_shipped_split(index: int) -> None:
    first, jpeg = make_document(0, 7, "hard", 5)
    again, jpeg_again = make_document(0, 7, "hard", 5)
    assert first == again and jpeg == jpeg_again
    shipped = load_documents(SHIPPED)[index]
    regenerated, _ = make_document(0, index, shipped["difficulty"], 5)
    assert regenerated["questions"] == [
        {k: q[k] for k in regenerated["questions"][0]} for q in shipped["questions"]
    ]
    for key in ("words", "segments", "ocr", "facts"):
        assert regenerated[key] == shipped[key], key


def test_shipped_split_size_and_balance() -> None:
    docs = load_documents(SHIPPED)
    questions = [q for d in docs for q in d["questions"]]
    assert len(docs) == 210 and len(questions) == 1050
    assert Counter(d["doc_type"] for d in docs) == {t: 42 for t in DOC_TYPES}
    assert Counter(d["difficulty"] for d in docs) == {"easy": 70, "medium": 70, "hard": 70}
    assert Counter((d["doc_type"], d["difficulty"]) for d in docs) == {
        (t, level): 14 for t in DOC_TYPES for level in ("easy", "medium", "hard")
    }
    # the question kinds of the shipped split
    assert Counter(q["kind"] for q in questions) == {
        "distractor": 359,
        "key_value": 292,
        "table_cell": 213,
        "header": 186,
    }
    for doc in docs:
        assert Path(doc["image_path"]).is_file()
        for q in doc["questions"]:
            x1, y1, x2, y2 = q["bbox"]
            assert 0 <= x1 < x2 <= doc["width"] and 0 <= y1 < y2 <= doc["height"]
    size = sum(p.stat().st_size for p in SHIPPED.parent.rglob("*") if p.is_file())
    assert size < 5 * 1024 * 1024  # a few MB: 210 JPEG pages and the gzipped JSONL


def test_malformed_rows_name_file_row_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"doc_id": "d", "image": "x.jpg", "width": 10, "height": 10, '
        '"questions": [{"question": "q", "answers": ["a"], "bbox": [1, 2]}]}\n'
    )
    with pytest.raises(DocvalDataError, match=r"bad.jsonl:1 question 0: field 'bbox'"):
        load_documents(bad)
    bad.write_text('{"doc_id": "d", "image": "x.jpg", "height": 10, "questions": []}\n')
    with pytest.raises(DocvalDataError, match=r"bad.jsonl:1: missing field 'width'"):
        load_documents(bad)
    bad.write_text("{not json\n")
    with pytest.raises(DocvalDataError, match=r"bad.jsonl:1: not JSON"):
        load_documents(bad)
