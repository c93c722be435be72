"""Box and string geometry shared by the validator and the DocVAL scorer.

Boxes are `(x1, y1, x2, y2)` with x2 > x1 and y2 > y1 in one coordinate frame.
"""

from __future__ import annotations

from collections.abc import Sequence

BoxLike = Sequence[float]


def area(box: BoxLike) -> float:
    """Area of a box (0 for an empty or inverted box)."""
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def iou(a: BoxLike, b: BoxLike) -> float:
    """Intersection over union of two boxes (0 when either is empty)."""
    inter = area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))
    total = area(a) + area(b) - inter
    return inter / total if total > 0 else 0.0


def nls(prediction: str, truth: str) -> float:
    """Normalised Levenshtein similarity 1 - d/max_len on stripped, lower-cased strings."""
    import Levenshtein

    p, t = prediction.strip().lower(), truth.strip().lower()
    longest = max(len(p), len(t))
    if longest == 0:
        return 1.0
    return 1.0 - Levenshtein.distance(p, t) / longest
