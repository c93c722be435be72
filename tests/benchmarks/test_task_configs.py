"""Tasks that took `-T config=` (issue #55 item 5) build the very task they built before.

Each case builds a task with its knobs given through `-T config=` (a YAML file, as
`inspect eval -T config=knobs.yaml` passes it) and compares its fingerprint (dataset, solver
with every value its closures hold, scorer, generate config, limits, version, metadata; see
`tests/benchmarks/fingerprint.py`) with the one the same knobs gave as keyword parameters
before they moved (`tests/data/task_config_fingerprints.json`, written by the code of commit
b80154d from `old_kwargs`; the erm_retrieval, erm_rag, scsuff and tabular_anomaly cases were
rewritten after erm_retrieval 2-A, the chance rows in scsuff's and tabular_anomaly's
metadata, SCSuff 4-B / tabular_anomaly 1-D's deduplicated data and scsuff_hints 4-A's
headline, all merged beside the config change). The defaults build the same task with no
config, an empty mapping or an empty file; a changed knob is recorded in the task's metadata
(`config`).

After a deliberate change to one of these tasks (a version bump), rewrite the file:
`python -m tests.benchmarks.test_task_configs --write`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.anchor.config import AnchorAuditConfig
from docket.benchmarks.correct.config import CorrectConfig
from docket.benchmarks.correct.correct import correct_localization
from docket.benchmarks.erm_retrieval.config import ErmConfig
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.benchmarks.scsuff.config import ScsuffHintsConfig
from docket.benchmarks.scsuff.scsuff import scsuff, scsuff_hints
from docket.benchmarks.tabular_anomaly.config import TabularConfig
from docket.benchmarks.tabular_anomaly.tabular_anomaly import tabular_anomaly
from docket.core.inspect_private import PrerequisiteError
from docket.core.task_config import TaskConfig
from tests.benchmarks.fingerprint import fingerprint

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "task_config_fingerprints.json"

TASKS: dict[str, Callable[..., Task]] = {
    "anchor_audit": anchor_audit,
    "anchor_direct": anchor_direct,
    "correct_localization": correct_localization,
    "scsuff": scsuff,
    "scsuff_hints": scsuff_hints,
    "erm_retrieval": erm_retrieval,
    "erm_rag": erm_rag,
    "tabular_anomaly": tabular_anomaly,
}

#: The SCSuff generator and estimator knobs, each away from its default.
_SCSUFF_KNOBS: dict[str, Any] = {
    "num_alternatives": 3,
    "generator_temperature": 0.4,
    "generator_top_p": 0.9,
    "generator_top_k": 20,
    "generator_max_tokens": 300,
    "num_samples": 7,
    "top_logprobs": 5,
    "seed": 7,
}
#: The ERM and feedback knobs, each away from its default.
_ERM_KNOBS: dict[str, Any] = {
    "feedback_split": "none",  # no such qrels file: a hash of the query id splits
    "feedback_share": 0.3,
    "eta": 0.5,
    "radius": 0.5,
    "threshold": 0.1,
    "gate_depth": 5,
    "decay": 0.1,
    "prune": 0.3,
    "doc2query_n": 2,
    "seed": 3,
}

#: (case, task, parameters that stay, knobs that moved into config).
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("correct_localization-defaults", "correct_localization", {}, {}),
    ("correct-method-correct", "correct_localization", {"method": "correct"}, {}),
    (
        "correct-knobs",
        "correct_localization",
        {"method": "correct", "size": 60},
        {
            "with_gt": True,
            "tolerance": 2,
            "k": 3,
            "retriever": "tfidf",
            "mode": "transductive_leaks_labels",
            "online": False,
            "delta": 0.8,
            "theta": 0.05,
            "theta_hot": 2.5,
            "decay": 0.99,
            "capacity": 50,
            "fit_size": 30,
        },
    ),
    ("correct-with-gt", "correct_localization", {"size": 30}, {"with_gt": True, "tolerance": 0}),
    ("scsuff-defaults", "scsuff", {}, {}),
    ("scsuff-knobs", "scsuff", {"n": 12}, _SCSUFF_KNOBS),
    ("scsuff_hints-defaults", "scsuff_hints", {}, {}),
    (
        "scsuff_hints-knobs",
        "scsuff_hints",
        {"n": 12},
        {**_SCSUFF_KNOBS, "estimator": "sampling", "max_tokens": 200},
    ),
    ("erm_retrieval-defaults", "erm_retrieval", {}, {}),
    ("erm_retrieval-knobs", "erm_retrieval", {}, _ERM_KNOBS),
    ("erm_rag-defaults", "erm_rag", {}, {}),
    ("erm_rag-knobs", "erm_rag", {"max_tokens": 32}, _ERM_KNOBS),
    ("tabular_anomaly-defaults", "tabular_anomaly", {}, {}),
    (
        "tabular_anomaly-knobs",
        "tabular_anomaly",
        {"detector": "dispat", "datasets": "wine", "seeds": 1},
        {
            "variant": "variational",
            "f": "kl",
            "iterations": 3,
            "sft_steps": 100,
            "play_steps": 20,
            "samples": 32,
            "lam": 0.1,
            "anchor": 0.5,
            "base_model": "no/such/checkpoint",
        },
    ),
    ("anchor_direct-defaults", "anchor_direct", {}, {}),
    (
        "anchor_direct-knobs",
        "anchor_direct",
        {},
        {"tool_timeout": 45, "max_steps": 5, "judge_protocol": "json"},
    ),
    ("anchor_audit-defaults", "anchor_audit", {}, {}),
    (
        "anchor_audit-knobs",
        "anchor_audit",
        {"max_turns": 10},
        {
            "compact_after": 4,
            "tool_timeout": 45,
            "max_steps": 5,
            "auditor_protocol": "json",
            "judge_protocol": "schema",
        },
    ),
]


def old_kwargs(case: str) -> dict[str, Any]:
    """The case as the keyword parameters the task took before its knobs moved."""
    _, _, kept, moved = next(c for c in CASES if c[0] == case)
    return {**kept, **moved}


def built(case: str, tmp_path: Path) -> Task:
    """The case's task, its moved knobs given as a `-T config=` YAML file."""
    _, name, kept, moved = next(c for c in CASES if c[0] == case)
    if not moved:
        return TASKS[name](**kept)
    path = tmp_path / f"{case}.yaml"
    path.write_text(yaml.safe_dump(moved), encoding="utf-8")
    return TASKS[name](**kept, config=str(path))


def golden() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_config_builds_the_task_the_parameters_built(case: str, tmp_path: Path) -> None:
    task = built(case, tmp_path)
    assert fingerprint(task) == golden()[case]
    _, _, _, moved = next(c for c in CASES if c[0] == case)
    assert (task.metadata or {}).get("config") == (moved or None)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_defaults_need_no_config(name: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    configs: list[object] = [{}, str(empty)]
    for config in configs:
        assert fingerprint(TASKS[name](config=config)) == golden()[f"{name}-defaults"], config


REGISTRY = importlib.import_module("docket._registry")


@pytest.mark.parametrize("name", REGISTRY.REGISTERED["task"])
def test_no_task_takes_ten_parameters_without_a_config(name: str) -> None:
    """Every registered task: fewer than ten `-T` parameters, or at most nine and `config`."""
    parameters = list(inspect.signature(getattr(REGISTRY, name.removeprefix("docket/"))).parameters)
    if len(parameters) >= 10 or name.removeprefix("docket/") in TASKS:
        assert parameters[-1] == "config" and len(parameters) <= 10, parameters


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        (
            "correct_localization",
            {"theta": -1},
            r"^correct_localization: -T config: theta: Input should be greater than",
        ),
        (
            "correct_localization",
            {"thetta": 0.1},
            r"^correct_localization: -T config: unknown key 'thetta'; accepted: with_gt, ",
        ),
        ("scsuff", {"generator_top_p": 1.5}, r"^scsuff: -T config: generator_top_p: "),
        ("scsuff_hints", {"estimator": "vote"}, r"^scsuff_hints: -T config: estimator: "),
        ("erm_retrieval", {"eta": 0}, r"^erm_retrieval: -T config: eta: "),
        ("erm_rag", {"gate_depth": "3"}, r"^erm_rag: -T config: gate_depth: "),
        (
            "erm_rag",
            "no/such.yaml",
            r"^erm_rag: -T config='no/such.yaml': cannot read it \(no such",
        ),
        ("erm_rag", ".", r"^erm_rag: -T config='.': cannot read it \(a folder\)"),
        ("scsuff", ["n", 3], r"^scsuff: -T config must be a YAML file path or a mapping"),
    ],
)
def test_a_bad_config_is_one_line(name: str, config: object, message: str) -> None:
    with pytest.raises(PrerequisiteError, match=message) as raised:
        TASKS[name](config=config)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("folder", "model"),
    [
        ("correct", CorrectConfig),
        ("scsuff", ScsuffHintsConfig),
        ("erm_retrieval", ErmConfig),
        ("tabular_anomaly", TabularConfig),
        ("anchor", AnchorAuditConfig),
    ],
)
def test_each_readme_names_every_config_key(folder: str, model: type[TaskConfig]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "benchmarks" / folder / "README.md").read_text()
    for key in model.model_fields:
        assert f"`{key}`" in readme, (folder, key)


def test_inspect_passes_a_config_file_and_the_log_records_its_knobs(tmp_path: Path) -> None:
    knobs = {"seed": 5, "prune": 0.25}
    path = tmp_path / "knobs.yaml"
    path.write_text(yaml.safe_dump(knobs), encoding="utf-8")
    [log] = inspect_eval(
        "docket/erm_retrieval",
        task_args={"method": "random", "config": str(path)},
        model=get_model("docket/scripted", policy="refuse"),
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.eval.task_args["config"] == str(path)
    assert (log.eval.metadata or {})["config"] == knobs


def write() -> None:
    """Rewrite the golden file from the current code (after a deliberate task change)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        found = {case: fingerprint(built(case, Path(folder))) for case, *_ in CASES}
    GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the golden file")
    if parser.parse_args().write:
        write()
