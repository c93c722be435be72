"""`docket/correct_localization`: find the agent and step that made a multi-agent run fail.

Run: `inspect eval docket/correct_localization -T method=correct --model docket/scripted
-M policy=correct_oracle` (scores 1.0), `-M policy=correct_first_step` (scores the share of
trajectories whose mistake is at step 0), or `-T method=surface_baseline` (no model call: the
words-and-positions classifier that must stay near the first-step score).
"""

from __future__ import annotations

import hashlib
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import Solver

import docket.benchmarks.correct.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.correct.cache import CacheMismatch, SchemaCache
from docket.benchmarks.correct.chance import chance_metadata
from docket.benchmarks.correct.config import CorrectConfig
from docket.benchmarks.correct.dataset import (
    SPLITS,
    TIERS,
    data_hash,
    data_split,
    is_generated,
    load_trajectories,
    select,
    to_sample,
)
from docket.benchmarks.correct.retrieval import embedding_prerequisite
from docket.benchmarks.correct.scorer import localisation
from docket.benchmarks.correct.simulator.records import Trajectory
from docket.benchmarks.correct.solvers import (
    DISTILLER_FLAG,
    CacheConfig,
    SchemaStream,
    SurfaceConfig,
    all_at_once,
    binary_search,
    correct,
    step_by_step,
    surface_baseline,
)
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, one_of, positive
from docket.core.roles import require_roles
from docket.core.task_config import task_config

NAME = "correct_localization"
VERSION = "3-D"
METHODS = ("all_at_once", "step_by_step", "binary_search", "correct", "surface_baseline")
STRICT, TRANSDUCTIVE = "strict", "transductive_leaks_labels"
MODES = (STRICT, TRANSDUCTIVE)
#: What each cache mode lets a prediction see of the evaluated trajectories' labels.
LEAKS = {
    STRICT: "none: the cache is fitted on the train split; an evaluated trajectory's label "
    "enters it only after that trajectory's own retrieval, in dataset order",
    TRANSDUCTIVE: "the gold labels (agent, step, reason) of every other evaluated trajectory "
    "(the CORRECT paper's leave-one-out protocol)",
}
TAGS = ["agent", "multi-agent", "failure-attribution", "localization"]


@task
def correct_localization(
    method: str = "all_at_once",
    data: str = "",
    split: str = "test",
    tier: str = "all",
    size: int = 0,
    distiller: str = "rules",
    distiller_self: bool = False,
    max_tokens: int = 512,
    config: str | dict[str, Any] | CorrectConfig | None = None,
) -> Task:
    """Error localisation in failed multi-agent trajectories (Who&When baselines and CORRECT).

    Args:
        method: all_at_once, step_by_step, binary_search (Who&When), correct (schema cache)
            or surface_baseline (a words-and-positions classifier, no model call).
        data: '' for the shipped split, a folder written by `docket generate correct` (a
            private test split, checked against its manifest; the methods that train use the
            shipped train split), a Who&When folder, a CORRECT-Error file (.jsonl or .parquet),
            any JSON/JSONL file, or hf:<id> (hf:whoandwhen, hf:correct-error; needs `datasets`
            and network).
        split: train, test or all (records without a split field: by a hash of their id).
        tier: all, short (up to 15 steps), medium (16-59) or long (60 and more).
        size: Evaluate the first `size` trajectories of the split (0: all).
        distiller: rules (deterministic) or model (the `distiller` model role writes and
            merges schemata).
        distiller_self: Let the model under test play the `distiller` role when it is unbound.
        max_tokens: Tokens per answer of the model under test and of the distiller.
        config: The other knobs (`CorrectConfig`: with_gt, tolerance, CORRECT's cache
            retriever, mode, k, delta, theta, theta_hot, decay, capacity, online, cache_path,
            fit_size, and hf_name, hf_split): a YAML file path or a mapping; '' for the
            defaults.

    Returns:
        The task: one sample per failed trajectory, solved by the chosen method's solver, scored by
        `localisation`.
    """
    knobs = task_config(NAME, CorrectConfig, config)
    method = one_of(NAME, "method", method, METHODS)
    split = one_of(NAME, "split", split, SPLITS)
    tier = one_of(NAME, "tier", tier, ("all", *TIERS))
    distiller = one_of(NAME, "distiller", distiller, ("rules", "model"))
    distiller_self = checked(NAME, "distiller_self", distiller_self, bool)
    max_tokens = positive(NAME, "max_tokens", max_tokens)
    if checked(NAME, "size", size, int) < 0:
        raise PrerequisiteError(f"{NAME}: -T size must be at least 0")
    if method == "correct" and distiller == "model":
        require_roles(NAME, ["distiller"], allow_self=distiller_self, self_flag=DISTILLER_FLAG)
    data = checked(NAME, "data", data, str)
    everything = load_trajectories(data, knobs.hf_name, knobs.hf_split)
    split_entry = data_split(data)  # checks a generated split's manifest
    # a generated split is all test: the methods that train use the shipped train split
    train = select(load_trajectories() if is_generated(data) else everything, "train")
    chosen = select(everything, split, size, tier)
    if not chosen:
        raise PrerequisiteError(
            f"{NAME}: split {split!r}, tier {tier!r} of {data or 'the shipped data'} is empty"
        )
    table = {t.id: t for t in chosen}
    if len(table) != len(chosen):
        raise PrerequisiteError(f"{NAME}: trajectory ids are not unique in {data or 'the data'}")
    solver: Solver
    if method == "correct":
        solver = correct(
            table,
            SchemaStream(
                _cache_config(
                    everything,
                    train,
                    chosen,
                    split=split,
                    mode=knobs.mode,
                    cache_path=knobs.cache_path,
                    fit_size=knobs.fit_size,
                    k=knobs.k,
                    retriever=knobs.retriever,
                    delta=knobs.delta,
                    theta=knobs.theta,
                    theta_hot=knobs.theta_hot,
                    decay=knobs.decay,
                    capacity=knobs.capacity,
                    online=knobs.online,
                    distiller=distiller,
                    distiller_self=distiller_self,
                    max_tokens=max_tokens,
                )
            ),
            knobs.with_gt,
            max_tokens,
        )
    elif method == "surface_baseline":
        if split != "test":
            raise PrerequisiteError(
                f"{NAME}: method=surface_baseline trains on the train split; evaluate it on "
                "-T split=test"
            )
        solver = surface_baseline(table, SurfaceConfig(train))
    elif method == "all_at_once":
        solver = all_at_once(table, knobs.with_gt, max_tokens)
    elif method == "step_by_step":
        solver = step_by_step(table, knobs.with_gt, min(max_tokens, 128))
    else:
        solver = binary_search(table, knobs.with_gt, min(max_tokens, 128))
    declared = headline(
        "localisation",
        "accuracy",
        score="step",
        direction="higher",
        value="binary",
        sample_key="step",
    )
    return Task(
        dataset=MemoryDataset([to_sample(t) for t in chosen], name=f"correct-{split}"),
        solver=solver,
        scorer=localisation(knobs.tolerance),
        version=VERSION,
        tags=TAGS,
        headline_metric=declared["headline_metric"],
        metadata={
            **declared["metadata"],
            "benchmark": "correct",
            "method": method,
            "split": split,
            "tier": tier,
            "mode": knobs.mode if method == "correct" else None,
            "leaks": LEAKS[knobs.mode] if method == "correct" else None,
            **split_entry,
            **chance_metadata(),
            **({"config": knobs.changed()} if knobs.changed() else {}),
        },
    )


def _cache_config(
    everything: list[Trajectory],
    train: list[Trajectory],
    chosen: list[Trajectory],
    *,
    split: str,
    mode: str,
    cache_path: str,
    fit_size: int,
    **options: object,
) -> CacheConfig:
    """The cache options, the fit set of the mode and the identity recorded in the file."""
    fit = chosen if mode == TRANSDUCTIVE else train
    fit = fit[:fit_size] if fit_size > 0 else fit
    if options["retriever"] == "embedding":
        embedding_prerequisite()
    identity = {
        "mode": mode,
        "split": split if mode == TRANSDUCTIVE else "train",
        "data": data_hash(everything),
        "fit": hashlib.sha256("\n".join(t.id for t in fit).encode()).hexdigest()[:16],
        "distiller": str(options["distiller"]),
    }
    if cache_path and Path(cache_path).exists():
        try:
            SchemaCache(cache_path, identity=identity).close()
        except CacheMismatch as ex:
            raise PrerequisiteError(f"{NAME}: {ex}") from None
        except sqlite3.DatabaseError as ex:
            raise PrerequisiteError(f"{NAME}: cache {cache_path} is not a cache ({ex})") from None
    path = cache_path or str(Path(tempfile.mkdtemp(prefix="docket-correct-")) / "schemata.sqlite")
    return CacheConfig(path=path, fit=fit, items=chosen, identity=identity, **options)  # type: ignore[arg-type]
