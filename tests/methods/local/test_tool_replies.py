"""docket's tool-call parsing on real replies: greedy docket/qwen output to smoke-style prompts,
collected by `methods/local/scripts/collect_tool_replies.py` into data/qwen_tool_replies.json."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.tool import ToolCall, ToolInfo

from docket.methods.local.chat import check_arguments, parse_tool_calls

FIXTURE = Path(__file__).parent / "data" / "qwen_tool_replies.json"
#: The tool a right reply calls, by prompt kind (the id's first segment; None: no call).
EXPECTED = {"smoke": "bash", "after-bash": "submit", "bare": "bash", "add": "add", "no-tool": None}


def _records() -> list[dict[str, Any]]:
    return list(json.loads(FIXTURE.read_text())["records"])


def _parsed(record: dict[str, Any]) -> list[ToolCall]:
    tools = [ToolInfo.model_validate(t) for t in record["tools"]]
    _, calls = parse_tool_calls(record["reply"], [t.name for t in tools])
    return check_arguments(calls, tools)


def rates(records: list[dict[str, Any]]) -> dict[str, float]:
    """Over the replies: parsed (at least one call recovered), right tool (the first call is
    the expected tool, or no call when none is expected); over the parsed calls: the share
    carrying a parse_error (undeclared arguments, returned to the model as a tool error)."""
    parsed = right = errors = calls = 0
    for record in records:
        found = _parsed(record)
        expected = EXPECTED[record["id"].split("/")[0]]
        parsed += bool(found)
        right += (found[0].function if found else None) == expected
        errors += sum(c.parse_error is not None for c in found)
        calls += len(found)
    n = len(records)
    return {
        "replies": n,
        "parse_rate": parsed / n,
        "right_tool_rate": right / n,
        "calls": calls,
        "tool_error_rate": errors / calls if calls else 0.0,
    }


def test_fixture_is_real_greedy_output_of_docket_qwen() -> None:
    data = json.loads(FIXTURE.read_text())
    assert data["model"] == "docket/qwen" and data["max_tokens"] == 64
    records = data["records"]
    assert len({r["id"] for r in records}) == len(records) == 10
    assert {r["id"].split("/")[0] for r in records} == set(EXPECTED)


def test_each_real_reply_parses_as_read_by_eye() -> None:
    """(function, has parse_error) per call, checked by reading each reply."""
    seen = {
        r["id"]: [(c.function, c.parse_error is not None) for c in _parsed(r)] for r in _records()
    }
    assert seen == {
        # bare JSON, echoing the schema's 'required' next to 'command': a tool error
        "smoke/hello.txt": [("bash", True)],
        # two bare objects on two lines (it re-runs bash, then submits)
        "after-bash/hello.txt": [("bash", False), ("submit", False)],
        # a ```json fenced, pretty-printed object
        "bare/hello.txt": [("bash", False)],
        "add/2+3": [("add", False)],
        # a call where none was needed (curl to a weather API): parsed, the wrong choice
        "no-tool/What is the capital of France?": [("bash", False)],
        # the second round: the same echo of 'required' (a tool error), a right submit, a fenced
        # object again (an echo that does not write the file: the right tool all the same)
        "smoke/notes/plan.md": [("bash", True)],
        "after-bash/notes/plan.md": [("submit", False)],
        "bare/notes/plan.md": [("bash", False)],
        "add/17+25": [("add", False)],
        # a greeting through bash instead of plain text: parsed, the wrong choice
        "no-tool/Say hello.": [("bash", False)],
    }
    (echo,) = _parsed(_records()[0])
    # its JSON string holds `\n`, which decodes to a newline (the shell's printf still works)
    assert echo.arguments == {"command": "printf '%s\n' 'docket ready' > hello.txt"}
    assert echo.parse_error is not None and "'required'" in echo.parse_error


def test_parse_and_tool_error_rates_on_real_replies() -> None:
    # 10 replies: every one parses; 7 pick the right tool (both no-tool prompts get a bash call,
    # the first after-bash reply re-runs bash before submitting); 2 of 11 calls echo 'required'
    assert rates(_records()) == {
        "replies": 10,
        "parse_rate": 1.0,
        "right_tool_rate": 0.7,
        "calls": 11,
        "tool_error_rate": 2 / 11,
    }


def test_every_parsed_call_has_only_declared_arguments() -> None:
    for record in _records():
        declared = {t["name"]: set(t["parameters"]["properties"]) for t in record["tools"]}
        for call in _parsed(record):
            assert set(call.arguments) <= declared[call.function], record["id"]


SCRIPT = Path(__file__).resolve().parents[3] / "methods/local/scripts/collect_tool_replies.py"


def test_a_resumed_collection_keeps_its_records_and_refuses_another_model(tmp_path: Path) -> None:
    script = runpy.run_path(str(SCRIPT))
    out = tmp_path / "replies.json"
    data = json.loads(FIXTURE.read_text())
    out.write_text(json.dumps(data))
    done = len(data["records"])
    # every conversation asked for is already there: nothing loads, nothing changes
    kept = script["collect"]("docket/qwen", 64, done, out, resume=True)
    assert kept["records"] == data["records"]
    with pytest.raises(SystemExit, match="collected with docket/qwen at max_tokens 64, not "
                       "docket/qwen at 96: cannot resume"):  # fmt: skip
        script["collect"]("docket/qwen", 96, done, out, resume=True)
    ids = [c[0] for c in script["conversations"]()]
    assert len(ids) == len(set(ids)) == 24
    assert [r["id"] for r in data["records"]] == ids[:done]  # collected in conversation order
