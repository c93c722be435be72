"""CORRECT's chance row: the strongest no-reasoning attacker, measured, and the README table.

`measure` trains every attacker of `ATTACKERS` on the shipped train split and scores it with
docket's `localisation_value` on the shipped test split and on a fresh private split
(`generated.generate_split`'s trajectories from another seed);
`benchmarks/correct/scripts/chance.py` writes the result to `RESULTS` and `render` turns that
file into the README's attacker table (a test checks that the README holds it). The chance row
is the attacker with the highest exact-step accuracy (the headline) on the shipped test split.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from docket.benchmarks.correct.simulator.records import Trajectory
from docket.core.results_tables import GeneratedTable, chance_entry, score_pairs_table

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "attackers.json"
README = HERE / "README.md"
#: The README block `render` fills, and the results file it is generated from.
TABLE = GeneratedTable(RESULTS, README, "attackers")
#: The fresh split `measure` scores by default (its seed and size).
FRESH_SEED = 20261207
FRESH_SIZE = 1200

#: attacker -> (README label, what it reads)
ATTACKERS: dict[str, tuple[str, str]] = {
    "first_step": ("blame step 0 (`correct_first_step`)", "nothing"),
    "keyword": ("keyword rule (`baselines.KeywordRule`)", "phrases"),
    "tfidf": ("TF-IDF surface baseline (`-T method=surface_baseline`)", "words, positions"),
    "surface": (
        "learned surface attacker (`attack.SurfaceAttacker`, 100 rounds)",
        "positions, agents, templates, number identity",
    ),
    "stacked": (
        "stacked attacker (`attack.StackedAttacker`: TF-IDF scores cross-fitted into the "
        "surface attacker, 100 rounds)",
        "all of the above",
    ),
    "shape_knn": (
        "shape neighbours (`shapes.ShapeNeighbour`: kNN over masked agent:template sequences)",
        "agents, masked templates, positions",
    ),
}

Predict = Callable[[Sequence[Trajectory]], list[tuple[str, int]]]


def _steps(t: Trajectory) -> list[tuple[str, str]]:
    return [(s.name, s.content) for s in t.history]


def attackers(train: Sequence[Trajectory]) -> dict[str, Predict]:
    """Every attacker of `ATTACKERS`, fitted on `train`, as a batch predictor."""
    from docket.benchmarks.correct.attack import StackedAttacker, SurfaceAttacker
    from docket.benchmarks.correct.shapes import ShapeNeighbour
    from docket.benchmarks.correct.simulator.baselines import KeywordRule, SurfaceBaseline

    conversations, labels = [_steps(t) for t in train], [t.mistake_step for t in train]
    tfidf = SurfaceBaseline().fit(conversations, labels)
    keyword = KeywordRule().fit(conversations, labels)

    def by_step(rule: Callable[[list[tuple[str, str]]], int]) -> Predict:
        def predict(test: Sequence[Trajectory]) -> list[tuple[str, int]]:
            steps = [rule(_steps(t)) for t in test]
            return [(t.history[s].name, s) for t, s in zip(test, steps, strict=True)]

        return predict

    return {
        "first_step": by_step(lambda steps: 0),
        "keyword": by_step(keyword.predict),
        "tfidf": by_step(tfidf.predict),
        "surface": SurfaceAttacker(max_iter=100).fit(train).predict_all,
        "stacked": StackedAttacker(max_iter=100).fit(train).predict_all,
        "shape_knn": ShapeNeighbour().fit(train).predict_all,
    }


def score(predict: Predict, test: Sequence[Trajectory]) -> dict[str, float]:
    """Exact step, agent and joint accuracy (docket's `localisation_value`), rounded, and n."""
    from docket.benchmarks.correct.attack import evaluate

    scored = evaluate(predict(test), test)
    return {k: round(v, 3) for k, v in scored.items()}


def measure(
    fresh: Sequence[Trajectory] | None = None, fresh_seed: int = FRESH_SEED
) -> dict[str, Any]:
    """Train on the shipped train split; score on the shipped test split and a fresh split.

    Args:
        fresh: The fresh split (default: `FRESH_SIZE` trajectories generated from `fresh_seed`
            with `generated`'s rule: no question of the shipped file).
        fresh_seed: The fresh split's seed (recorded).

    Returns:
        `splits` -> attacker -> step / agent / joint / n, the oracle and the settings.
    """
    from docket.benchmarks.correct.dataset import load_trajectories, select
    from docket.benchmarks.correct.simulator.generate import generate_split, question_key

    everything = load_trajectories()
    train, test = select(everything, "train"), select(everything, "test")
    if fresh is None:
        taken = frozenset(question_key(t.question) for t in everything)
        fresh = generate_split(FRESH_SIZE, fresh_seed, split="test", taken=taken)
    fitted = attackers(train)
    splits = {
        name: {key: score(predict, part) for key, predict in fitted.items()}
        for name, part in (("shipped", test), ("fresh", fresh))
    }
    return {
        "train": len(train),
        "fresh": {"seed": fresh_seed, "size": len(fresh)},
        "splits": splits,
    }


def chance(results: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """The chance row: the attacker with the highest shipped exact-step accuracy (agent breaks
    ties)."""
    shipped = results["splits"]["shipped"]
    name = max(
        (k for k in ATTACKERS if k in shipped),
        key=lambda k: (shipped[k]["step"], shipped[k]["agent"]),
    )
    return name, shipped[name]


def render(results: dict[str, Any]) -> str:
    """The README's attacker table (Markdown) from a results file's content."""
    best, _ = chance(results)
    shipped, fresh = results["splits"]["shipped"], results["splits"]["fresh"]
    lines = [
        f"Trained on the {results['train']} shipped train trajectories; scored on the shipped "
        f"test split ({int(shipped['first_step']['n'])} trajectories) and a fresh split "
        f"({int(fresh['first_step']['n'])} trajectories, seed {results['fresh']['seed']}). "
        "Exact step accuracy (the headline) and agent accuracy.",
        "",
    ]
    rows = [
        (
            label + (" (**chance row**)" if key == best else ""),
            reads,
            [shipped[key][m] for m in ("step", "agent")],
            [fresh[key][m] for m in ("step", "agent")],
        )
        for key, (label, reads) in ATTACKERS.items()
        if key in shipped
    ]
    lines += score_pairs_table(
        ("attacker", "reads", "shipped step / agent", "fresh step / agent"),
        [*rows, ("oracle (`correct_oracle`)", "labels", [1.0, 1.0], [1.0, 1.0])],
    )
    return "\n".join(lines)


def chance_metadata() -> dict[str, Any]:
    """Task metadata `chance`: the committed chance row on the headline (exact step accuracy
    on the shipped test split), for the leaderboard's line."""
    return chance_entry(RESULTS, _on_headline)


def _on_headline(results: dict[str, Any]) -> tuple[str, float]:
    name, row = chance(results)
    return name, row["step"]
