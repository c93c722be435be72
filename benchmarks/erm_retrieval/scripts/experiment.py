"""The README's method comparison: every method on several generated corpora, mean ± sd.

Each corpus comes from `generate` with its own seed (2026 is the shipped one); each method is
built by `engine.build_engine`, what the task's solver runs, and scored on the held-out queries
with trec_eval. Metrics: nDCG@10, Recall@20, and nDCG@10 on seen and unseen documents.

    python benchmarks/erm_retrieval/scripts/experiment.py --readme   # results/methods.json + README
    python benchmarks/erm_retrieval/scripts/experiment.py --render   # README from the JSON only
    python benchmarks/erm_retrieval/scripts/experiment.py --retriever dense   # print a table

`--readme` measures the README's settings (`SETTINGS`: BM25 with the thesaurus expander, every
method; BM25 with PRF, the two methods that expand) on the default seeds, writes
`results/methods.json` and regenerates the README block between `<!-- methods:start -->` and
`<!-- methods:end -->` from it; a test checks that the two agree and that the shipped corpus's
rows are reproduced.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from docket.benchmarks.erm_retrieval.dataset import BeirData, load_beir
from docket.benchmarks.erm_retrieval.engine import (
    EXPANDERS,
    METHODS,
    RETRIEVERS,
    Setup,
    build_engine,
)
from docket.benchmarks.erm_retrieval.generate import generate
from docket.core.results_tables import replace_table, write_results
from docket.methods.retrieval.erm import ERMConfig
from docket.methods.retrieval.metrics import evaluate

COLUMNS = ("nDCG@10", "Recall@20", "nDCG@10 seen", "nDCG@10 unseen")
HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "methods.json"
README = HERE / "README.md"
TABLE = "methods"
#: The corpora of the README's table: the shipped one (2026) and two more from the generator.
SEEDS = (2026, 1, 2)
#: The README's settings: (retriever, expander, methods).
SETTINGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("bm25", "thesaurus", ("static", "query_expansion", "doc2query", "erm", "random")),
    ("bm25", "prf", ("query_expansion", "erm")),
)
LABELS = {
    "static": "static index",
    "query_expansion": "query-time expansion",
    "doc2query": "doc2query (3 per document)",
    "erm": "ERM",
    "random": "random ranking (chance reference)",
}


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


async def corpus_rows(
    seed: int, retriever: str, expander: str, methods: tuple[str, ...], radius: float = 0.25
) -> dict[str, tuple[float, ...]]:
    """The four columns of each method on the corpus generated with `seed`.

    Args:
        seed: The generator's seed (2026: the shipped corpus).
        retriever: `bm25` or `dense`.
        expander: `thesaurus` or `prf`.
        methods: The methods to measure.
        radius: ERM's norm bound (the task's default).

    Returns:
        Method -> (nDCG@10, Recall@20, nDCG@10 seen, nDCG@10 unseen).
    """
    out: dict[str, tuple[float, ...]] = {}
    with tempfile.TemporaryDirectory() as folder:
        generate(Path(folder), seed=seed)
        data = load_beir(folder)
        thesaurus = str(Path(folder) / "thesaurus.json")
        for method in methods:
            setup = Setup(method, retriever, expander, thesaurus, ERMConfig(radius=radius))
            out[method] = await measure(data, setup)
            print(seed, expander, method, [round(x, 3) for x in out[method]], flush=True)
    return out


async def run(args: argparse.Namespace) -> dict[str, list[tuple[float, ...]]]:
    """Rows per method, one per corpus."""
    out: dict[str, list[tuple[float, ...]]] = {}
    for seed in args.seeds:
        rows = await corpus_rows(
            seed, args.retriever, args.expander, tuple(args.methods), args.radius
        )
        for method, row in rows.items():
            out.setdefault(method, []).append(row)
    return out


def measure_settings(seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """What `results/methods.json` holds: every setting of `SETTINGS` on every corpus.

    Args:
        seeds: The corpora's generator seeds.

    Returns:
        `{"seeds", "columns", "settings": [{"retriever", "expander", "rows": {method: [[4
        values] per seed]}}]}`, values rounded to 6 decimals.
    """
    settings = []
    for retriever, expander, methods in SETTINGS:
        rows: dict[str, list[list[float]]] = {m: [] for m in methods}
        for seed in seeds:
            measured = asyncio.run(corpus_rows(seed, retriever, expander, methods))
            for method, row in measured.items():
                rows[method].append([round(v, 6) for v in row])
        settings.append({"retriever": retriever, "expander": expander, "rows": rows})
    return {"seeds": list(seeds), "columns": list(COLUMNS), "settings": settings}


def render_table(results: dict[str, Any]) -> str:
    """The README block: one row per (setting, method), mean ± sd over the corpora."""
    first, *others = results["seeds"]
    seeds = ", ".join([f"{first} (shipped)", *(str(s) for s in others)])
    lines = [
        f"Held-out queries, mean ± sd over the corpora of seeds {seeds}; BM25, default knobs.",
        "",
        "| method | expander | " + " | ".join(results["columns"]) + " |",
        "|---|---|" + "---|" * len(results["columns"]),
    ]
    for setting in results["settings"]:
        for method, runs in setting["rows"].items():
            uses = method in ("query_expansion", "doc2query", "erm")
            cells = " | ".join(_cell(tuple(c)) for c in zip(*runs, strict=True))
            expander = setting["expander"] if uses else "–"
            lines.append(f"| {LABELS[method]} | {expander} | {cells} |")
    return "\n".join(lines)


def _cell(values: tuple[float, ...]) -> str:
    spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.3f}{spread}"


def table(rows: dict[str, list[tuple[float, ...]]]) -> str:
    """Markdown: mean ± sd over corpora per column."""

    lines = ["| method | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for method, runs in rows.items():
        lines.append(
            f"| {method} | " + " | ".join(_cell(c) for c in zip(*runs, strict=True)) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI."""
    parser = argparse.ArgumentParser(prog="python benchmarks/erm_retrieval/scripts/experiment.py")
    parser.add_argument("--readme", action="store_true", help="write results/methods.json + README")
    parser.add_argument("--render", action="store_true", help="only re-render the README block")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--retriever", default="bm25", choices=RETRIEVERS)
    parser.add_argument("--expander", default="thesaurus", choices=EXPANDERS[:2])
    parser.add_argument("--radius", type=float, default=0.25)
    args = parser.parse_args(argv)
    if args.readme:
        write_results(RESULTS, measure_settings(tuple(args.seeds)))
    if args.readme or args.render:
        replace_table(README, TABLE, render_table(json.loads(RESULTS.read_text(encoding="utf-8"))))
        return 0
    print(table(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
