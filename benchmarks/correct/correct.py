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

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import Solver

import docket.benchmarks.correct.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.correct.cache import CacheMismatch, SchemaCache
from docket.benchmarks.correct.chance import chance_metadata
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
from docket.benchmarks.correct.retrieval import RETRIEVERS, embedding_prerequisite
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


def _fraction(name: str, value: object, low: float, high: float) -> float:
    number = checked(NAME, name, value, float)
    if not low <= number <= high:
        raise PrerequisiteError(f"{NAME}: -T {name}={number} must be in [{low}, {high}]")
    return number


@task
def correct_localization(
    method: str = "all_at_once",
    data: str = "",
    split: str = "test",
    tier: str = "all",
    size: int = 0,
    with_gt: bool = False,
    tolerance: int = 1,
    k: int = 5,
    retriever: str = "bm25",
    mode: str = STRICT,
    online: bool = True,
    delta: float = 0.9,
    theta: float = 0.01,
    theta_hot: float = 3.0,
    decay: float = 0.995,
    capacity: int = 0,
    cache_path: str = "",
    distiller: str = "rules",
    distiller_self: bool = False,
    fit_size: int = 0,
    hf_name: str = "",
    hf_split: str = "",
    max_tokens: int = 512,
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
        with_gt: Show the correct final answer in the prompts.
        tolerance: t of the step-within-±t accuracy.
        k: Schemata retrieved per sample (correct).
        retriever: bm25, tfidf or embedding (correct; embedding needs docket[embeddings]).
        mode: strict (cache fitted on the train split; evaluated labels join it prequentially)
            or transductive_leaks_labels (fitted on the evaluated trajectories, each sample's
            own schema left out: the paper's protocol, which leaks the other test labels).
        online: Add each sample's schema to the cache after its retrieval, replay hot schemata
            and evict (correct).
        delta: Merge threshold: signature cosine at or above it merges into an entry.
        theta: Eviction threshold on an entry's decayed hotness.
        theta_hot: Hotness at which an entry is refined by replay on its source failures.
        decay: Hotness decay per query.
        capacity: Most entries kept (0: unbounded).
        cache_path: SQLite file of the fitted cache, reused across runs of the same mode,
            split and data (another protocol stops with one line); '' for a fresh one.
        distiller: rules (deterministic) or model (the `distiller` model role writes and
            merges schemata).
        distiller_self: Let the model under test play the `distiller` role when it is unbound.
        fit_size: Fit the cache on the first `fit_size` fit trajectories only (0: all).
        hf_name: Configuration of a Hugging Face dataset (e.g. Hand-Crafted).
        hf_split: Split of a Hugging Face dataset (default train).
        max_tokens: Tokens per answer of the model under test and of the distiller.

    Returns:
        The task: one sample per failed trajectory, solved by the chosen method's solver, scored by
        `localisation`.
    """
    method = one_of(NAME, "method", method, METHODS)
    split = one_of(NAME, "split", split, SPLITS)
    tier = one_of(NAME, "tier", tier, ("all", *TIERS))
    mode = one_of(NAME, "mode", mode, MODES)
    retriever = one_of(NAME, "retriever", retriever, RETRIEVERS)
    distiller = one_of(NAME, "distiller", distiller, ("rules", "model"))
    with_gt = checked(NAME, "with_gt", with_gt, bool)
    distiller_self = checked(NAME, "distiller_self", distiller_self, bool)
    max_tokens = positive(NAME, "max_tokens", max_tokens)
    tolerance = checked(NAME, "tolerance", tolerance, int)
    if tolerance < 0 or checked(NAME, "size", size, int) < 0:
        raise PrerequisiteError(f"{NAME}: -T tolerance and -T size must be at least 0")
    if method == "correct" and distiller == "model":
        require_roles(NAME, ["distiller"], allow_self=distiller_self, self_flag=DISTILLER_FLAG)
    data = checked(NAME, "data", data, str)
    everything = load_trajectories(
        data, checked(NAME, "hf_name", hf_name, str), checked(NAME, "hf_split", hf_split, str)
    )
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
                    mode=mode,
                    cache_path=checked(NAME, "cache_path", cache_path, str),
                    fit_size=checked(NAME, "fit_size", fit_size, int),
                    k=checked(NAME, "k", k, int),
                    retriever=retriever,
                    delta=_fraction("delta", delta, 1e-6, 1.0),
                    theta=_fraction("theta", theta, 0.0, 1e9),
                    theta_hot=_fraction("theta_hot", theta_hot, 0.0, 1e9),
                    decay=_fraction("decay", decay, 1e-6, 1.0),
                    capacity=checked(NAME, "capacity", capacity, int),
                    online=checked(NAME, "online", online, bool),
                    distiller=distiller,
                    distiller_self=distiller_self,
                    max_tokens=max_tokens,
                )
            ),
            with_gt,
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
        solver = all_at_once(table, with_gt, max_tokens)
    elif method == "step_by_step":
        solver = step_by_step(table, with_gt, min(max_tokens, 128))
    else:
        solver = binary_search(table, with_gt, min(max_tokens, 128))
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
        scorer=localisation(tolerance),
        version=VERSION,
        tags=TAGS,
        headline_metric=declared["headline_metric"],
        metadata={
            **declared["metadata"],
            "benchmark": "correct",
            "method": method,
            "split": split,
            "tier": tier,
            "mode": mode if method == "correct" else None,
            "leaks": LEAKS[mode] if method == "correct" else None,
            **split_entry,
            **chance_metadata(),
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
