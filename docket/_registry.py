"""Inspect entry point: importing this module registers every docket task, provider and sandbox.

One line per benchmark: importing its tasks registers them with Inspect and, through its task
module, its scripted reference policies. `REGISTERED["task"]` is built from the imported
benchmarks' `listing.yaml` (in the order of the lines below), so adding a benchmark is its folder,
its line here and its tests. Inspect only logs a warning when an entry-point import fails, so
`tests/test_registry.py` asserts that every name listed in `REGISTERED` resolves.
"""

# ruff: noqa: F401, I001
from docket._models import docket_model_api
from docket.compatible import shape_command_line_models
from docket.retry_notice import RetryNotice
from docket.benchmarks.presets import benchmark_folders, listed_task_names
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

from docket.benchmarks.smoke.smoke import smoke
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.correct.correct import correct_localization
from docket.benchmarks.scsuff.scsuff import scsuff, scsuff_hints
from docket.benchmarks.docval.docval import docval_grounding, docval_teacher
from docket.benchmarks.rl_arith.rl_arith import rl_arith
from docket.benchmarks.rl_constraints.rl_constraints import rl_constraints
from docket.benchmarks.context_qa.context_qa import context_qa
from docket.benchmarks.fed_topics.fed_topics import fed_topics
from docket.benchmarks.spatial_relations.spatial_relations import spatial_relations
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.benchmarks.toy_math.toy_math import toy_math, toy_math_sar

#: Everything docket registers, by Inspect registry type (names are package-qualified).
REGISTERED: dict[str, list[str]] = {
    "modelapi": ["docket/docket"],
    "sandboxenv": ["docket/bwrap"],
    "hooks": ["docket/retry_notice"],
    "task": listed_task_names(benchmark_folders(globals().values())),
}

# `inspect eval docket/<task> --model openai/<name>` against a compatible server: Inspect loads
# this module before it builds the run's first model, so its `openai/` models get the plain chat
# shape the suite gives them (docket/compatible.py).
shape_command_line_models()
