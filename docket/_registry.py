"""Inspect entry point: importing this module registers every docket task, provider and sandbox.

Inspect only logs a warning when an entry-point import fails, so `tests/test_registry.py`
asserts that every name listed in `REGISTERED` resolves. Keep one block per benchmark.
"""

# ruff: noqa: F401, I001
from docket._models import docket_model_api
from docket.benchmarks.smoke.smoke import smoke
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

# --- anchor ---
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct

# --- correct ---
from docket.benchmarks.correct.correct import correct_localization

# --- scsuff ---
from docket.benchmarks.scsuff.scsuff import scsuff, scsuff_hints

# --- docval ---
from docket.benchmarks.docval.docval import docval_grounding, docval_teacher

# --- erm_retrieval, tabular_anomaly, toy_math (issue 21) ---
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.benchmarks.toy_math.toy_math import toy_math, toy_math_sar

#: Everything docket registers, by Inspect registry type (names are package-qualified).
REGISTERED: dict[str, list[str]] = {
    "modelapi": ["docket/docket"],
    "sandboxenv": ["docket/bwrap"],
    "task": [
        "docket/smoke",
        # anchor
        "docket/anchor_direct",
        "docket/anchor_audit",
        # correct
        "docket/correct_localization",
        # scsuff
        "docket/scsuff",
        "docket/scsuff_hints",
        # docval
        "docket/docval_grounding",
        "docket/docval_teacher",
        # erm_retrieval, tabular_anomaly, toy_math
        "docket/erm_retrieval",
        "docket/erm_rag",
        "docket/tabular_anomaly",
        "docket/toy_math",
        "docket/toy_math_sar",
    ],
}
