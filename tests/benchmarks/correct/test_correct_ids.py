"""Issue 29 item 3: no id a model sees drives the generator back to the item's labels."""

from __future__ import annotations

import re

from docket.benchmarks.correct.dataset import load_trajectories, select
from docket.benchmarks.correct.prompts import all_at_once_prompt, half_prompt, step_prompt
from docket.benchmarks.correct.simulator.generate import SPLIT_SEED, make_trajectory
from docket.benchmarks.correct.simulator.records import Trajectory

#: A token that looks like an id: letters, digits and dashes with at least one digit and dash.
_ID_LIKE = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*-)[A-Za-z0-9][\w-]*\b")
#: Generator calls tried per decoded prompt id (a check in seconds, not an enumeration).
_PAIRS_PER_ID = 6


def _prompt_ids(prompt: str) -> list[str]:
    """The id-like tokens of the prompt's header (before the conversation)."""
    head = prompt.split("Conversation (steps", 1)[0]
    return _ID_LIKE.findall(head)


def _decoded(token: str) -> list[int]:
    """Every integer one can read off a token: its digit runs and its hex tail."""
    numbers = [int(run) for run in re.findall(r"\d+", token)]
    tail = token.rsplit("-", 1)[-1]
    if re.fullmatch(r"[0-9a-f]+", tail):
        numbers.append(int(tail, 16))
    return numbers


def _same(one: Trajectory, other: Trajectory) -> bool:
    return (one.question, one.mistake_agent, one.mistake_step) == (
        other.question,
        other.mistake_agent,
        other.mistake_step,
    )


def test_every_prompt_shows_one_opaque_id() -> None:
    everything = load_trajectories()
    for index, trajectory in enumerate(everything):
        ids = _prompt_ids(all_at_once_prompt(trajectory, with_gt=False))
        assert ids == [trajectory.id], ids
        assert re.fullmatch(r"mas-[0-9a-f]{16}", trajectory.id)
        # make_trajectory(SPLIT_SEED, index) is the only call that gives the item back: the id
        # never holds both numbers (random hex may hold either digit run by chance)
        decoded = _decoded(trajectory.id)
        assert not (SPLIT_SEED in decoded and index in decoded), trajectory.id
    assert len({t.id for t in everything}) == len(everything)


def test_no_generator_call_from_a_decoded_id_reproduces_the_item() -> None:
    test = select(load_trajectories(), "test")[:25]
    for trajectory in test:
        prompts = [
            all_at_once_prompt(trajectory, with_gt=False),
            step_prompt(trajectory, 1, with_gt=False),
            half_prompt(trajectory, 0, 1, 3, with_gt=False),
        ]
        numbers = sorted({n for p in prompts for token in _prompt_ids(p) for n in _decoded(token)})
        pairs = [(seed, index % 100_000) for seed in numbers for index in numbers]
        pairs += [(SPLIT_SEED, n % 100_000) for n in numbers]
        for seed, index in pairs[:_PAIRS_PER_ID]:
            assert not _same(make_trajectory(seed, index), trajectory), (trajectory.id, seed)


def test_the_oracle_reads_labels_from_the_data_not_from_the_id() -> None:
    from docket.benchmarks.correct.reference import gold_label

    trajectory = select(load_trajectories(), "test")[0]
    assert gold_label(trajectory.id) == (
        trajectory.mistake_agent,
        trajectory.mistake_step,
        trajectory.mistake_reason,
    )
