"""The README's table: every detector on every data set, several seeds, AUROC and AUPRC.

AnoLLM and both DiSPaT variants share one fine-tuning per (data set, seed): AnoLLM's scores
are taken after it, then each self-play variant continues from a copy of that model. The
numbers equal what `docket/tabular_anomaly -T detector=...` reports for the same settings
(the task fits each detector separately).

    python benchmarks/tabular_anomaly/scripts/experiment.py --seeds 3 --out runs/anomaly.json
    python benchmarks/tabular_anomaly/scripts/experiment.py --first-seed 2 --seeds 1 --out s2.json
    python benchmarks/tabular_anomaly/scripts/experiment.py --table runs/anomaly.json s2.json
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

from docket.benchmarks.tabular_anomaly.attacks import surface_scores
from docket.benchmarks.tabular_anomaly.dataset import DATASETS, LOADERS, split
from docket.benchmarks.tabular_anomaly.scorer import ranking_metrics
from docket.methods.anomaly.baselines import PYOD_DETECTORS, pyod_scores, random_scores
from docket.methods.anomaly.dispat import DiSPaT, LMConfig, SelfPlayConfig

LM_ROWS = ("anollm", "dispat-implicit", "dispat-variational", "self-play-off")
#: The language-model rows compared with AnoLLM, seed by seed, in `differences`.
PAIRED = ("dispat-implicit", "dispat-variational", "self-play-off", "surface")


def language_model_rows(
    table: Any, part: Any, seed: int, lm: LMConfig, play: SelfPlayConfig
) -> dict[str, dict[str, Any]]:
    """AnoLLM, then DiSPaT implicit and variational and the ablation (the same rounds with
    `play_weight=0`: the anchor alone, i.e. more fine-tuning) from copies of one fine-tuned
    model. Each DiSPaT row also keeps its self-play rounds' records under `rounds`."""
    base = DiSPaT(table.columns, LMConfig(**{**lm.__dict__, "seed": seed}), play)
    super(DiSPaT, base).fit(part.train)  # AnoLLM's fine-tuning only
    out: dict[str, dict[str, Any]] = {
        "anollm": ranking_metrics(part.labels, list(base.score(part.test)))
    }
    settings: dict[str, dict[str, Any]] = {
        "dispat-implicit": {"variant": "implicit"},
        "dispat-variational": {"variant": "variational"},
        "self-play-off": {"variant": "implicit", "play_weight": 0.0},
    }
    for row, changes in settings.items():
        detector = copy.deepcopy(base)
        detector.play = SelfPlayConfig(**{**play.__dict__, **changes})
        detector.self_play(part.train)
        scores = list(detector.score(part.test))
        metrics: dict[str, Any] = dict(ranking_metrics(part.labels, scores))
        metrics["rounds"] = detector.report.rounds
        out[row] = metrics
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every detector on every (data set, seed); results by data set, detector, metric."""
    lm = LMConfig(steps=args.sft_steps)
    play = SelfPlayConfig(iterations=args.iterations, steps=args.play_steps)
    results: dict[str, Any] = {}
    for name in args.datasets:
        table = LOADERS[name]()
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            part = split(table, seed)
            rows: dict[str, dict[str, Any]] = {
                "random": ranking_metrics(part.labels, list(random_scores(part.test, seed))),
                "surface": ranking_metrics(
                    part.labels, list(surface_scores(table.columns, part.train, part.test))
                ),
            }
            for detector in PYOD_DETECTORS:
                scores = pyod_scores(detector, table.columns, part.train, part.test, seed)
                rows[detector] = ranking_metrics(part.labels, list(scores))
            if not args.skip_lm:
                started = time.time()
                rows.update(language_model_rows(table, part, seed, lm, play))
                print(
                    f"{name} seed {seed}: language models {time.time() - started:.0f}s", flush=True
                )
            for detector, values in rows.items():
                values["seed"] = seed
                results.setdefault(name, {}).setdefault(detector, []).append(values)
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    return results


def table(results: dict[str, Any]) -> str:
    """Markdown: one row per detector, AUROC (AUPRC) mean ± sd per data set; the seed count
    where it is below the most any cell has; the mean only over a full row."""
    names = list(results)
    most = max(len(runs) for name in names for runs in results[name].values())
    detectors = list(dict.fromkeys(d for n in names for d in results[n]))
    lines = [
        "| detector | " + " | ".join(names) + " | mean AUROC |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for detector in detectors:
        cells, means = [], []
        for name in names:
            runs = results[name].get(detector, [])
            if not runs:  # not run on this data set
                cells.append("–")
                continue
            auroc = [r["auroc"] for r in runs]
            auprc = [r["auprc"] for r in runs]
            spread = f" ± {statistics.stdev(auroc):.3f}" if len(auroc) > 1 else ""
            seeds = f" [{len(runs)} seed{'s' * (len(runs) > 1)}]" if len(runs) != most else ""
            cells.append(
                f"{statistics.mean(auroc):.3f}{spread} ({statistics.mean(auprc):.3f}){seeds}"
            )
            means.append(statistics.mean(auroc))
        overall = f"{statistics.mean(means):.3f}" if len(means) == len(names) else "–"
        lines.append(f"| {detector} | " + " | ".join(cells) + f" | {overall} |")
    return "\n".join(lines)


def differences(results: dict[str, Any], base: str = "anollm") -> str:
    """Markdown: each `PAIRED` row's AUROC minus `base`'s on the same split, per data set: the
    mean ± sd over the seeds both ran, the count below zero, and the per-seed values."""
    names = list(results)
    lines = [
        f"| AUROC − {base}, same split | " + " | ".join(names) + " | below 0 |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for row in PAIRED:
        cells, below, total = [], 0, 0
        for name in names:
            ours, theirs = results[name].get(row, []), results[name].get(base, [])
            gaps = [a["auroc"] - b["auroc"] for a, b in zip(ours, theirs, strict=False)]
            if not gaps:
                cells.append("–")
                continue
            below += sum(g < 0 for g in gaps)
            total += len(gaps)
            spread = f" ± {statistics.stdev(gaps):.3f}" if len(gaps) > 1 else ""
            each = ", ".join(f"{g:+.3f}" for g in gaps)
            cells.append(f"{statistics.mean(gaps):+.3f}{spread} [{each}]")
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {below} of {total} |")
    return "\n".join(lines)


def round_summary(results: dict[str, Any]) -> str:
    """Markdown: the self-play rounds' evaluation batch at the start and end of a round (the
    bound and the critic's balanced accuracy), mean over seeds and rounds, per data set."""
    names = list(results)
    lines = [
        "| evaluation batch, start → end of a round | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for row in LM_ROWS[1:]:
        for key, label in (("eval_bound", "bound"), ("eval_accuracy", "critic accuracy")):
            cells = []
            for name in names:
                rounds = [r for run in results[name].get(row, []) for r in run.get("rounds", [])]
                if not rounds:
                    cells.append("–")
                    continue
                start = statistics.mean(r[f"{key}_start"] for r in rounds)
                end = statistics.mean(r[f"{key}_end"] for r in rounds)
                cells.append(f"{start:.3f} → {end:.3f}")
            lines.append(f"| {row}: {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def merge(files: list[dict[str, Any]]) -> dict[str, Any]:
    """Results of runs split by data set or by seed, merged seed by seed.

    A run's seed is its `seed` field (files from before it existed: its position). A later
    file's run replaces an earlier one of the same (data set, detector, seed).

    Args:
        files: Parsed results files, as `run` writes them.

    Returns:
        The merged results in `DATASETS` order, each detector's runs sorted by seed.
    """
    by_seed: dict[str, dict[str, dict[int, Any]]] = {}
    for results in files:
        for name, rows in results.items():
            for detector, runs in rows.items():
                cell = by_seed.setdefault(name, {}).setdefault(detector, {})
                for position, values in enumerate(runs):
                    cell[int(values.get("seed", position))] = values
    return {
        name: {d: [cell[s] for s in sorted(cell)] for d, cell in by_seed[name].items()}
        for name in DATASETS
        if name in by_seed
    }


def report(results: dict[str, Any]) -> str:
    """The three tables, separated by blank lines."""
    return "\n\n".join([table(results), differences(results), round_summary(results)])


def main(argv: list[str] | None = None) -> int:
    """CLI."""
    parser = argparse.ArgumentParser(prog="python benchmarks/tabular_anomaly/scripts/experiment.py")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="run seeds from this one on")
    parser.add_argument("--sft-steps", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--play-steps", type=int, default=30)
    parser.add_argument("--skip-lm", action="store_true", help="PyOD and random only")
    parser.add_argument("--out", default="", help="JSON results file (written as it goes)")
    parser.add_argument(
        "--table", nargs="+", default=[], help="only print the table of these results files"
    )
    args = parser.parse_args(argv)
    if args.table:  # merge runs split by data set or by seed
        print(report(merge([json.loads(Path(path).read_text()) for path in args.table])))
        return 0
    print(report(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
