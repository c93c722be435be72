"""Prompt of docket/spatial_relations: the image, then the question (from `dataset.QUESTION`).

The tiny VLMs of `train_affin.py` are trained on exactly this user turn, as `docket/local`
renders it through the checkpoint's processor and chat template.
"""

from __future__ import annotations

#: Extracts the answer: the first standalone yes or no of the completion.
ANSWER_PATTERN = r"\b(yes|no)\b"
