"""DocVAL data: the shipped procedural split, DocVQA-format files and answer-box datasets.

Every source is converted to one document record (`doc_id`, `doc_type`, `image`, `width`,
`height`, `words`, `segments`, `ocr`, `questions[{qid, question, answers, bbox}]`) and then to
Inspect samples. Malformed input raises one `DocvalDataError` naming the file, row and field.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText

from docket.benchmarks.docval.prompts import ocr_tokens, question_prompt
from docket.core.jsonl import JsonlLineError, parse_lines
from docket.core.splits import files_digest, read_manifest, split_metadata

DATA_DIR = Path(__file__).parent / "data"
SHIPPED = DATA_DIR / "test.jsonl.gz"


class DocvalDataError(ValueError):
    """A data file row that cannot be used, with the file, row and field named."""


def _need(row: object, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(row, dict):
        raise DocvalDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if key not in row:
        raise DocvalDataError(f"{where}: missing field '{key}'")
    if not isinstance(row[key], kind):
        raise DocvalDataError(f"{where}: field '{key}' has type {type(row[key]).__name__}")
    return row[key]


def _check_box(value: object, where: str) -> list[float] | None:
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 4
        or not all(_is_finite(v) for v in value)
    ):
        raise DocvalDataError(
            f"{where}: field 'bbox' must be [x1, y1, x2, y2] (finite numbers), got {value!r:.80}"
        )
    return [float(v) for v in value]


def _is_finite(value: object) -> bool:
    """A real number (not a bool) that float() maps to a finite value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_ocr(doc: dict[str, Any], where: str) -> None:
    """`words` rows `[text, x1, y1, x2, y2, ...]`, `segments` rows `[id, x1, y1, x2, y2, text]`,
    `ocr` rows `[text, x1, y1, x2, y2]`."""
    for key, text_at, width in (("words", 0, 5), ("segments", 5, 6), ("ocr", 0, 5)):
        rows = doc[key]
        if not isinstance(rows, list):
            raise DocvalDataError(f"{where}: field '{key}' must be a list")
        for i, row in enumerate(rows):
            if (
                not isinstance(row, list)
                or len(row) < width
                or not all(_is_finite(v) for v in row[1:5])
                or not isinstance(row[text_at], str)
            ):
                raise DocvalDataError(f"{where}: field '{key}' row {i} is malformed: {row!r:.80}")


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                number += 1
                yield line
    except (UnicodeDecodeError, OSError, EOFError) as ex:
        raise DocvalDataError(f"{path}:{number + 1}: cannot be read ({ex})") from None


def load_documents(path: Path = SHIPPED) -> list[dict[str, Any]]:
    """Read a DocVAL split (`.jsonl` or `.jsonl.gz`, one document per line) and validate it."""
    docs: list[dict[str, Any]] = []

    def bad(number: int, ex: JsonlLineError) -> DocvalDataError:
        usable = "" if ex.syntax else "usable "  # else an over-long integer, deep nesting
        return DocvalDataError(f"{path}:{number}: not {usable}JSON ({ex.reason})")

    for number, doc in parse_lines(_lines(path), bad):
        where = f"{path}:{number}"
        for key, kind in (
            ("doc_id", str),
            ("image", str),
            ("width", int),
            ("height", int),
            ("questions", list),
        ):
            _need(doc, key, kind, where)
        doc.setdefault("doc_type", "unknown")
        doc.setdefault("difficulty", "unknown")
        doc.setdefault("words", [])
        doc.setdefault("segments", [])
        doc.setdefault("ocr", [])
        _check_ocr(doc, where)
        doc["image_path"] = str((path.parent / doc["image"]).resolve())
        for i, q in enumerate(doc["questions"]):
            qwhere = f"{where} question {i}"
            _need(q, "question", str, qwhere)
            answers = _need(q, "answers", list, qwhere)
            if not answers or not all(isinstance(a, str) for a in answers):
                raise DocvalDataError(f"{qwhere}: field 'answers' must be a non-empty list of str")
            q["bbox"] = _check_box(q.get("bbox"), qwhere)
            q.setdefault("qid", f"{doc['doc_id']}-q{i}")
        docs.append(doc)
    if not docs:
        raise DocvalDataError(f"{path}: no documents")
    return docs


def _image_size(path: Path, where: str) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.size
    except (OSError, ValueError) as ex:  # ValueError: e.g. a NUL byte in the name
        raise DocvalDataError(
            f"{where}: field 'image' {path!s:.200} cannot be opened ({ex})"
        ) from None


def load_docvqa(path: Path, image_root: Path | None = None) -> list[dict[str, Any]]:
    """Read a DocVQA-format JSON (`{"data": [{questionId, question, image, answers}]}`).

    Box metrics need a per-question `bbox` ([x1, y1, x2, y2] pixels, as in DocVAL's
    `annotations.json`); rows without one are kept and scored on ANLS only.
    """
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["data"]
    except (ValueError, KeyError, TypeError, RecursionError) as ex:  # ValueError: JSON, UTF-8
        raise DocvalDataError(
            f"{path}: expected a JSON object with a 'data' list ({type(ex).__name__})"
        ) from None
    if not isinstance(rows, list):
        raise DocvalDataError(f"{path}: field 'data' must be a list")
    root = image_root or path.parent
    docs: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        where = f"{path} data[{i}]"
        image = _need(row, "image", str, where)
        question = _need(row, "question", str, where)
        answers = _need(row, "answers", list, where)
        if image not in docs:
            width, height = _image_size(root / image, where)
            docs[image] = {
                "doc_id": str(row.get("docId", image)),
                "doc_type": str(row.get("doc_type", "docvqa")),
                "difficulty": "real",
                "image": image,
                "image_path": str((root / image).resolve()),
                "width": width,
                "height": height,
                "words": row.get("words", []),
                "segments": [],
                "ocr": [],
                "questions": [],
            }
        docs[image]["questions"].append(
            {
                "qid": str(row.get("questionId", f"q{i}")),
                "question": question,
                "answers": [str(a) for a in answers],
                "bbox": _check_box(row.get("bbox"), where),
            }
        )
    return list(docs.values())


def load_hf(name: str, split: str = "test") -> list[dict[str, Any]]:  # pragma: no cover - online
    """Load an answer-box dataset from the Hugging Face Hub (needs network and `datasets`).

    Expects columns `image` (PIL), `question`, `answers` (or `answer`) and `bbox` (pixels).
    Images are written to a temporary folder so samples can reference them by path.
    """
    import tempfile

    from datasets import load_dataset

    folder = Path(tempfile.mkdtemp(prefix="docval-hf-"))
    docs: list[dict[str, Any]] = []
    for i, row in enumerate(load_dataset(name, split=split)):
        image_path = folder / f"{i}.png"
        row["image"].save(image_path)
        answers = row.get("answers") or [row["answer"]]
        docs.append(
            {
                "doc_id": f"{name}-{i}",
                "doc_type": str(row.get("doc_type", name)),
                "difficulty": "real",
                "image": image_path.name,
                "image_path": str(image_path),
                "width": row["image"].size[0],
                "height": row["image"].size[1],
                "words": [],
                "segments": [],
                "ocr": [],
                "questions": [
                    {
                        "qid": f"{name}-{i}",
                        "question": row["question"],
                        "answers": list(answers),
                        "bbox": _check_box(row.get("bbox"), f"{name}[{i}]"),
                    }
                ],
            }
        )
    return docs


def load_source(data: str) -> list[dict[str, Any]]:
    """Documents from `data`: '' (shipped split), a `docket generate` directory, a
    `.jsonl[.gz]` split, a DocVQA `.json`, or `hf:NAME[:SPLIT]`."""
    if not data:
        return load_documents(SHIPPED)
    if data.startswith("hf:"):
        name, _, split = data[3:].partition(":")
        return load_hf(name, split or "test")
    path = Path(data)
    if not path.exists():
        raise DocvalDataError(f"{path}: no such data file")
    if path.is_dir():
        _generated_split(path)
        return load_documents(path / "test.jsonl.gz")
    return load_docvqa(path) if path.suffix == ".json" else load_documents(path)


def _generated_split(path: Path) -> dict[str, Any]:
    """The checked manifest of a `docket generate docval` directory (one error line if not)."""
    try:
        manifest = read_manifest(path)
    except ValueError as ex:
        raise DocvalDataError(str(ex)) from None
    if manifest.get("benchmark") != "docval":
        raise DocvalDataError(f"{path}: a split of {manifest.get('benchmark')!r}, not docval")
    if not (path / "test.jsonl.gz").is_file():
        raise DocvalDataError(f"{path}: no test.jsonl.gz")
    return manifest


def source_split(data: str) -> dict[str, dict[str, str]]:
    """`split_metadata` naming the split `data` selects, for `Task(metadata=...)`.

    Args:
        data: The tasks' `data` option.

    Returns:
        The shipped split's content hash (source `shipped`), a generated directory's manifest
        hash (source `generated`, named by the directory), or a file's hash (source
        `generated`, named `file:NAME`); `hf:` sources are named by the dataset, unhashed.
    """
    if not data:
        return split_metadata(files_digest(DATA_DIR), generated=False, name="docval")
    if data.startswith("hf:"):
        return split_metadata("unhashed", generated=True, name=data)
    path = Path(data)
    if path.is_dir():
        sha256 = str(_generated_split(path)["sha256"])
        return split_metadata(sha256, generated=True, name=path.name)
    sha256 = files_digest(path.parent, [path])
    return split_metadata(sha256, generated=True, name=f"file:{path.name}")


def to_samples(docs: list[dict[str, Any]], mode: str) -> list[Sample]:
    """One sample per question; metadata carries the page size, answers, GT box and regions.

    `vision`: the page image, then the question text; `layout_text`: the text alone, with the
    page's OCR tokens.
    """
    samples: list[Sample] = []
    for doc in docs:
        if mode == "layout_text" and not ocr_tokens(doc):
            raise DocvalDataError(
                f"document {doc['doc_id']}: mode=layout_text needs OCR 'ocr', 'words' or 'segments'"
            )
        for q in doc["questions"]:
            text = ContentText(text=question_prompt(doc, q["question"], mode))
            content: list[Content] = [text]
            if mode == "vision":
                content = [ContentImage(image=doc["image_path"]), text]
            samples.append(
                Sample(
                    id=q["qid"],
                    input=[ChatMessageUser(content=content)],
                    target=q["answers"],
                    metadata={
                        "doc_id": doc["doc_id"],
                        "doc_type": doc["doc_type"],
                        "difficulty": doc["difficulty"],
                        "question": q["question"],
                        "answers": q["answers"],
                        "bbox": q["bbox"],
                        "width": doc["width"],
                        "height": doc["height"],
                        "kind": q.get("kind", ""),
                        "segments": doc["segments"],
                        "image_path": doc["image_path"],
                    },
                )
            )
    return samples
