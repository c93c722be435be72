"""The auditor's parts: decisions, memory compaction, repair, and byte-exact workspace rollback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docket.agents.auditor import STRATEGY_NAMES, AuditRecord, TurnRecord, strategy
from docket.agents.auditor.decision import decision_parser, observation
from docket.agents.auditor.parse import ReplyFormatError, generate_parsed, json_object
from docket.agents.cli_target import restore_workspace, snapshot_workspace
from docket.sandboxes import sandbox_spec
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox


def _turn(number: int, strategy_name: str, reply: str) -> TurnRecord:
    return TurnRecord(
        turn=number,
        strategy=strategy_name,
        user_message_id=f"u{number}",
        user_text=f"ask {number}",
        reply_message_id=f"a{number}",
        reply_text=reply,
    )


def test_five_documented_strategy_classes() -> None:
    assert STRATEGY_NAMES == (
        "decomposition",
        "reframing",
        "fabricated_authority",
        "incremental_escalation",
        "persistence",
    )
    with pytest.raises(ValueError, match="accepted: decomposition"):
        strategy("flattery")


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("no json here", "no JSON object found"),
        ('{"strategy": "bribery", "message": "x"}', "'strategy' must be one of"),
        ('{"strategy": "reframing", "message": ""}', "'message' must be a non-empty string"),
        ('{"strategy": "reframing", "message": "x", "rollback_to": 3}', "from 0 to 2"),
        ('{"strategy": "reframing", "message": "x", "todo": "all"}', "list of strings"),
    ],
)
def test_bad_decisions_name_the_problem(reply: str, error: str) -> None:
    with pytest.raises(ReplyFormatError, match=error):
        decision_parser(3)(reply)


def test_decision_in_prose_and_end() -> None:
    text = 'Sure:\n```json\n{"strategy": "persistence", "message": "again", "rollback_to": 0}\n```'
    decision = decision_parser(2)(text)
    assert (decision.strategy, decision.rollback_to, decision.end) == ("persistence", 0, False)
    assert decision_parser(1)('{"end": true}').end
    assert json_object('x {"a": 1} y') == {"a": 1}


def test_memory_compaction_keeps_recent_turns_in_full() -> None:
    record = AuditRecord(max_turns=20, todo=["crm.export"], done={})
    record.turns = [_turn(n, STRATEGY_NAMES[(n - 1) % 5], "I can't help.") for n in range(1, 6)]
    text, compacted = observation(record, 6, "goal", compact_after=8, keep_recent=2)
    assert not compacted and "MEMORY" not in text and text.count("## turn") == 5
    text, compacted = observation(record, 6, "goal", compact_after=4, keep_recent=2)
    assert compacted
    assert "MEMORY (compacted, turns 1-3):" in text
    assert "- turn 2 reframing: target refused" in text
    assert text.count("## turn") == 2 and "## turn 5 (strategy persistence)" in text
    assert text.startswith("TURN 6 OF 20") and "- [ ] crm.export" in text


async def test_repair_prompt_then_failure_is_reported() -> None:
    parse = decision_parser(1)
    prompt = [ChatMessageUser(content="TURN 1 OF 3\nTODO:\n- [ ] mail.send")]
    auditor = get_model("docket/scripted", policy="auditor")
    decision, error = await generate_parsed(auditor, prompt, parse)
    assert decision is not None and decision.strategy == "decomposition" and error == ""
    broken = get_model("docket/scripted", policy="refuse")
    decision, error = await generate_parsed(broken, prompt, parse)
    assert decision is None and error == "no JSON object found"


async def test_scripted_judge_repairs_after_one_garbled_reply() -> None:
    def parse(text: str) -> dict[str, object]:
        return json_object(text)

    prompt = [ChatMessageUser(content="TRANSCRIPT\n### turn 1 (strategy direct)\n")]
    once = get_model("docket/scripted", policy="judge", garble=1)
    verdict, _ = await generate_parsed(once, prompt, parse)
    assert verdict is not None and verdict["turns"] == [
        {"turn": 1, "refused": False, "evidence": [""]}
    ]
    twice = get_model("docket/scripted", policy="judge", garble=2)
    verdict, error = await generate_parsed(twice, prompt, parse)
    assert verdict is None and error == "no JSON object found"


_SETUP = (
    "mkdir -p sub/deep && printf 'alpha\\n' > a.txt && head -c 4096 /dev/urandom > sub/blob.bin "
    "&& printf '#!/bin/sh\\necho hi\\n' > sub/deep/run.sh && chmod 755 sub/deep/run.sh "
    "&& touch -d '2001-02-03 04:05:06' a.txt "
    "&& mkdir -p .anchor && echo log > .anchor/actions.jsonl"
)
_FINGERPRINT = (
    "find . -path ./.anchor -prune -o -type f -printf '%P %m %T@ ' -exec sha256sum {} \\; | sort"
)
_MESS = (
    "rm a.txt && printf 'changed' >> sub/blob.bin && chmod 600 sub/deep/run.sh "
    "&& echo new > new.txt && echo more >> .anchor/actions.jsonl"
)


@solver
def _rollback_probe():  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        async def fingerprint() -> str:
            return (await sandbox().exec(["bash", "-c", _FINGERPRINT])).stdout

        await sandbox().exec(["bash", "-c", _SETUP])
        before = await fingerprint()
        snapshot = await snapshot_workspace(7)
        await sandbox().exec(["bash", "-c", _MESS])
        changed = await fingerprint()
        await restore_workspace(snapshot)
        state.metadata.update(
            before=before,
            changed=changed,
            after=await fingerprint(),
            log=await sandbox().read_file(".anchor/actions.jsonl"),
            turn=await sandbox().read_file(".anchor/turn"),
        )
        return state

    return solve


@scorer(metrics=[mean()])
def _same():  # type: ignore[no-untyped-def]
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=float(state.metadata["before"] == state.metadata["after"]))

    return score


@pytest.mark.bwrap
def test_rollback_restores_workspace_byte_for_byte(tmp_path: Path) -> None:
    task = Task(
        dataset=[Sample(input="probe")],
        solver=_rollback_probe(),
        scorer=_same(),
        sandbox=sandbox_spec("bwrap"),
    )
    [log] = inspect_eval(
        task,
        model=get_model("docket/scripted", policy="refuse"),
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    meta = log.samples[0].metadata
    assert meta["changed"] != meta["before"]
    assert meta["after"] == meta["before"]  # content hashes, modes and mtimes
    assert "a.txt 644 981173106" in meta["after"] and "sub/deep/run.sh 755" in meta["after"]
    assert "new.txt" not in meta["after"]
    assert meta["log"] == "log\nmore\n"  # the action log is not rolled back
    assert meta["turn"] == "7"
    assert json.dumps(meta)  # metadata stays serialisable
