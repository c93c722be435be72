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

# --- rl (methods/rl's verifiable-reward benchmarks) ---
from docket.benchmarks.rl_arith.rl_arith import rl_arith
from docket.benchmarks.rl_constraints.rl_constraints import rl_constraints

# --- adaptation (SHINE, FedPissa, AffIn-Space) ---
from docket.benchmarks.context_qa.context_qa import context_qa
from docket.benchmarks.fed_topics.fed_topics import fed_topics
from docket.benchmarks.spatial_relations.spatial_relations import spatial_relations

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
        # rl
        "docket/rl_arith",
        "docket/rl_constraints",
        # adaptation
        "docket/context_qa",
        "docket/fed_topics",
        "docket/spatial_relations",
        # erm_retrieval, tabular_anomaly, toy_math
        "docket/erm_retrieval",
        "docket/erm_rag",
        "docket/tabular_anomaly",
        "docket/toy_math",
        "docket/toy_math_sar",
    ],
}
