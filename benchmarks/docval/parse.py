"""Parsing of a model's grounded answer (see `methods/distill/output_format.py`) and the box rule.

Box rule (pixels of the page image): a box with x2 <= x1 or y2 <= y1, or with a NaN coordinate
(JSON allows `NaN`), is **rejected**; a box reaching outside the image is **clipped** to it, and
rejected if nothing is left.
"""

from __future__ import annotations

import math

from docket.methods.distill.output_format import Box, Parsed, parse_box, parse_output

__all__ = ["Box", "Parsed", "apply_box_rule", "parse_box", "parse_output"]


def apply_box_rule(box: Box, width: float, height: float) -> tuple[Box | None, str]:
    """Apply the documented rule; return (box or None, '' | 'clipped' | 'rejected: why')."""
    x1, y1, x2, y2 = box
    if any(math.isnan(v) for v in box):
        return None, "rejected: a coordinate is NaN"
    if x2 <= x1 or y2 <= y1:
        return None, "rejected: x2 <= x1 or y2 <= y1"
    clipped = (max(0.0, x1), max(0.0, y1), min(width, x2), min(height, y2))
    if clipped[2] <= clipped[0] or clipped[3] <= clipped[1]:
        return None, "rejected: outside the image"
    return clipped, ("clipped" if clipped != (x1, y1, x2, y2) else "")
