"""The README's tables: every method on several generated corpora, mean ± sd over corpora.

Each corpus comes from `generate` with its own seed (2026 is the shipped one); each method is
built by `engine.build_engine`, what the task's solver runs, and scored on the held-out queries
with trec_eval. Metrics: nDCG@10, Recall@20, and nDCG@10 on seen and unseen documents.

    python benchmarks/erm_retrieval/scripts/experiment.py --seeds 2026 1 2
    python benchmarks/erm_retrieval/scripts/experiment.py --expander prf \
        --methods query_expansion erm
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

from docket.benchmarks.erm_retrieval.dataset import BeirData, load_beir
from docket.benchmarks.erm_retrieval.engine import (
    EXPANDERS,
    METHODS,
    RETRIEVERS,
    Setup,
    build_engine,
)
from docket.benchmarks.erm_retrieval.generate import generate
from docket.methods.retrieval.erm import ERMConfig
from docket.methods.retrieval.metrics import evaluate

COLUMNS = ("nDCG@10", "Recall@20", "nDCG@10 seen", "nDCG@10 unseen")


async def measure(data: BeirData, setup: Setup) -> tuple[float, float, float, float]:
    """The four columns for one method on one corpus."""
    engine = await build_engine(data, setup, None)
    runs = {q.id: await engine.rank(q.text, 20) for q in data.heldout}
    results = evaluate({q.id: q.relevant for q in data.heldout}, runs, 20)
    seen = {q.id: bool(q.metadata.get("seen")) for q in data.heldout}

    def mean(key: str, keep: bool | None = None) -> float:
        values = [v[key] for q, v in results.items() if keep is None or seen[q] == keep]
        return statistics.mean(values) if values else float("nan")

    return mean("ndcg_10"), mean("recall_at_k"), mean("ndcg_10", True), mean("ndcg_10", False)


async def run(args: argparse.Namespace) -> dict[str, list[tuple[float, ...]]]:
    """Rows per method, one per corpus."""
    out: dict[str, list[tuple[float, ...]]] = {}
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as folder:
            generate(Path(folder), seed=seed)
            data = load_beir(folder)
            thesaurus = str(Path(folder) / "thesaurus.json")
            for method in args.methods:
                erm = ERMConfig(radius=args.radius)
                setup = Setup(method, args.retriever, args.expander, thesaurus, erm)
                row = await measure(data, setup)
                out.setdefault(method, []).append(row)
                print(seed, method, [round(x, 3) for x in row], flush=True)
    return out


def table(rows: dict[str, list[tuple[float, ...]]]) -> str:
    """Markdown: mean ± sd over corpora per column."""

    def cell(values: tuple[float, ...]) -> str:
        spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
        return f"{statistics.mean(values):.3f}{spread}"

    lines = ["| method | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for method, runs in rows.items():
        lines.append(f"| {method} | " + " | ".join(cell(c) for c in zip(*runs, strict=True)) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI."""
    parser = argparse.ArgumentParser(prog="python benchmarks/erm_retrieval/scripts/experiment.py")
    parser.add_argument("--seeds", type=int, nargs="+", default=[2026, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--retriever", default="bm25", choices=RETRIEVERS)
    parser.add_argument("--expander", default="thesaurus", choices=EXPANDERS[:2])
    parser.add_argument("--radius", type=float, default=0.25)
    args = parser.parse_args(argv)
    print(table(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
