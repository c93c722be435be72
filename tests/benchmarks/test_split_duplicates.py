"""Issue #53 item 5: no test split holds an exact duplicate after normalisation.

For every benchmark with shipped or generated data, the test split's items become keys
(`docket.core.duplicates`: case and whitespace folded, digits masked where a benchmark's
templates repeat with only their numbers changed, distractors stripped where the generator adds
them) and no key may repeat within the test split or appear in a split that a model or an
attacker may see: train, pretraining, few-shot demos, the attackers' training splits and, for
generated splits, the public shipped data. Each benchmark's normalisation is chosen and justified
by its case below. erm_retrieval is checked by its own tests.

The generators are checked too: `docket generate BENCHMARK` with a fresh secret writes a split
with no duplicate, within it or of anything public.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path

import pytest
from PIL import Image

from docket.benchmarks.context_qa.dataset import Question
from docket.benchmarks.scsuff.dataset import Item
from docket.benchmarks.spatial_relations.dataset import Scene
from docket.benchmarks.tabular_anomaly.dataset import Split, row_key
from docket.core.duplicates import duplicate_report, text_key
from docket.methods.anomaly.serialize import Column
from tests.benchmarks.generated import generate

#: One check: what it covers, the test split's keys, the keys of every split seen beside it.
Check = tuple[str, Sequence[Hashable], Sequence[Hashable]]

SECRET = "split-duplicates secret"


# --- shipped splits ---------------------------------------------------------------------------


def _scsuff_passage(passage: str) -> str:
    # The feature-rule passages are generated from 5 binary features and a rule of 1-2 of
    # them (1 600 items in all), so seeded draws repeat: the key is the whole passage a model
    # reads (no number in it to mask).
    return text_key(passage)


def _scsuff_seen(items: Iterable[Item]) -> list[Hashable]:
    from docket.benchmarks.scsuff.attackers import train_items
    from docket.benchmarks.scsuff.dataset import few_shot_demos, render

    test = list(items)
    seen: list[Hashable] = [_scsuff_passage(render(i)) for i in train_items(test)]
    # -T few_shot=K puts K demos drawn apart from the items before each question
    demos = few_shot_demos("feature_rule", 8, 42, exclude=test)
    return seen + [_scsuff_passage(passage) for passage, _ in demos]


def scsuff() -> list[Check]:
    from docket.benchmarks.scsuff.dataset import (
        FORMATS,
        feature_rule_items,
        few_shot_demos,
        format_items,
        render,
    )

    items = feature_rule_items(100, 42)  # the tasks' default split
    checks: list[Check] = [
        ("feature_rule", [_scsuff_passage(render(i)) for i in items], _scsuff_seen(items))
    ]
    demos = [_scsuff_passage(passage) for passage, _ in few_shot_demos("mmlu", 5, 42)]
    for name in FORMATS:  # the shipped MMLU/SNLI/IMDB/BBQ-format files and their demos
        checks.append((name, [_scsuff_passage(render(i)) for i in format_items(name)], demos))
    return checks


def _correct_key(question: str) -> str:
    # CORRECT's questions are a template question among generated irrelevant sentences:
    # `question_key` strips them (the generator's own key). Digits stay: two questions that
    # differ only in their numbers have different answers and different trajectories.
    from docket.benchmarks.correct.simulator.generate import question_key

    return text_key(question_key(question))


def correct() -> list[Check]:
    from docket.benchmarks.correct.dataset import load_trajectories, select

    shipped = load_trajectories()
    test = [_correct_key(t.question) for t in select(shipped, "test")]
    return [("test vs train", test, [_correct_key(t.question) for t in select(shipped, "train")])]


def _docval_keys(docs: list[dict[str, object]]) -> list[Hashable]:
    # A DocVAL item is a (page, question). Pages of one template differ in their printed
    # numbers, and a question whose answer is a name asks the same thing whatever they are, so
    # the page's words are compared with digits masked; the answer stays unmasked in the key,
    # so two pages that differ only in the number asked for are different items.
    keys: list[Hashable] = []
    for doc in docs:
        words = doc["words"]
        assert isinstance(words, list)
        page = text_key(" ".join(str(w[0]) for w in words), mask_digits=True)
        questions = doc["questions"]
        assert isinstance(questions, list)
        for q in questions:
            keys.append((page, text_key(q["question"]), text_key(q["answers"][0])))
    return keys


@functools.cache
def _docval_train() -> tuple[Hashable, ...]:
    from docket.benchmarks.docval.chance import TRAIN_SEED, split

    return tuple(_docval_keys(split(TRAIN_SEED, 200, "train")))  # the blind attackers' split


def docval() -> list[Check]:
    from docket.benchmarks.docval.dataset import load_documents

    return [("test vs train", _docval_keys(load_documents()), _docval_train())]


def _context_qa_keys(contexts: dict[str, str], questions: Iterable[Question]) -> list[Hashable]:
    # A context is facts stated in a shuffled order, so the key holds its sentences sorted
    # (the same facts in another order are the same context); the question is a template
    # per attribute and name and stays as it is. No numbers.
    keys: list[Hashable] = []
    for q in questions:
        text = contexts[q.context_id]
        sentences = tuple(sorted(text_key(s) for s in text.split(". ")))
        keys.append((sentences, text_key(q.question)))
    return keys


def context_qa() -> list[Check]:
    from docket.benchmarks.context_qa.attacks import ATTACK_CONTEXTS, ATTACK_SEED
    from docket.benchmarks.context_qa.dataset import generate, load

    contexts, questions = load()
    seen: list[Hashable] = []
    # the attacker's corpus and SHINE's default training corpus (seed 0), every fact asked
    for corpus, seen_questions in (
        generate(ATTACK_CONTEXTS, ATTACK_SEED, per_context=8, prefix="attack"),
        generate(3000, 1000, per_context=8),
    ):
        seen += _context_qa_keys({c.id: c.text for c in corpus}, seen_questions)
    return [("test vs attack and SHINE corpora", _context_qa_keys(contexts, questions), seen)]


def toy_math() -> list[Check]:
    # A problem is a template filled with its numbers, and the numbers are the problem (the
    # answer changes with them): no digit is masked.
    from docket.benchmarks.toy_math.dataset import split_chains
    from docket.benchmarks.toy_math.reference import question

    test = [text_key(question(c)) for c in split_chains("test", 200)]
    seen = [text_key(question(c)) for c in split_chains("train", 1000)]
    seen += [text_key(question(c)) for c in split_chains("pretrain", 5000)]
    return [("test vs train and pretrain", test, seen)]


def rl_arith() -> list[Check]:
    # `347+8=`: the numbers are the problem, no digit is masked.
    import random

    from docket.benchmarks.rl_arith.attacks import shipped, train_problems
    from docket.methods.rl.tasks.arith import ArithFamily

    test = shipped()
    family, rng = ArithFamily(), random.Random(0)
    runner = [family.train_problem(rng) for _ in range(5000)]  # the RL runner's draws
    seen = [text_key(p["prompt"]) for p in [*train_problems(test), *runner]]
    return [("test vs train", [text_key(p["prompt"]) for p in test], seen)]


def rl_constraints() -> list[Check]:
    # `len=4 start=b no=e >`: the length is a constraint, no digit is masked.
    from docket.benchmarks.rl_constraints.attacks import shipped, train_problems

    test = [text_key(p["prompt"]) for p in shipped()]
    return [("test vs train", test, [text_key(p["prompt"]) for p in train_problems()])]


def _view(question: str, pixels: bytes) -> Hashable:
    # The question names two colours and a relation out of a few dozen combinations, so it
    # repeats by design; an item is the question with the view it is asked about, compared as
    # the rendered image's pixels (two scenes that render alike are one item).
    return (text_key(question), hashlib.sha256(pixels).hexdigest())


def _rendered(scenes: Iterable[Scene]) -> list[Hashable]:
    from docket.benchmarks.spatial_relations.render import draw

    return [_view(s.question, draw(list(s.objects), s.pose, 64).tobytes()) for s in scenes]


def _spatial_rows(folder: Path) -> list[Hashable]:
    from docket.benchmarks.spatial_relations.dataset import load

    keys: list[Hashable] = []
    for row in load(folder):
        with Image.open(row.image) as image:
            keys.append(_view(row.question, image.tobytes()))
    return keys


def _spatial_seen() -> list[Hashable]:
    from docket.benchmarks.spatial_relations.attacks import ATTACK_SEED, ATTACK_TRAIN_SIZE
    from docket.benchmarks.spatial_relations.dataset import evaluation_split, generate

    train = evaluation_split(ATTACK_TRAIN_SIZE, ATTACK_SEED)  # the surface booster's
    affin = generate(4000, 5000)  # train_affin.py's default scenes of seed 0
    return _rendered(train) + _rendered(affin)


def spatial_relations() -> list[Check]:
    from docket.benchmarks.spatial_relations.dataset import DATA

    return [("test vs attack and AFFIN training scenes", _spatial_rows(DATA), _spatial_seen())]


def _table_checks(parts: Iterable[tuple[str, list[Column], Split]]) -> list[Check]:
    # A row is compared as the detectors' language models read it (`row_key`: the columns in
    # order, numbers at their column's decimals). The learned attacker's fresh tables are not
    # a seen split here: it is fitted on five column-blind statistics of a row against its own
    # split (no row identity), and in `pyod_categorical`'s 256-row domain any two tables share
    # rows.
    checks: list[Check] = []
    for label, columns, part in parts:
        test: list[Hashable] = [row_key(r, columns) for r in part.test]
        checks.append((label, test, [row_key(r, columns) for r in part.train]))
    return checks


def tabular_anomaly() -> list[Check]:
    from docket.benchmarks.tabular_anomaly.dataset import LOADERS, split

    parts = []
    for name, load in LOADERS.items():
        table = load()
        parts += [(f"{name} seed {s}", table.columns, split(table, s)) for s in (0, 1, 2)]
    return _table_checks(parts)


def _fed_keys(texts: Iterable[str]) -> list[Hashable]:
    # A text is two topic words among shuffled filler words: word order carries nothing, so
    # the key is the sorted words (the same words in another order are the same text).
    return [" ".join(sorted(text_key(t).split())) for t in texts]


def fed_topics() -> list[Check]:
    from docket.benchmarks.fed_topics.dataset import partition

    checks: list[Check] = []
    for seed in (0, 1, 2):  # the task's default partition and the chance script's
        clients = partition(8, alpha=0.5, seed=seed)
        test = _fed_keys(e.text for c in clients for e in c.heldout)
        seen = _fed_keys(e.text for c in clients for e in c.train)  # federated: every client's
        checks.append((f"seed {seed}: held-out vs every client's train", test, seen))
    return checks


SHIPPED: dict[str, Callable[[], list[Check]]] = {
    "scsuff": scsuff,
    "correct": correct,
    "docval": docval,
    "context_qa": context_qa,
    "toy_math": toy_math,
    "rl_arith": rl_arith,
    "rl_constraints": rl_constraints,
    "spatial_relations": spatial_relations,
    "tabular_anomaly": tabular_anomaly,
    "fed_topics": fed_topics,
}


def _assert_no_duplicate(benchmark: str, checks: list[Check]) -> None:
    assert checks
    found = []
    for label, test, seen in checks:
        assert len(test) >= 5, f"{benchmark} {label}: only {len(test)} test items loaded"
        report = duplicate_report(test, seen)
        if report.total:
            found.append(f"{benchmark} {label}: {report}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("benchmark", sorted(SHIPPED))
def test_shipped_test_splits_hold_no_exact_duplicate(benchmark: str) -> None:
    _assert_no_duplicate(benchmark, SHIPPED[benchmark]())


# --- generated splits ---------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def generated_scsuff(out: Path) -> list[Check]:
    from docket.benchmarks.scsuff.dataset import feature_rule_items, render
    from docket.benchmarks.scsuff.splits import SPLIT_FILE, item_from_row

    items = [item_from_row(row) for row in _rows(out / SPLIT_FILE)]
    shipped = feature_rule_items(100, 42)
    seen = [_scsuff_passage(render(i)) for i in shipped] + _scsuff_seen(items)
    return [("generated", [_scsuff_passage(render(i)) for i in items], seen)]


def generated_correct(out: Path) -> list[Check]:
    from docket.benchmarks.correct.dataset import load_trajectories

    test = [_correct_key(t.question) for t in load_trajectories(str(out))]
    return [("generated", test, [_correct_key(t.question) for t in load_trajectories()])]


def generated_docval(out: Path) -> list[Check]:
    from docket.benchmarks.docval.dataset import load_documents
    from docket.benchmarks.docval.generate import SPLIT_STEM

    test = _docval_keys(load_documents(out / f"{SPLIT_STEM}.jsonl.gz"))
    seen = [*_docval_keys(load_documents()), *_docval_train()]
    return [("generated", test, seen)]


def generated_context_qa(out: Path) -> list[Check]:
    from docket.benchmarks.context_qa.dataset import load

    (_, public, seen) = context_qa()[0]
    return [("generated", _context_qa_keys(*load(out)), [*public, *seen])]


def generated_toy_math(out: Path) -> list[Check]:
    from docket.benchmarks.toy_math.dataset import load_split, public_chains
    from docket.benchmarks.toy_math.reference import question

    test = [text_key(question(c)) for c in load_split(out)]
    return [("generated", test, [text_key(question(c)) for c in public_chains()])]


def generated_rl_constraints(out: Path) -> list[Check]:
    from docket.benchmarks.rl_constraints.splits import SPLIT_FILE, public_prompts

    test = [text_key(str(row["prompt"])) for row in _rows(out / SPLIT_FILE)]
    # every instruction the public family can draw (the shipped split and the runner's train)
    return [("generated", test, [text_key(p) for p in public_prompts()])]


def generated_spatial_relations(out: Path) -> list[Check]:
    from docket.benchmarks.spatial_relations.dataset import DATA

    seen = _spatial_rows(DATA) + _spatial_seen()
    return [("generated", _spatial_rows(out), seen)]


def generated_tabular_anomaly(out: Path) -> list[Check]:
    from docket.benchmarks.tabular_anomaly.splits import SPLIT_FILE, load_splits

    # breast_cancer's and wine's rows are public (scikit-learn): only which rows train and
    # which are tested is private, so each stored split is checked on its own
    return _table_checks((s.id, list(s.columns), s.part) for s in load_splits(out / SPLIT_FILE))


def generated_fed_topics(out: Path) -> list[Check]:
    from docket.benchmarks.fed_topics.dataset import read_examples

    clients = sorted(out.glob("client-*"))
    assert clients
    test = _fed_keys(e.text for c in clients for e in read_examples(c / "heldout.jsonl"))
    seen = _fed_keys(e.text for c in clients for e in read_examples(c / "train.jsonl"))
    return [("generated: held-out vs every client's train", test, seen)]


#: benchmark -> (--size, the checks of the written split)
GENERATED: dict[str, tuple[int, Callable[[Path], list[Check]]]] = {
    "scsuff": (300, generated_scsuff),
    "correct": (40, generated_correct),
    "docval": (6, generated_docval),
    "context_qa": (200, generated_context_qa),
    "toy_math": (200, generated_toy_math),
    "rl_constraints": (200, generated_rl_constraints),
    "spatial_relations": (100, generated_spatial_relations),
    "tabular_anomaly": (2, generated_tabular_anomaly),
    "fed_topics": (32, generated_fed_topics),
}


@pytest.mark.parametrize("benchmark", sorted(GENERATED))
def test_generated_splits_hold_no_exact_duplicate(tmp_path: Path, benchmark: str) -> None:
    size, checks = GENERATED[benchmark]
    out = generate(tmp_path, benchmark, SECRET, "split", size)
    _assert_no_duplicate(benchmark, checks(out))


def test_the_check_finds_the_duplicates_the_old_scsuff_split_had() -> None:
    """The same check on the stream before deduplication: seed 42's first 100 draws repeat 3
    passages; the deduplicated split is the first 100 distinct passages of that stream."""
    import random

    from docket.benchmarks.scsuff.dataset import feature_item, feature_rule_items, render

    rng = random.Random(42)
    raw = [render(feature_item(i, rng)) for i in range(110)]
    report = duplicate_report([_scsuff_passage(passage) for passage in raw[:100]])
    assert (report.within, report.across) == (3, 0)
    items = feature_rule_items(100, 42)
    assert [render(i) for i in items] == list(dict.fromkeys(raw))[:100]
    assert [i.id for i in items] == [f"rule-{i:04d}" for i in range(100)]
