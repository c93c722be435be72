"""`docket/erm_retrieval` and `docket/erm_rag` end to end (BM25; the scripted models)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from docket.core.inspect_private import PrerequisiteError
from tests.scores import sample_score

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "beir_tiny"


def _run(
    tmp_path: Path,
    task: Any,
    policy: str = "refuse",
    roles: Any = None,
    limit: int | None = None,
    **args: Any,
) -> EvalLog:
    model = get_model("docket/scripted", policy=policy, memoize=False, **args)
    [log] = inspect_eval(
        task, model=model, model_roles=roles, log_dir=str(tmp_path), display="none", limit=limit
    )
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str = "mean") -> float:
    assert log.results is not None
    return next(s for s in log.results.scores if s.name == score).metrics[name].value


LIMIT = 80  # the first 80 held-out queries keep the evals quick


@pytest.fixture(scope="module")
def ndcg(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """Held-out nDCG@10 (all, seen, unseen documents) by method (BM25, thesaurus expander)."""
    out = {}
    for method in ("static", "erm", "random"):
        log = _run(tmp_path_factory.mktemp(method), erm_retrieval(method=method), limit=LIMIT)
        for metric in ("mean", "grouped_seen", "grouped_unseen"):
            out[f"{method}/{metric}"] = _metric(log, "ndcg_10", metric)
    return out


def test_erm_beats_the_static_index_on_seen_documents_and_random_is_chance(
    ndcg: dict[str, float],
) -> None:
    # queries about documents that had feedback gain; the others pay (README: the trade-off)
    assert ndcg["erm/grouped_seen"] > ndcg["static/grouped_seen"] + 0.05
    assert ndcg["erm/mean"] > ndcg["static/mean"]
    assert ndcg["random/mean"] < 0.1


async def test_expansion_baselines_close_the_vocabulary_gap() -> None:
    """Query-time expansion and doc2query with the thesaurus, ranked without Inspect."""
    from docket.benchmarks.erm_retrieval.dataset import SHIPPED, load_beir
    from docket.benchmarks.erm_retrieval.engine import Setup, build_engine
    from docket.methods.retrieval.erm import ERMConfig
    from docket.methods.retrieval.metrics import evaluate

    data = load_beir()
    queries = data.heldout[:LIMIT]
    found = {}
    for method in ("static", "query_expansion", "doc2query"):
        setup = Setup(method, "bm25", "thesaurus", str(SHIPPED / "thesaurus.json"), ERMConfig())
        engine = await build_engine(data, setup, None)
        runs = {q.id: await engine.rank(q.text, 20) for q in queries}
        values = evaluate({q.id: q.relevant for q in queries}, runs, 20)
        found[method] = sum(v["ndcg_10"] for v in values.values()) / len(values)
    assert found["query_expansion"] > found["static"] + 0.3
    assert found["doc2query"] > found["static"] + 0.3


def test_the_model_expander_matches_the_thesaurus_expander(tmp_path: Path) -> None:
    roles = {"expander": get_model("docket/scripted", policy="erm_expander")}
    by_model = _run(tmp_path, erm_retrieval(method="erm", expander="model"), roles=roles, limit=20)
    by_rules = _run(tmp_path, erm_retrieval(method="erm"), limit=20)
    assert _metric(by_model, "ndcg_10") == pytest.approx(_metric(by_rules, "ndcg_10"))


def test_a_beir_folder_with_prf_expansion(tmp_path: Path) -> None:
    task = erm_retrieval(data=str(FIXTURE), expander="prf", k=2, config={"feedback_split": "train"})
    log = _run(tmp_path, task)
    assert log.samples and len(log.samples) == 5
    assert 0 < _metric(log, "ndcg_10") <= 1


def test_rag_first_passage_reader_scores_the_share_of_right_top_passages(tmp_path: Path) -> None:
    log = _run(tmp_path, erm_rag(method="erm"), "erm_reader", limit=LIMIT)
    assert log.samples
    top_right = [sample_score(s, "answer_scorer").value == "C" for s in log.samples]
    assert _metric(log, "answer_scorer", "accuracy") == pytest.approx(
        sum(top_right) / len(top_right)
    )
    constant = _run(tmp_path, erm_rag(method="erm"), "erm_reader", limit=LIMIT, mode="constant")
    assert _metric(constant, "answer_scorer", "accuracy") < 0.02
    refuse = _run(tmp_path, erm_rag(method="static"), "refuse", limit=10)
    assert _metric(refuse, "answer_scorer", "accuracy") == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"method": "nope"}, "-T method='nope' is not accepted"),
        ({"data": "/nonexistent", "expander": "prf"}, "not a folder"),
        ({"data": str(FIXTURE)}, "needs -T thesaurus=FILE"),
        ({"method": "doc2query", "expander": "prf"}, "doc2query needs expander=thesaurus"),
        ({"config": {"eta": 0}}, "-T config: eta: Input should be greater than or equal to"),
    ],
)
def test_bad_arguments_are_one_line(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PrerequisiteError) as error:
        erm_retrieval(**args)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_an_unbound_expander_role_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="'expander' model role is unbound"):
        inspect_eval(
            "docket/erm_retrieval",
            task_args={"expander": "model"},
            model=get_model("docket/scripted", policy="refuse"),
            log_dir=str(tmp_path),
            display="none",
        )
