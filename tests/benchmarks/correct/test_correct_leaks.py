"""The surface cues the learned attacker used on 3-A are gone from the shipped 3-B split.

Each test checks one cue that `attack.SurfaceAttacker` exploited (found by ablation, see the
README): how many of the question's numbers the plan leaves out, a FileSurfer step naming two
regions, a plan that references a variable no item defines. Each is a string property, so a
reader that does not reason could read the faulty step off it.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from docket.benchmarks.correct.dataset import load_trajectories
from docket.benchmarks.correct.simulator.checks import _ITEM, _var_of
from docket.benchmarks.correct.simulator.tasks import make_task
from docket.benchmarks.correct.simulator.world import DISTRACTORS, REGIONS

_NUMBER = re.compile(r"\d+")
_REF = re.compile(r"\[([a-z][a-z0-9_]*)\]")


def _left_out(question: str, plan: str) -> int:
    return len(set(_NUMBER.findall(question)) - set(_NUMBER.findall(plan)))


def test_the_count_of_irrelevant_sentences_varies() -> None:
    rng = random.Random("leaks:distractors")
    counts: Counter[int] = Counter()
    for _ in range(40):
        question = make_task(rng, "short").question
        counts[sum(question.count(d.split("{")[0].strip()) for d in DISTRACTORS)] += 1
    assert len(counts) >= 3 and min(counts) >= 1, counts


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
