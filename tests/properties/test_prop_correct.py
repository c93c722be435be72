"""CORRECT parsers under adversarial input: trajectory files and records, answer parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from docket.benchmarks.correct.dataset import load_trajectories
from docket.benchmarks.correct.prompts import (
    SECTIONS,
    Localisation,
    parse_half,
    parse_localisation,
    parse_schema,
    parse_yes_no,
)
from docket.benchmarks.correct.scorer import localisation_value
from docket.benchmarks.correct.simulator.records import (
    Trajectory,
    TrajectoryError,
    parse_record,
    read_trajectories,
)
from docket.core.inspect_private import PrerequisiteError
from tests.properties.prop_strategies import JSON_VALUES, JSONL_LINES, one_line

STEPS = st.fixed_dictionaries(
    {"content": st.one_of(st.text(max_size=10), JSON_VALUES)},
    optional={"name": st.one_of(st.text(max_size=5), JSON_VALUES), "role": JSON_VALUES},
)
RECORDS = st.fixed_dictionaries(
    {
        "question": JSON_VALUES,
        "history": st.one_of(st.lists(st.one_of(STEPS, JSON_VALUES), max_size=3), JSON_VALUES),
        "mistake_agent": st.one_of(st.text(max_size=5), JSON_VALUES),
        "mistake_step": st.one_of(
            st.integers(-1, 4), st.sampled_from(["0", " 1 ", "²", "٣", "x"]), JSON_VALUES
        ),
    },
    optional={"trajectory_id": JSON_VALUES, "ground_truth": JSON_VALUES},
)
GOOD_STEP = {"name": "Coder", "content": "print(1)"}


def _check_record(raw: object) -> None:
    try:
        trajectory = parse_record(raw, "file.jsonl", 4)
    except TrajectoryError as ex:
        one_line(str(ex), "file.jsonl[4]")
        return
    assert isinstance(trajectory, Trajectory)
    assert 0 <= trajectory.mistake_step < len(trajectory.history)
    assert trajectory.mistake_agent.strip()


@settings(max_examples=150)
@given(st.one_of(RECORDS, JSON_VALUES))
@example({"question": "q", "history": [GOOD_STEP], "mistake_agent": "a", "mistake_step": "²"})
def test_parse_record_gives_a_trajectory_or_one_error_naming_record_and_field(raw: object) -> None:
    _check_record(raw)


@settings(max_examples=150)
@given(RECORDS.filter(lambda r: r["mistake_step"] != "²"))
def test_parse_record_on_records_with_decimal_step_strings(raw: object) -> None:
    _check_record(raw)


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


@settings(max_examples=100)
@given(
    st.sampled_from(["t.jsonl", "t.json"]),
    st.lists(st.one_of(JSONL_LINES, RECORDS.map(json.dumps)), min_size=1, max_size=3),
)
@example("t.jsonl", ['{"question": ' + "1" * 5000 + "}"])
def test_trajectory_files_load_or_give_one_prerequisite_error(
    tmp_path_factory: pytest.TempPathFactory, name: str, lines: list[str]
) -> None:
    text = "\n".join(lines) if name.endswith(".jsonl") else (lines[0])
    path = _file(tmp_path_factory.mktemp("correct"), name, text)
    try:
        trajectories = load_trajectories(str(path))
    except PrerequisiteError as ex:
        one_line(str(ex), "correct_localization: ", str(path))
        return
    assert all(isinstance(t, Trajectory) for t in trajectories)


@settings(max_examples=100)
@given(
    st.sampled_from(["t.jsonl", "t.json"]),
    st.lists(
        st.one_of(JSONL_LINES, RECORDS.filter(lambda r: r["mistake_step"] != "²").map(json.dumps)),
        min_size=1,
        max_size=3,
    ).filter(lambda lines: not any("1" * 4300 in line for line in lines)),
)
def test_trajectory_files_with_ordinary_json_load_or_give_one_error(
    tmp_path_factory: pytest.TempPathFactory, name: str, lines: list[str]
) -> None:
    text = "\n".join(lines) if name.endswith(".jsonl") else lines[0]
    path = _file(tmp_path_factory.mktemp("correct"), name, text)
    try:
        read_trajectories(path)
    except TrajectoryError as ex:
        one_line(str(ex), str(path))


def test_a_non_utf8_trajectory_file_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"question": "\xff"}\n')
    with pytest.raises(TrajectoryError):
        read_trajectories(path)


ANSWERS = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "Agent Name:",
                    "**Agent Name**:",
                    "Step Number:",
                    "Step ",
                    "**",
                    "`",
                    "\n",
                    "Yes",
                    "no",
                    "lower",
                    "upper",
                    "007",
                    "WebSurfer",
                    "Error Signatures:",
                    "## Context Analysis",
                    "Detection Heuristics",
                ]
            ),
            st.text(max_size=5),
        ),
        max_size=12,
    ).map("".join),
)


@settings(max_examples=200)
@given(ANSWERS)
@example("Agent Name: Coder\nStep Number: " + "1" * 5000)
def test_parse_localisation_names_an_agent_and_step_or_none(text: str) -> None:
    parsed = parse_localisation(text)
    assert isinstance(parsed, Localisation)
    assert parsed.agent is None or (isinstance(parsed.agent, str) and parsed.agent)
    assert parsed.step is None or parsed.step >= 0


@settings(max_examples=200)
@given(ANSWERS)
@example("Error ſignatures: x")
def test_parse_schema_returns_the_three_sections(text: str) -> None:
    sections = parse_schema(text)
    assert list(sections) == list(SECTIONS)
    assert all(isinstance(v, str) for v in sections.values())


@settings(max_examples=200)
@given(ANSWERS.filter(lambda t: "ſ" not in t and "1" * 4300 not in t))
def test_answer_parsers_on_ordinary_text(text: str) -> None:
    assert parse_yes_no(text) in (True, False, None)
    assert parse_half(text) in ("lower", "upper", None)
    assert list(parse_schema(text)) == list(SECTIONS)
    assert isinstance(parse_localisation(text), Localisation)


@settings(max_examples=150)
@given(
    st.one_of(st.none(), st.text(max_size=8)),
    st.one_of(st.none(), st.integers(-5, 50)),
    st.text(min_size=1, max_size=8),
    st.integers(0, 50),
    st.integers(0, 3),
)
def test_localisation_value_is_a_consistent_zero_one_dict(
    agent: str | None, step: int | None, gold_agent: str, gold_step: int, tolerance: int
) -> None:
    value = localisation_value(agent, step, gold_agent, gold_step, tolerance)
    assert set(value) == {"agent", "step", "step_within", "joint", "answered"}
    assert all(v in (0.0, 1.0) for v in value.values())
    assert value["joint"] == value["agent"] * value["step"]
    assert value["step"] <= value["step_within"]
    assert value["answered"] == float(agent is not None and step is not None)


AGENTS = st.sampled_from(
    ["Planner", "Orchestrator", "WebSurfer", "FileSurfer", "Calculator", "Coder", "Verifier", "x"]
)
FRAGMENTS = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "Next speaker: Calculator. ",
                "store as x. ",
                "x = 5",
                "Ashford",
                "search_kb(entity='Ashford', attribute='population')\n",
                '{"name": "Ashford", "facts": {"population": {"value": 7}}}\n',
                "read_table('sales.csv', region='North')\n",
                "year,region,Q1\n2024,North,5\n",
                "calculate('1 + 2')\n= 4",
                "1. Calculator: y = 2 * 3\n",
                "FINAL ANSWER: 3",
                "I confirm 4.",
                "Verifier, please confirm 3.",
                "i**2 for 1 <= i <= 9, 3 | i",
                "range(1, 10) if i % 3 == 0",
                "Q3 2024",
            ]
        ),
        st.text(max_size=8),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=150)
@given(st.text(max_size=40), st.lists(st.tuples(AGENTS, FRAGMENTS), max_size=6))
def test_step_checks_read_any_conversation(question: str, steps: list[tuple[str, str]]) -> None:
    from docket.benchmarks.correct.simulator.checks import CHECKS, flags

    found = flags(question, steps)
    assert len(found) == len(steps) and all(f <= set(CHECKS) for f in found)


@settings(max_examples=150)
@given(st.text(max_size=30))
def test_agent_normalisation_is_idempotent_and_case_blind(name: str) -> None:
    from docket.benchmarks.correct.prompts import normalise_agent

    once = normalise_agent(name)
    assert normalise_agent(once) == once
    assert normalise_agent(name.upper()) == normalise_agent(name.lower()) or not name.isascii()
