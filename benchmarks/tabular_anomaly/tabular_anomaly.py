"""`docket/tabular_anomaly`: tabular anomaly detectors (DiSPaT, AnoLLM, PyOD's) on shipped or
generated tables, AUROC and AUPRC per (data set, seed).

The detector is a task option (`-T detector=`); the model under test plays no part. Each
sample fits the detector on one seed's normal training rows and scores that seed's test rows.
`-T data=DIR` runs a private split from `docket generate tabular_anomaly` (`splits.py`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import threading
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver

from docket.benchmarks.tabular_anomaly.attacks import surface_scores
from docket.benchmarks.tabular_anomaly.config import TabularConfig
from docket.benchmarks.tabular_anomaly.dataset import DATASETS, LOADERS, Split, Table, split
from docket.benchmarks.tabular_anomaly.scorer import detection_scorer
from docket.benchmarks.tabular_anomaly.splits import SPLIT_FILE, StoredSplit, load_splits
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, names, one_of, positive
from docket.core.results_tables import chance_metadata
from docket.core.splits import checked_split, rows_digest, split_metadata
from docket.core.task_config import task_config
from docket.methods.anomaly.detectors import DETECTORS, detect
from docket.methods.anomaly.dispat import LMConfig, SelfPlayConfig

NAME = "tabular_anomaly"
VERSION = "1-D"
#: `surface` (the chance row, `attacks.surface_scores`) beside the methods' detectors.
TASK_DETECTORS = (*DETECTORS, "surface")
#: Every blind attacker's AUROC per data set, mean over seeds 0-2 (`scripts/chance.py`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
#: One detector fits at a time (the CPU is shared; torch already uses every core).
_FIT = threading.Lock()


@functools.cache
def load_table(name: str) -> Table:
    """A data set, loaded once per process."""
    return LOADERS[name]()


@solver
def fit_and_score(
    detector: str,
    lm: LMConfig,
    play: SelfPlayConfig,
    max_train: int,
    max_test: int,
    anomaly_share: float,
    stored: dict[str, StoredSplit] | None = None,
) -> Solver:
    """Fit the detector on the sample's training rows and score its test rows.

    Args:
        detector: Detector name (a PyOD detector, random, surface, anollm or dispat).
        lm: Language-model settings of the AnoLLM/DiSPaT detectors.
        play: DiSPaT self-play settings.
        max_train: Largest number of training (normal) rows.
        max_test: Largest number of test rows.
        anomaly_share: Share of anomalies among the test rows.
        stored: A private split's splits by sample id (`-T data=DIR`): their rows are scored
            instead of a seed's split of the loaded table.

    Returns:
        A solver that stores the test rows' scores, labels, anomaly kinds and the training-row
        count in the sample store.
    """

    def run(sample: str, dataset: str, seed: int) -> tuple[list[float], list[int], list[str], int]:
        part: Split
        if stored is not None:
            columns, part = stored[sample].columns, stored[sample].part
        else:
            table = load_table(dataset)
            columns, part = table.columns, split(table, seed, max_train, max_test, anomaly_share)
        with _FIT:
            if detector == "surface":
                scores = surface_scores(columns, part.train, part.test)
            else:
                scores = detect(detector, columns, part.train, part.test, seed, lm, play)
        return [float(s) for s in scores], part.labels, part.kinds, len(part.train)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scores, labels, kinds, train_rows = await asyncio.to_thread(
            run, str(state.sample_id), str(state.metadata["dataset"]), int(state.metadata["seed"])
        )
        state.store.set("scores", scores)
        state.store.set("labels", labels)
        state.store.set("kinds", kinds)
        state.store.set("train_rows", train_rows)
        return state

    return solve


def _share(value: object) -> float:
    number = checked(NAME, "anomaly_share", value, float)
    if not 0 < number < 1:
        raise PrerequisiteError(f"{NAME}: -T anomaly_share={number} must be in (0, 1)")
    return number


def _prerequisites(detector: str, datasets: list[str]) -> None:
    needs = []
    if detector not in ("random", "surface", "dispat", "anollm") or "pyod_categorical" in datasets:
        needs.append("pyod")
    if detector in ("dispat", "anollm", "deepsvdd"):
        needs += ["torch", "transformers"]
    missing = [p for p in needs if importlib.util.find_spec(p) is None]
    if missing:
        raise PrerequisiteError(
            f"{NAME}: -T detector={detector} needs {', '.join(missing)}: "
            "pip install 'docket[methods,anomaly]'"
        )


def chance(datasets: list[str]) -> dict[str, Any]:
    """Task metadata `chance`: the blind attacker with the highest mean AUROC (the headline)
    over the chosen data sets, each its mean over seeds 0-2 (equal seeds per data set, so the
    mean over the task's samples), rounded as the file's `mean` (which it equals on all)."""

    def rows(found: dict[str, Any]) -> list[tuple[str, float]]:
        return [
            (r["name"], round(sum(r["auroc"][d] for d in datasets) / len(datasets), 6))
            for r in found["attackers"]
        ]

    return chance_metadata(CHANCE, rows)


def _samples(
    chosen: list[str], seeds: int, detector: str, data: str
) -> tuple[list[Sample], dict[str, StoredSplit] | None, dict[str, dict[str, str]]]:
    """(samples, a private split's splits by id or None, the split's metadata)."""
    if not data:
        samples = [
            Sample(
                id=f"{name}-{seed}",
                input=f"Score the test rows of {name} (seed {seed}) with {detector}.",
                metadata={"dataset": name, "seed": seed},
            )
            for name in chosen
            for seed in range(seeds)
        ]
        named = [[name, seed] for name in chosen for seed in range(seeds)]
        return samples, None, split_metadata(rows_digest(named), generated=False)
    folder = Path(data)
    manifest = checked_split(NAME, NAME, folder)
    stored = {s.id: s for s in load_splits(folder / SPLIT_FILE) if s.dataset in chosen}
    counts: dict[str, int] = {}
    samples = []
    for key, entry in stored.items():
        index = counts[entry.dataset] = counts.get(entry.dataset, -1) + 1
        text = f"Score the test rows of {entry.dataset} (split {key}) with {detector}."
        samples.append(
            Sample(id=key, input=text, metadata={"dataset": entry.dataset, "seed": index})
        )
    return (
        samples,
        stored,
        split_metadata(str(manifest["sha256"]), generated=True, name=folder.name),
    )


@task
def tabular_anomaly(
    detector: str = "iforest",
    datasets: str = "all",
    seeds: int = 3,
    max_train: int = 200,
    max_test: int = 200,
    anomaly_share: float = 0.1,
    data: str = "",
    config: str | dict[str, Any] | TabularConfig | None = None,
) -> Task:
    """Anomaly detection on tables: AUROC / AUPRC per data set and seed.

    Args:
        detector: dispat, anollm, iforest, ecod, copod, lof, knn, deepsvdd, random, or surface
            (the chance row: max robust z-score plus the count of unseen categories).
        datasets: all, or comma-separated names: breast_cancer, wine, shop, pyod_categorical.
        seeds: Seeds per data set (the split, the detector's initialisation).
        max_train: Most normal training rows per split.
        max_test: Most normal test rows per split.
        anomaly_share: Share of anomalies in each test split.
        data: '' (splits of the loaded tables by seed), or a private split's directory from
            `docket generate tabular_anomaly --seed SECRET --out DIR`: its stored splits of
            the chosen data sets are scored (`seeds`, `max_train`, `max_test` and
            `anomaly_share` were fixed when it was written).
        config: The language-model detectors' knobs (`TabularConfig`: DiSPaT's variant, f,
            iterations, play_steps, samples, lam, anchor; sft_steps and base_model of dispat
            and anollm): a YAML file path or a mapping; '' for the defaults.

    Returns:
        The task: one sample per (data set, seed), solved by `fit_and_score`, scored by
        `detection_scorer`.
    """
    knobs = task_config(NAME, TabularConfig, config)
    detector = one_of(NAME, "detector", detector, TASK_DETECTORS)
    chosen = list(DATASETS) if datasets == "all" else names(NAME, "datasets", datasets, DATASETS)
    _prerequisites(detector, chosen)
    lm = LMConfig(steps=knobs.sft_steps, base_model=knobs.base_model)
    play = SelfPlayConfig(
        variant=knobs.variant,
        f=knobs.f,
        iterations=knobs.iterations,
        steps=knobs.play_steps,
        samples=knobs.samples,
        lam=knobs.lam,
        anchor=knobs.anchor,
    )
    items, stored, named = _samples(
        chosen, positive(NAME, "seeds", seeds), detector, checked(NAME, "data", data, str)
    )
    dataset = MemoryDataset(items, name="tabular-anomaly")
    h = headline(
        "detection_scorer", "mean", score="auroc", direction="higher", value="continuous",
        sample_key="auroc",
    )  # fmt: skip
    return Task(
        dataset=dataset,
        solver=fit_and_score(
            detector,
            lm,
            play,
            positive(NAME, "max_train", max_train),
            positive(NAME, "max_test", max_test),
            _share(anomaly_share),
            stored,
        ),
        scorer=detection_scorer(),
        version=VERSION,
        tags=["anomaly-detection", "tabular"],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "tabular_anomaly",
            "detector": detector,
            # Detectors never call the model under test (reports: a method table).
            "model_free": True,
            "method": detector,
            **named,
            **chance(chosen),
            **({"config": knobs.changed()} if knobs.changed() else {}),
        },  # fmt: skip
    )
