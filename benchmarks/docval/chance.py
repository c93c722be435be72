"""DocVAL's chance row: the strongest blind attacker, measured, and the README table built from it.

`measure` trains every attacker on a generated split in the train wording and scores it with the
task's ANLS and mAP on the shipped test split and on a fresh split (another seed, test wording);
`benchmarks/docval/scripts/blind_attackers.py` writes the result to `RESULTS`, and `render`
turns that file into the README's attacker table (a test checks that the README holds it).
The chance row is the blind attacker (one that never reads the question's content) with the
highest mAP (the headline) on the shipped split; the field prior counts among them (what
always answering the best-placed field gives, located perfectly).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from docket.benchmarks.docval.generate import (
    DIFFICULTY,
    SHIPPED_DOCS,
    SHIPPED_QUESTIONS,
    candidate_questions,
    make_document,
)
from docket.benchmarks.docval.layouts import DOC_TYPES
from docket.benchmarks.docval.scorer import anls, map_fraction
from docket.core.results_tables import GeneratedTable, chance_entry, score_pairs_table
from docket.methods.distill.boxes import iou

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "blind_attackers.json"
README = HERE / "README.md"
#: The README block `render` fills, and the results file it is generated from.
TABLE = GeneratedTable(RESULTS, README, "attackers")

#: The seeds `measure` uses by default: training data (train wording) and the fresh test split.
TRAIN_SEED = 12345
FRESH_SEED = 20261207
SHIPPED_SEED = 0

#: attacker -> (README label, reads, blind: may it set the chance row)
ATTACKERS: dict[str, tuple[str, str, bool]] = {
    "layout": ("`LayoutTagger(view='none')`: question-blind layout tagger", "page only", True),
    "first_word": (
        "`LayoutTagger(view='first_word')`: layout + the question's first word",
        "page, first word",
        True,
    ),
    "neighbour_none": (
        "`NeighbourBox(view='none')`: kNN box transfer over the page's layout summary",
        "page only",
        True,
    ),
    "neighbour_first_word": (
        "`NeighbourBox(view='first_word')`: the same + the question's first word",
        "page, first word",
        True,
    ),
    "neighbour": (
        "`NeighbourBox(view='function_words')`: the same + the question's function words",
        "page, function words",
        True,
    ),
    "field_prior": (
        "field prior: the training split's best field per document type, its gold answer and "
        "box (a perfect locator of one field)",
        "page only (gold field)",
        True,
    ),
    "keyword": ("`keyword_rule`: rest of the line after the best keyword match", "question", False),
    "tagger": (
        "`SurfaceTagger`: gradient boosting over question words and layout",
        "question",
        False,
    ),
}


def split(seed: int, docs: int, family: str) -> list[dict[str, Any]]:
    """Records of a generated split (documents cycle through types and difficulties)."""
    levels = list(DIFFICULTY)
    return [
        make_document(
            seed, i, levels[(i // len(DOC_TYPES)) % len(levels)], SHIPPED_QUESTIONS, family
        )[0]
        for i in range(docs)
    ]


def field_candidates(seed: int, docs: int, family: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(doc type, every candidate question) per document of a generated split."""
    levels = list(DIFFICULTY)
    return [
        (
            DOC_TYPES[i % len(DOC_TYPES)],
            candidate_questions(seed, i, levels[(i // len(DOC_TYPES)) % len(levels)], family),
        )
        for i in range(docs)
    ]


def _field_score(answer: dict[str, Any], question: dict[str, Any]) -> tuple[float, float]:
    return (
        anls(answer["answers"][0], question["answers"]),
        map_fraction(iou(answer["bbox"], question["bbox"])),
    )


def field_prior(
    train: list[tuple[str, list[dict[str, Any]]]], docs: list[dict[str, Any]], seed: int
) -> dict[str, float]:
    """Always answer one field per document type (the one best on `train`), exactly.

    Args:
        train: (doc type, every candidate question) per training document.
        docs: The scored split's records (generated from `seed`, documents in order).
        seed: The scored split's seed (to rebuild each document's every field).

    Returns:
        `{"anls", "map", "n"}` over the scored split's questions.
    """
    totals: dict[tuple[str, str], list[float]] = defaultdict(list)
    for doc_type, candidates in train:
        by_field = {c["field"]: c for c in candidates}
        for asked in candidates:
            for field, answer in by_field.items():
                totals[(doc_type, field)].append(_field_score(answer, asked)[1])
    best = {
        t: max((f for (d, f) in totals if d == t), key=lambda f: np.mean(totals[(t, f)]))
        for t in DOC_TYPES
    }
    scores = []
    for i, doc in enumerate(docs):
        fields = {c["field"]: c for c in candidate_questions(seed, i, doc["difficulty"])}
        answer = fields[best[doc["doc_type"]]]
        scores += [_field_score(answer, q) for q in doc["questions"]]
    values = np.asarray(scores)
    return {"anls": float(values[:, 0].mean()), "map": float(values[:, 1].mean()), "n": len(scores)}


def measure(
    train_docs: int = 200,
    fresh_docs: int = SHIPPED_DOCS,
    shipped: list[dict[str, Any]] | None = None,
    train_seed: int = TRAIN_SEED,
    fresh_seed: int = FRESH_SEED,
) -> dict[str, Any]:
    """Train every attacker on a train-wording split and score it on the shipped and a fresh split.

    Args:
        train_docs: Documents in the generated training split (train wording).
        fresh_docs: Documents in the fresh test split (test wording, `fresh_seed`).
        shipped: The shipped split's records (default: loaded).
        train_seed: The training split's seed.
        fresh_seed: The fresh split's seed.

    Returns:
        The results (`splits` -> attacker -> ANLS / mAP / n, and the settings).
    """
    from docket.benchmarks.docval.attack import SurfaceTagger, evaluate, keyword_rule
    from docket.benchmarks.docval.blind import LayoutTagger, NeighbourBox
    from docket.benchmarks.docval.dataset import SHIPPED, load_documents

    train = split(train_seed, train_docs, "train")
    train_fields = field_candidates(train_seed, train_docs, "train")
    attackers = {
        "layout": LayoutTagger("none").fit(train),
        "first_word": LayoutTagger("first_word").fit(train),
        "neighbour_none": NeighbourBox("none").fit(train),
        "neighbour_first_word": NeighbourBox("first_word").fit(train),
        "neighbour": NeighbourBox("function_words").fit(train),
        "keyword": keyword_rule,
        "tagger": SurfaceTagger().fit(train),
    }
    splits = {
        "shipped": (shipped if shipped is not None else load_documents(SHIPPED), SHIPPED_SEED),
        "fresh": (split(fresh_seed, fresh_docs, "test"), fresh_seed),
    }
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, (docs, seed) in splits.items():
        row = {key: evaluate(attacker, docs) for key, attacker in attackers.items()}  # type: ignore[arg-type]
        row["field_prior"] = field_prior(train_fields, docs, seed)
        results[name] = {k: {m: round(v, 3) for m, v in s.items()} for k, s in row.items()}
    return {
        "train": {"seed": train_seed, "docs": train_docs, "family": "train"},
        "fresh": {"seed": fresh_seed, "docs": fresh_docs, "family": "test"},
        "splits": results,
    }


def chance(results: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """The chance row: the blind attacker with the highest shipped-split mAP (ANLS breaks ties)."""
    shipped = results["splits"]["shipped"]
    name = max(
        (k for k, (_, _, blind) in ATTACKERS.items() if blind and k in shipped),
        key=lambda k: (shipped[k]["map"], shipped[k]["anls"]),
    )
    return name, shipped[name]


def render(results: dict[str, Any]) -> str:
    """The README's attacker table (Markdown) from a results file's content."""
    best, _ = chance(results)
    shipped, fresh = results["splits"]["shipped"], results["splits"]["fresh"]
    train = results["train"]
    lines = [
        f"Trained on {train['docs']} generated documents in the train wording (seed "
        f"{train['seed']}); scored on the shipped split ({shipped['layout']['n']} questions) and "
        f"a fresh split ({fresh['layout']['n']} questions, seed {results['fresh']['seed']}).",
        "",
    ]
    rows = [
        (
            label + (" (**chance row**)" if key == best else ""),
            reads,
            [shipped[key][m] for m in ("anls", "map")],
            [fresh[key][m] for m in ("anls", "map")],
        )
        for key, (label, reads, _) in ATTACKERS.items()
        if key in shipped
    ]
    lines += score_pairs_table(
        ("attacker", "reads", "shipped ANLS / mAP", "fresh ANLS / mAP"),
        [*rows, ("`docval_oracle`", "gold", [1.0, 1.0], [1.0, 1.0])],
    )
    return "\n".join(lines)


def chance_metadata() -> dict[str, Any]:
    """Task metadata `chance`: the committed chance row on the headline (mAP), for the
    leaderboard's line (measured in layout_text on the shipped split)."""
    return chance_entry(RESULTS, _on_headline)


def _on_headline(results: dict[str, Any]) -> tuple[str, float]:
    name, row = chance(results)
    return name, row["map"]
