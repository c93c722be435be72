"""`docket/correct_localization`: find the agent and step that made a multi-agent run fail.

Run: `inspect eval docket/correct_localization -T method=correct --model docket/scripted
-M policy=correct_oracle` (scores 1.0) or `-M policy=correct_first_step` (scores the share of
trajectories whose mistake is at step 0).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from docket.benchmarks.common.args import checked, choice, positive
from docket.benchmarks.correct.dataset import SPLITS, load_trajectories, select, to_sample
from docket.benchmarks.correct.retrieval import RETRIEVERS, embedding_prerequisite
from docket.benchmarks.correct.scorer import localisation
from docket.benchmarks.correct.solvers import (
    CacheConfig,
    all_at_once,
    binary_search,
    correct,
    step_by_step,
)
from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import Solver

NAME = "correct_localization"
METHODS = ("all_at_once", "step_by_step", "binary_search", "correct")
MODES = ("strict", "transductive")


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
    size: int = 0,
    with_gt: bool = False,
    tolerance: int = 1,
    k: int = 5,
    retriever: str = "bm25",
    mode: str = "strict",
    online: bool = True,
    delta: float = 0.9,
    theta: float = 0.01,
    decay: float = 0.995,
    capacity: int = 0,
    cache_path: str = "",
    distiller: str = "rules",
    fit_size: int = 0,
    hf_name: str = "",
    hf_split: str = "",
    max_tokens: int = 512,
) -> Task:
    """Error localisation in failed multi-agent trajectories (Who&When baselines and CORRECT).

    Args:
        method: all_at_once, step_by_step, binary_search (Who&When) or correct.
        data: '' for the shipped split, a Who&When / CORRECT-Error file or folder, or
            hf:<id> (hf:whoandwhen, hf:correct-error; needs `datasets` and network).
        split: train, test or all (records without a split field: by a hash of their id).
        size: Evaluate the first `size` trajectories of the split (0: all).
        with_gt: Show the correct final answer in the prompts.
        tolerance: t of the step-within-±t accuracy.
        k: Schemata retrieved per sample (correct).
        retriever: bm25, tfidf or embedding (correct; embedding needs docket[embeddings]).
        mode: strict (cache fitted on the train split) or transductive (fitted on the evaluated
            trajectories, each sample's own schema left out).
        online: Add each sample's schema to the cache after its prediction (correct).
        delta: Merge threshold: signature cosine at or above it merges into an entry.
        theta: Eviction threshold on an entry's decayed hotness.
        decay: Hotness decay per query.
        capacity: Most entries kept (0: unbounded).
        cache_path: SQLite file of the cache (reused across runs); '' for a fresh temporary one.
        distiller: rules (deterministic) or model (model role `distiller`, falling back to the
            model under test when the role is unbound).
        fit_size: Fit the cache on the first `fit_size` trajectories only (0: all).
        hf_name: Configuration of a Hugging Face dataset (e.g. Hand-Crafted).
        hf_split: Split of a Hugging Face dataset (default train).
        max_tokens: Tokens per answer of the model under test and of the distiller.
    """
    method = choice(NAME, "method", method, METHODS)
    split = choice(NAME, "split", split, SPLITS)
    mode = choice(NAME, "mode", mode, MODES)
    retriever = choice(NAME, "retriever", retriever, RETRIEVERS)
    distiller = choice(NAME, "distiller", distiller, ("rules", "model"))
    with_gt = checked(NAME, "with_gt", with_gt, bool)
    max_tokens = positive(NAME, "max_tokens", max_tokens)
    tolerance = checked(NAME, "tolerance", tolerance, int)
    if tolerance < 0 or checked(NAME, "size", size, int) < 0:
        raise PrerequisiteError(f"{NAME}: -T tolerance and -T size must be at least 0")
    everything = load_trajectories(
        checked(NAME, "data", data, str),
        checked(NAME, "hf_name", hf_name, str),
        checked(NAME, "hf_split", hf_split, str),
    )
    chosen = select(everything, split, size)
    if not chosen:
        raise PrerequisiteError(f"{NAME}: split {split!r} of {data or 'the shipped data'} is empty")
    table = {t.id: t for t in chosen}
    if len(table) != len(chosen):
        raise PrerequisiteError(f"{NAME}: trajectory ids are not unique in {data or 'the data'}")
    solver: Solver
    if method == "correct":
        fit = chosen if mode == "transductive" else select(everything, "train")
        fit_size = checked(NAME, "fit_size", fit_size, int)
        if retriever == "embedding":
            embedding_prerequisite()
        config = CacheConfig(
            path=checked(NAME, "cache_path", cache_path, str)
            or str(Path(tempfile.mkdtemp(prefix="docket-correct-")) / "schemata.sqlite"),
            fit=fit[:fit_size] if fit_size > 0 else fit,
            k=checked(NAME, "k", k, int),
            retriever=retriever,
            delta=_fraction("delta", delta, 1e-6, 1.0),
            theta=_fraction("theta", theta, 0.0, 1e9),
            decay=_fraction("decay", decay, 1e-6, 1.0),
            capacity=checked(NAME, "capacity", capacity, int),
            online=checked(NAME, "online", online, bool),
            distiller=distiller,
            max_tokens=max_tokens,
        )
        solver = correct(table, config, with_gt, max_tokens)
    elif method == "all_at_once":
        solver = all_at_once(table, with_gt, max_tokens)
    elif method == "step_by_step":
        solver = step_by_step(table, with_gt, min(max_tokens, 128))
    else:
        solver = binary_search(table, with_gt, min(max_tokens, 128))
    return Task(
        dataset=MemoryDataset([to_sample(t) for t in chosen], name=f"correct-{split}"),
        solver=solver,
        scorer=localisation(tolerance),
        version="1-A",
        metadata={"method": method, "mode": mode if method == "correct" else None},
    )
