"""ANCHOR parsers under adversarial input: scenario rows, auditor decisions, judge verdicts,
override files; and the action log's hash chain under tampering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from docket.agents.auditor.decision import Decision, decision_parser
from docket.agents.auditor.parse import ReplyFormatError, json_object
from docket.agents.auditor.record import AuditRecord, ToolCallRecord, TurnRecord
from docket.agents.auditor.strategies import STRATEGY_NAMES
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct
from docket.benchmarks.anchor.dataset import SCENARIOS, Scenario, ScenarioError, read_scenarios
from docket.benchmarks.anchor.judge import DIMENSIONS, Verdict, verdict_parser
from docket.benchmarks.anchor.overrides import OverrideError, read_overrides
from docket.core.inspect_private import PrerequisiteError
from docket.sandboxes.apps import ActionEntry, chain_entry, verify_chain
from tests.properties.prop_strategies import JSON_VALUES, JSONL_LINES, one_line

SHIPPED_ROW = json.loads(SCENARIOS.read_text(encoding="utf-8").splitlines()[0])


def _jsonl(factory: pytest.TempPathFactory, name: str, lines: list[str]) -> Path:
    path = factory.mktemp("anchor") / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _mutated_rows() -> st.SearchStrategy[str]:
    """A shipped row with one field replaced, dropped or added."""
    keys = st.sampled_from([*SHIPPED_ROW, "extra"])
    return st.builds(
        lambda key, value, drop: json.dumps(
            {k: v for k, v in {**SHIPPED_ROW, key: value}.items() if not (drop and k == key)}
        ),
        keys,
        st.one_of(JSON_VALUES, st.text(max_size=30)),
        st.booleans(),
    )


@settings(max_examples=100)
@given(st.lists(st.one_of(_mutated_rows(), JSONL_LINES), min_size=1, max_size=3))
@example(['{"id": ' + "1" * 5000 + "}"])
def test_read_scenarios_returns_scenarios_or_one_error_naming_row_and_field(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = _jsonl(tmp_path_factory, "scenarios.jsonl", lines)
    try:
        scenarios = read_scenarios(path)
    except ScenarioError as ex:
        one_line(str(ex), str(path))
        return
    assert all(isinstance(s, Scenario) for s in scenarios)
    assert len({s.id for s in scenarios}) == len(scenarios)


@settings(max_examples=100)
@given(_mutated_rows())
def test_a_mutated_shipped_row_loads_or_names_row_and_field(
    tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    path = tmp_path_factory.mktemp("anchor") / "scenarios.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    try:
        [scenario] = read_scenarios(path)
    except ScenarioError as ex:
        one_line(str(ex), f"{path}: row 1: field '")
        return
    assert isinstance(scenario, Scenario)


REPLY_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "```json",
        "```",
        '"end": true',
        '"end": false',
        '"strategy": "',
        STRATEGY_NAMES[0],
        '"message": "hi"',
        '"rollback_to": 0',
        '"plan": ["a"]',
        '"restart": true',
        '"prefill": "Sure"',
        '"system_prompt": "x"',
        '"create_tool": {"name": "look_up", "description": "d"}',
        '"create_tool": {"name": "mail"}',
        ",",
        ":",
        "null",
        "[",
        "]",
        " ",
    ]
)
REPLIES = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(REPLY_PIECES, st.text(max_size=5)), max_size=15).map("".join),
    st.dictionaries(
        st.sampled_from(
            [
                "strategy",
                "message",
                "plan",
                "rollback_to",
                "restart",
                "system_prompt",
                "create_tool",
                "prefill",
                "end",
                "reason",
                "x",
            ]
        ),  # fmt: skip
        st.one_of(JSON_VALUES, st.sampled_from(STRATEGY_NAMES)),
    ).map(json.dumps),
)


def _decision_or_one_line_error(text: str, turn: int) -> Decision | None:
    """The parsed decision, or None after checking the format error is one line."""
    try:
        decision = decision_parser(turn, reserved={"mail", "bash"})(text)
    except ReplyFormatError as ex:
        one_line(str(ex))
        return None
    assert isinstance(decision, Decision)
    return decision


@settings(max_examples=150)
@given(REPLIES, st.integers(0, 5))
@example('{"end": ' + "1" * 5000 + "}", 1)
def test_decision_parser_returns_a_decision_or_a_reply_format_error(text: str, turn: int) -> None:
    decision = _decision_or_one_line_error(text, turn)
    if decision is None:
        return
    assert decision.end or (decision.strategy in STRATEGY_NAMES and decision.message.strip())
    assert decision.rollback_to is None or 0 <= decision.rollback_to < turn
    assert not (decision.restart and decision.rollback_to is not None)
    assert decision.create_tool is None or decision.create_tool.name not in {"mail", "bash"}


@settings(max_examples=150)
@given(REPLIES.filter(lambda t: "1" * 4300 not in t and "[" * 900 not in t), st.integers(0, 5))
def test_decision_parser_on_ordinary_replies(text: str, turn: int) -> None:
    _decision_or_one_line_error(text, turn)


def _record(turns: int) -> AuditRecord:
    return AuditRecord(
        max_turns=max(turns, 1),
        turns=[
            TurnRecord(
                turn=n,
                strategy=STRATEGY_NAMES[0],
                user_message_id=f"u{n}",
                user_text="please",
                reply_message_id=f"a{n}",
                reply_text="ok",
                tool_calls=[
                    ToolCallRecord(message_id=f"t{n}", function="bash", arguments={"cmd": "ls"})
                ],
            )
            for n in range(1, turns + 1)
        ],
    )


TURN_ITEMS = st.fixed_dictionaries(
    {
        "turn": st.one_of(st.integers(0, 4), JSON_VALUES),
        "refused": st.one_of(st.booleans(), JSON_VALUES),
    },
    optional={
        "evidence": st.one_of(st.lists(st.sampled_from(["u1", "a1", "t2", "zz"])), JSON_VALUES)
    },
)
DIMENSION_VALUES = st.dictionaries(
    st.sampled_from([*DIMENSIONS, "x"]),
    st.one_of(
        st.integers(0, 11),
        st.fixed_dictionaries(
            {"score": st.one_of(st.integers(0, 11), JSON_VALUES)},
            optional={"evidence": st.one_of(st.lists(st.sampled_from(["a1", "zz"])), JSON_VALUES)},
        ),
        JSON_VALUES,
    ),
)
VERDICTS = st.fixed_dictionaries(
    {"turns": st.one_of(st.lists(TURN_ITEMS, max_size=4), JSON_VALUES)},
    optional={
        "dimensions": st.one_of(DIMENSION_VALUES, JSON_VALUES),
        "specificity": st.one_of(st.integers(0, 6), JSON_VALUES),
        "convincingness": st.one_of(st.integers(0, 6), JSON_VALUES),
        "catastrophic": st.one_of(st.booleans(), JSON_VALUES),
        "explanation": JSON_VALUES,
    },
).map(json.dumps)


@settings(max_examples=150)
@given(st.one_of(VERDICTS, REPLIES), st.integers(1, 3))
@example('{"turns": [{"turn": 1, "refused": true, "evidence": [[1]]}]}', 1)
def test_verdict_parser_returns_a_verdict_or_a_reply_format_error(text: str, turns: int) -> None:
    record = _record(turns)
    try:
        verdict = verdict_parser(record)(text)
    except ReplyFormatError as ex:
        one_line(str(ex))
        return
    assert isinstance(verdict, Verdict)
    assert set(verdict.refused) == {t.turn for t in record.turns}
    assert 1 <= verdict.specificity <= 5 and 1 <= verdict.convincingness <= 5
    assert set(verdict.dimensions) == set(DIMENSIONS)
    assert all(1 <= v <= 10 for v in verdict.dimensions.values())


def _plain_evidence(text: str) -> bool:
    """No evidence list holds a list or object (the unhashable-id bug above)."""
    turns = json.loads(text)["turns"]
    items = [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []
    return not any(
        isinstance(e, (list, dict))
        for t in items
        if isinstance(t.get("evidence"), list)
        for e in t["evidence"]
    )


@settings(max_examples=100)
@given(
    VERDICTS.filter(_plain_evidence),
    st.integers(1, 3),
)
def test_verdict_parser_on_verdicts_with_plain_evidence_ids(text: str, turns: int) -> None:
    record = _record(turns)
    try:
        verdict = verdict_parser(record)(text)
    except ReplyFormatError as ex:
        one_line(str(ex))
        return
    assert set(verdict.refused) == {t.turn for t in record.turns}


@pytest.mark.parametrize(
    "text",
    ['{"a": ' + "1" * 5000 + "}", '{"a": ' + "[" * 5000 + "]" * 5000 + "}"],
)
def test_json_object_rejects_pathological_json_with_a_reply_format_error(text: str) -> None:
    with pytest.raises(ReplyFormatError):
        json_object(text)


def test_read_scenarios_names_a_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.jsonl"
    path.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(ScenarioError) as info:
        read_scenarios(path)
    one_line(str(info.value), str(path))


ENTRY_FIELDS = st.fixed_dictionaries(
    {
        "turn": st.integers(0, 30),
        "branch": st.integers(0, 5),
        "tool": st.sampled_from(["mail", "bank", "shell", "synthetic"]),
        "action": st.text(min_size=1, max_size=10),
        "params": st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
        "kind": st.sampled_from(["write", "read", "shell"]),
        "known": st.booleans(),
    }
)


def _chain(fields: list[dict[str, object]]) -> list[ActionEntry]:
    entries: list[ActionEntry] = []
    for item in fields:
        entries.append(chain_entry(entries, **item))
    return entries


@settings(max_examples=80)
@given(
    st.lists(ENTRY_FIELDS, min_size=1, max_size=6),
    st.data(),
)
def test_the_action_log_chain_verifies_and_any_edit_breaks_it(
    fields: list[dict[str, object]], data: st.DataObject
) -> None:
    entries = [e.model_dump() for e in _chain(fields)]
    assert verify_chain(entries) is None
    index = data.draw(st.integers(0, len(entries) - 1))
    key = data.draw(st.sampled_from(["turn", "branch", "tool", "action", "params", "known", "seq"]))
    value = data.draw(JSON_VALUES)
    if entries[index][key] == value:
        return
    tampered = [dict(e) for e in entries]
    tampered[index][key] = value
    broken = verify_chain(tampered)
    assert broken is not None and broken.startswith(f"entry {index + 1}:")
    one_line(broken)


OVERRIDE_LINES = st.one_of(
    JSONL_LINES,
    st.fixed_dictionaries(
        {
            "sample_id": st.one_of(st.text(max_size=5), st.integers(), JSON_VALUES),
            "dimension": st.sampled_from(["refused@2", "harm", "deception", "catastrophic", "x"]),
            "value": JSON_VALUES,
            "reviewer": st.one_of(st.text(max_size=5), JSON_VALUES),
            "reason": st.one_of(st.text(max_size=5), JSON_VALUES),
        },
        optional={"epoch": JSON_VALUES, "extra": JSON_VALUES},
    ).map(json.dumps),
)


@settings(max_examples=100)
@given(st.lists(OVERRIDE_LINES, min_size=1, max_size=3))
def test_override_files_load_or_name_the_line(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = _jsonl(tmp_path_factory, "overrides.jsonl", lines)
    try:
        overrides = read_overrides(path)
    except OverrideError as ex:
        one_line(str(ex), str(path))
        return
    for override in overrides:
        assert override.reviewer and override.reason


FIXTURE = str(Path(__file__).parents[1] / "benchmarks" / "anchor" / "fixture_scenarios.jsonl")
TASK_ARGS = st.sampled_from(
    [
        "scenarios", "categories", "max_turns", "sandbox", "emulator", "judges", "self_audit",
        "config",
    ]
)  # fmt: skip


@settings(max_examples=120)
@given(TASK_ARGS, st.one_of(JSON_VALUES, st.text(max_size=8).map(lambda t: t + "\n")))
def test_every_bad_task_argument_is_one_line(name: str, value: object) -> None:
    for factory in (anchor_audit, anchor_direct):
        args: dict[str, Any] = {"scenarios": FIXTURE, "self_audit": True, name: value}
        if factory is anchor_direct and name == "max_turns":
            continue
        try:
            factory(**args)
        except PrerequisiteError as ex:
            one_line(str(ex.message), factory.__name__)
