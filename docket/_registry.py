"""Inspect entry point: importing this module registers every docket task, provider and sandbox.

Every folder of `benchmarks/` with a `listing.yaml` is a benchmark: its task module
(`benchmarks/<b>/<b>.py`) is imported here, which registers its tasks with Inspect and, through
its imports, its scripted reference policies; each listed task's function becomes an attribute
of this module. `REGISTERED["task"]` is built from the listings in `RUN_ORDER`
(`docket/benchmarks/presets`), so adding a benchmark is its folder and its tests, with no line
here. Inspect only logs a warning when an entry-point import fails, so `tests/test_registry.py`
asserts that every name listed in `REGISTERED` resolves.
"""

# ruff: noqa: F401, I001
from docket._models import docket_model_api
from docket.compatible import shape_command_line_models
from docket.retry_notice import RetryNotice
from docket.benchmarks.presets import listed_folders, listed_task_names, task_functions
from docket.sandboxes.bwrap.sandbox import BwrapSandboxEnvironment

_FOLDERS = listed_folders()
# smoke, anchor_audit, ...: every listed task's function, as `from ... import smoke` would bind it
globals().update(task_functions(_FOLDERS))

#: Everything docket registers, by Inspect registry type (names are package-qualified).
REGISTERED: dict[str, list[str]] = {
    "modelapi": ["docket/docket"],
    "sandboxenv": ["docket/bwrap"],
    "hooks": ["docket/retry_notice"],
    "task": listed_task_names(_FOLDERS),
}

# `inspect eval docket/<task> --model openai/<name>` against a compatible server: Inspect loads
# this module before it builds the run's first model, so its `openai/` models get the plain chat
# shape the suite gives them (docket/compatible.py).
shape_command_line_models()
