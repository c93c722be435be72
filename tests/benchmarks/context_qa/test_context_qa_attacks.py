"""docket/context_qa against no-reasoning attackers: exact scores on a hand-made case and on the
shipped set (the chance rows of the README), and a private split that the task names."""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from docket.benchmarks.context_qa import attacks
from docket.benchmarks.context_qa.dataset import DATA, Question, generate, load
from docket.cli import main
from docket.core.agreement import match_share
from docket.core.splits import MANIFEST, SPLIT_KEY, files_digest

TEXT = "Mira keeps a cat. Felix lives in Lima. Mira lives in Oslo. Felix keeps a cat."


def _question(question: str, answer: str, attribute: str) -> Question:
    return Question("q", "c", question, answer, attribute, -1)


def test_each_attacker_on_a_context_with_known_answers() -> None:
    assert attacks.relation_first(TEXT, "Where does Mira live?") == "Lima"  # Felix's city
    assert attacks.relation_first(TEXT, "Where does Felix live?") == "Lima"
    assert attacks.relation_first(TEXT, "Which animal does Felix keep?") == "cat"  # shared
    assert attacks.relation_first(TEXT, "How old is Felix?") == "unknown"
    assert [c.person for c in attacks.candidates(TEXT, "city")] == ["Felix", "Mira"]
    questions = [
        _question("Where does Mira live?", "Oslo", "city"),
        _question("Where does Felix live?", "Lima", "city"),
        _question("Which animal does Felix keep?", "cat", "pet"),
        _question("Which animal does Mira keep?", "cat", "pet"),
    ]
    answers = [attacks.relation_first(TEXT, q.question) for q in questions]
    gold = [q.answer for q in questions]
    assert match_share(answers, gold) == 0.75
    constant = attacks.best_constant(questions)
    assert constant["city"] == "Oslo" and constant["pet"] == "cat"  # tie: first listed value
    assert match_share([constant[q.attribute] for q in questions], gold) == 0.75


def test_chance_rows_on_the_shipped_set(tmp_path: Path) -> None:
    contexts, questions = load()
    constant, gold = attacks.best_constant(questions), [q.answer for q in questions]
    assert match_share([constant[q.attribute] for q in questions], gold) == 0.225
    assert match_share(attacks.surface_booster(contexts, questions), gold) == 0.6125
    log = inspect_eval(
        "docket/context_qa",
        model=get_model("docket/scripted", policy="context_qa_relation_first"),
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    metrics = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert metrics == {"f1": 0.6125, "exact": 0.6125}


def test_docket_generate_writes_a_private_split_the_task_names(tmp_path: Path) -> None:
    out = tmp_path / "private"
    assert main(["generate", "context_qa", "--seed", "s3cret", "--out", str(out)]) == 0
    contexts, questions = load(out)
    assert len(contexts) == 40 and len(questions) == 80
    assert not set(contexts.values()) & set(load()[0].values())
    sha256 = json.loads((out / MANIFEST).read_text())["sha256"]
    log = inspect_eval(
        "docket/context_qa",
        model=get_model("docket/scripted", policy="context_qa_reader"),
        task_args={"data": str(out)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success" and log.results is not None
    assert log.results.scores[0].metrics["mean"].value == 1.0
    assert (log.eval.metadata or {})[SPLIT_KEY] == {
        "sha256": sha256,
        "source": "generated",
        "name": "private",
    }
    shipped = inspect_eval(
        "docket/context_qa", model="docket/scripted", model_args={"policy": "refuse"},
        limit=1, log_dir=str(tmp_path), display="none",
    )[0]  # fmt: skip
    assert (shipped.eval.metadata or {})[SPLIT_KEY]["sha256"] == files_digest(DATA)
    assert (shipped.eval.metadata or {})[SPLIT_KEY]["source"] == "shipped"


def test_a_memory_of_names_stays_below_the_no_context_chance_row() -> None:
    """Item 6: the answer a freshly generated corpus gives each question most often (names and
    values recur across contexts) never reads the text; it stays below the 0.225 chance row.
    Item 5: the corpus shares no context with the shipped set."""
    contexts, questions = load()
    corpus, train = generate(attacks.MEMORY_CONTEXTS, attacks.ATTACK_SEED, per_context=8)
    assert not {c.text for c in corpus} & set(contexts.values())
    gold = [q.answer for q in questions]
    assert match_share(attacks.name_memory(questions, train), gold) == 0.1625
    # on a question it has seen in train with a known answer, it repeats that answer
    assert attacks.name_memory(train[:1], train[:1]) == [train[0].answer]
