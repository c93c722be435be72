"""`docket/erm_retrieval` and `docket/erm_rag` end to end (BM25; the scripted models)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docket.benchmarks.erm_retrieval.erm_retrieval import erm_rag, erm_retrieval
from inspect_ai import eval as inspect_eval
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "beir_tiny"


def _run(
    tmp_path: Path, task: Any, policy: str = "refuse", roles: Any = None, **args: Any
) -> EvalLog:
    model = get_model("docket/scripted", policy=policy, memoize=False, **args)
    [log] = inspect_eval(
        task, model=model, model_roles=roles, log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    return log


def _metric(log: EvalLog, score: str, name: str = "mean") -> float:
    assert log.results is not None
    return next(s for s in log.results.scores if s.name == score).metrics[name].value


@pytest.fixture(scope="module")
def ndcg(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """Held-out nDCG@10 of each method on the shipped corpus (BM25, thesaurus expander)."""
    out = {}
    for method in ("static", "query_expansion", "doc2query", "erm", "random"):
        log = _run(tmp_path_factory.mktemp(method), erm_retrieval(method=method))
        out[method] = _metric(log, "ndcg_10")
        out[f"{method}/seen"] = _metric(log, "ndcg_10", "docket/seen/True") if False else 0.0
    return out


def test_erm_beats_the_static_index_and_random_is_near_chance(ndcg: dict[str, float]) -> None:
    assert ndcg["erm"] > ndcg["static"] + 0.1
    assert ndcg["random"] < 0.05
    assert ndcg["query_expansion"] > ndcg["static"]


def test_the_model_expander_matches_the_thesaurus_expander(tmp_path: Path) -> None:
    roles = {"expander": get_model("docket/scripted", policy="erm_expander")}
    by_model = _run(tmp_path, erm_retrieval(method="erm", expander="model"), roles=roles)
    by_rules = _run(tmp_path, erm_retrieval(method="erm"))
    assert _metric(by_model, "ndcg_10") == pytest.approx(_metric(by_rules, "ndcg_10"))


def test_a_beir_folder_with_prf_expansion(tmp_path: Path) -> None:
    task = erm_retrieval(data=str(FIXTURE), feedback_split="train", expander="prf", k=2)
    log = _run(tmp_path, task)
    assert log.samples and len(log.samples) == 5
    assert 0 < _metric(log, "ndcg_10") <= 1


def test_rag_first_passage_reader_scores_the_share_of_right_top_passages(tmp_path: Path) -> None:
    log = _run(tmp_path, erm_rag(method="erm"), "erm_reader")
    assert log.samples
    top_right = [s.scores["answer_scorer"].value == "C" for s in log.samples]
    assert _metric(log, "answer_scorer", "accuracy") == pytest.approx(
        sum(top_right) / len(top_right)
    )
    constant = _run(tmp_path, erm_rag(method="erm"), "erm_reader", mode="constant")
    assert _metric(constant, "answer_scorer", "accuracy") < 0.02
    refuse = _run(tmp_path, erm_rag(method="static"), "refuse")
    assert _metric(refuse, "answer_scorer", "accuracy") == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"method": "nope"}, "-T method='nope' is not accepted"),
        ({"data": "/nonexistent"}, "not a folder"),
        ({"data": str(FIXTURE)}, "needs -T thesaurus=FILE"),
        ({"method": "doc2query", "expander": "prf"}, "doc2query needs expander=thesaurus"),
        ({"eta": 0}, "-T eta=0.0 must be in"),
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
