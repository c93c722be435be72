"""Export VAL-validated teacher traces from an Inspect log as JSONL or a `datasets` dataset.

One row per sample that `val_scorer` accepted (every scored sample with `accepted_only=False`,
with its decision), carrying the image path, question, regions, ground truth, the trace and the
verifier feedback. The command line is `methods/distill/scripts/export.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from docket.core import jsonl

SCORER = "val_scorer"


def trace_rows(log_path: str | Path, accepted_only: bool = True) -> list[dict[str, Any]]:
    """Rows for the samples of a `docval_teacher` log (only accepted ones by default)."""
    log = read_eval_log(str(log_path))
    if log.status != "success" or log.samples is None:
        raise ValueError(f"{log_path}: status {log.status!r}; export needs a successful log")
    rows: list[dict[str, Any]] = []
    for sample in log.samples:
        score = (sample.scores or {}).get(SCORER)
        if score is None:
            raise ValueError(f"{log_path}: sample {sample.id} has no '{SCORER}' score")
        value = score.value if isinstance(score.value, dict) else {}
        accepted = bool(value.get("accepted"))
        if accepted_only and not accepted:
            continue
        meta, extra = sample.metadata, score.metadata or {}
        rows.append(
            {
                "id": str(sample.id),
                "doc_id": meta.get("doc_id"),
                "image": meta.get("image_path"),
                "doc_type": meta.get("doc_type"),
                "question": meta["question"],
                "width": meta["width"],
                "height": meta["height"],
                "regions": meta.get("segments", []),
                "gt_answer": meta["answers"][0],
                "gt_bbox": meta["bbox"],
                "reasoning": extra.get("trace", {}).get("reasoning", ""),
                "answer": extra.get("trace", {}).get("answer"),
                "bbox": extra.get("trace", {}).get("bbox"),
                "q": value.get("q"),
                "accepted": accepted,
                "errors": extra.get("errors", []),
                "corrected": extra.get("corrected", {}),
            }
        )
    return rows


def write_jsonl(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as JSON lines."""
    return jsonl.write_jsonl(path, rows)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read exported rows back, naming the line of any malformed row."""

    def bad(number: int, ex: jsonl.JsonlLineError) -> ValueError:
        return ValueError(f"{path}:{number}: not JSON ({ex.reason})")

    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [row for _, row in jsonl.parse_lines(lines, bad)]


def to_hf_dataset(rows: list[dict[str, Any]], out_dir: str | Path) -> Path:
    """Save rows as a Hugging Face `datasets` dataset (needs `pip install datasets`)."""
    try:
        from datasets import Dataset
    except ImportError as ex:
        raise RuntimeError("--hf needs the 'datasets' package: pip install datasets") from ex
    flat = [
        {
            **r,
            "errors": json.dumps(r["errors"]),
            "corrected": json.dumps(r["corrected"]),
            "regions": json.dumps(r["regions"]),
        }
        for r in rows
    ]
    Dataset.from_list(flat).save_to_disk(str(out_dir))
    return Path(out_dir)
