"""The surface cues the learned attacker used on 3-A and 3-B are gone from the shipped 3-C split.

Each test checks one cue that `attack.SurfaceAttacker` exploited (found by ablation and by
comparing clean and faulty plans of the same family, see listing.yaml), on the shipped data or on
the replay of a clean and a faulty run of the same task. Each is a string property, so a reader
that does not reason could read the faulty step off it.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from docket.benchmarks.correct.dataset import load_trajectories
from docket.benchmarks.correct.simulator.checks import _ASIDE, _ITEM, _var_of
from docket.benchmarks.correct.simulator.generate import Verdict, confirm, sites_by_kind
from docket.benchmarks.correct.simulator.irrelevant import (
    FRAMES,
    irrelevant_sentences,
    with_irrelevant,
)
from docket.benchmarks.correct.simulator.simulator import (
    Fault,
    TaskSpec,
    Turn,
    irrelevant_tokens,
    run,
)
from docket.benchmarks.correct.simulator.tasks import make_task
from docket.benchmarks.correct.simulator.world import ATTRIBUTE_NAMES, REGIONS

_NUMBER = re.compile(r"\d+")
_REF = re.compile(r"\[([a-z][a-z0-9_]*)\]")
#: The four irrelevant-sentence templates of 3-B (a stripper built from them is the attack).
_OLD_TEMPLATES = re.compile(
    r"Unrelated to this question, \d+ other requests are waiting in the queue\.|"
    r"For context only, the \w+ team has handled \d+ similar questions this week\.|"
    r"Separately, the \w+ office filed \d+ reports last month, which do not matter here\.|"
    r"As background, the previous run took \d+ minutes\."
)


def _left_out(question: str, plan: str) -> int:
    return len(set(_NUMBER.findall(question)) - set(_NUMBER.findall(plan)))


def _plan_shape(question: str, plan: str) -> tuple[int, int, int]:
    """Numbered lines, numbers of the question the plan holds, numbers the question lacks."""
    numbers, asked = set(_NUMBER.findall(plan)), set(_NUMBER.findall(question))
    return len(_ITEM.findall(plan)), len(numbers & asked), len(numbers - asked)


def _plan_verdicts(kind: str, count: int) -> list[tuple[TaskSpec, Verdict]]:
    """(task, replay) of the first `count` confirmed `kind` faults at step 0."""
    rng = random.Random(f"leaks:{kind}")
    found: list[tuple[TaskSpec, Verdict]] = []
    while len(found) < count:
        task = make_task(rng, rng.choice(["short", "medium"]))
        if 0 in sites_by_kind(run(task)).get(kind, []):
            verdict = confirm(task, Fault(kind, 0, seed=rng.randrange(10**6)))
            if verdict.ok:
                found.append((task, verdict))
    return found


def _plan_faults(kind: str, count: int) -> list[tuple[TaskSpec, str, str]]:
    """(task, clean plan, faulty plan) of the first `count` confirmed `kind` faults at step 0."""
    return [
        (task, verdict.clean.turns[0].content, verdict.faulty.turns[0].content)
        for task, verdict in _plan_verdicts(kind, count)
    ]


def _reused(question: str, turns: list[Turn]) -> int:
    """How many of the question's numbers that the plan holds a later step holds again."""
    later = set(_NUMBER.findall(" ".join(t.content for t in turns[1:])))
    return len(set(_NUMBER.findall(turns[0].content)) & set(_NUMBER.findall(question)) & later)


def test_the_count_of_irrelevant_sentences_and_numbers_varies() -> None:
    # 3-A: one irrelevant sentence with one number, so a plan leaving out two was faulty
    rng = random.Random("leaks:distractors")
    sentences: Counter[int] = Counter()
    numbers: dict[int, set[int]] = {}
    for _ in range(200):
        question = with_irrelevant(rng, "What is 3 + 4?")
        found = irrelevant_sentences(question)
        sentences[len(found)] += 1
        numbers.setdefault(len(found), set()).add(len(_NUMBER.findall(" ".join(found))))
        assert question.replace(" ".join(found), "").strip()  # the question stays
    assert len(sentences) >= 4 and min(sentences) >= 1, sentences
    # the count of irrelevant numbers is not told by the count of sentences
    assert all(len(numbers[n]) >= 3 for n in (1, 2, 3)), numbers


def test_irrelevant_sentences_are_not_a_handful_of_fixed_templates() -> None:
    # 3-B: four templates, so stripping them showed the numbers a faulty plan left out
    trajectories = load_trajectories()
    frames: Counter[str] = Counter()
    irrelevant = stripped = 0
    for t in trajectories:
        for found in irrelevant_sentences(t.question):
            frames[re.sub(r"\d+|\b(?:" + "|".join(REGIONS) + r")\b", "#", found)] += 1
        tokens = [x for x in irrelevant_tokens(t.question) if x.isdigit()]
        kept = set(_NUMBER.findall(_OLD_TEMPLATES.sub("", t.question)))
        irrelevant += len(tokens)
        stripped += sum(x not in kept for x in tokens)
    assert len(frames) >= 500, len(frames)  # distinct surface forms (numbers masked)
    assert max(frames.values()) / sum(frames.values()) < 0.02, frames.most_common(3)
    assert stripped / irrelevant < 0.05, (stripped, irrelevant)  # the 3-B stripper finds ~none
    assert len(FRAMES) >= 30


def test_a_faulty_plan_leaves_out_no_count_of_numbers_a_clean_plan_never_does() -> None:
    # 3-A: every clean plan left out 0 or 1 number of the question (the one irrelevant
    # sentence), so a plan that left out 2 was always faulty (127 of 127)
    clean: Counter[int] = Counter()
    faulty: Counter[int] = Counter()
    for t in load_trajectories():
        counts = faulty if t.mistake_step == 0 else clean
        counts[_left_out(t.question, t.history[0].content)] += 1
    assert set(faulty) <= set(clean), (faulty, clean)
    assert max(clean) >= 4
    # no count is more than 4 times likelier among faulty plans than among clean ones
    n_clean, n_faulty = sum(clean.values()), sum(faulty.values())
    for count, n in faulty.items():
        if n >= 10:
            assert (n / n_faulty) / (clean[count] / n_clean) < 4, (count, faulty, clean)


def test_a_dropped_item_leaves_as_many_numbered_lines_and_question_numbers() -> None:
    # 3-B: a forgotten item took a line and a number of the question out of the plan (within a
    # family a dropped plan had one line and one number fewer than every clean plan)
    for task, clean, faulty in _plan_faults("dropped_plan_step", 6):
        assert clean != faulty
        assert _plan_shape(task.question, faulty) == _plan_shape(task.question, clean), (
            clean,
            faulty,
        )
        forgotten = [item for _, item in _ITEM.findall(faulty) if _ASIDE.fullmatch(item)]
        assert forgotten  # the forgotten number or region is set aside, as irrelevant ones are


def test_a_forgotten_number_is_restated_later_like_the_irrelevant_ones() -> None:
    # 3-C before the fix: the forgotten number was the one number of the plan that no later
    # step held (AUC 0.05 within arithmetic): the closing ledger now restates what was set aside
    for task, verdict in _plan_verdicts("dropped_plan_step", 6):
        clean, faulty = verdict.clean.turns, verdict.faulty.turns
        assert _reused(task.question, faulty) == _reused(task.question, clean)


def test_a_misread_plan_holds_no_new_number_and_none_twice() -> None:
    # 3-B: a misread bound was the bound + 1 (a number the question lacks) and a misread
    # operand could be another operand (a number twice)
    for task, clean, faulty in _plan_faults("misread_instruction", 8):
        assert _plan_shape(task.question, faulty) == _plan_shape(task.question, clean)
        twice = sum(n > 1 for n in Counter(_NUMBER.findall(faulty)).values())
        assert twice <= sum(n > 1 for n in Counter(_NUMBER.findall(clean)).values())


def test_clean_plans_set_aside_irrelevant_numbers_too() -> None:
    # a set-aside line is not the mark of a forgotten item: most clean plans have one
    plans = [t.history[0].content for t in load_trajectories() if t.mistake_step != 0]
    aside = [any(_ASIDE.fullmatch(item) for _, item in _ITEM.findall(p)) for p in plans]
    assert 0.5 < sum(aside) / len(aside) < 0.95, sum(aside) / len(aside)


@pytest.mark.parametrize("attribute", ["population", "elevation_m", "founded"])
def test_plan_items_name_an_attribute_by_either_name(attribute: str) -> None:
    # 3-B: a clean item always used the question's name, so a misread attribute was the only
    # item whose words the question lacked
    first, second = ATTRIBUTE_NAMES[attribute][0], ATTRIBUTE_NAMES[attribute][-1]
    counts: Counter[str] = Counter()
    for t in load_trajectories():
        if t.mistake_step != 0:
            for _, item in _ITEM.findall(t.history[0].content):
                counts["first"] += f" {first} of" in item
                counts["second"] += f" {second} of" in item
    share = counts["second"] / max(counts["first"] + counts["second"], 1)
    assert 0.35 < share < 0.65, counts


def test_no_code_plan_can_lose_an_item() -> None:
    # 3-B: a code task's plan has two items; with one forgotten, the one-item plan was faulty
    codes = [t for t in load_trajectories() if t.metadata["task_family"] == "code"]
    assert codes and not [t for t in codes if t.metadata["error_type"] == "dropped_plan_step"]


def test_every_filesurfer_step_names_one_region() -> None:
    # 3-A: a wrong region showed the called region in the call and the asked one in the report
    for t in load_trajectories():
        for step in t.history:
            if step.name == "FileSurfer" and "read_table(" in step.content:
                named = {r for r in REGIONS if re.search(rf"\b{r}\b", step.content)}
                assert len(named) == 1, (t.id, step.content)


def test_no_plan_references_a_variable_no_item_defines() -> None:
    # 3-A: a dropped item left its variable in a later item ("a = [x] + [y] + [dropped]")
    for t in load_trajectories():
        plan = t.history[0].content
        defined: set[str] = set()
        for _, item in _ITEM.findall(plan):
            assert set(_REF.findall(item)) <= defined, (t.id, t.metadata["error_type"], plan)
            if (match := _var_of(item)) is not None:
                defined.add(match.group(1))
