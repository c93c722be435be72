"""The `local_agent` case's parts: its task, its transcript check, its prompt, its skip."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

from docket.benchmarks.perf import cases
from docket.benchmarks.perf.harness import Skipped, run_case
from docket.benchmarks.perf.local_agent import (
    HFRenderedLocal,
    agent_task,
    first_difference,
    hf_prompt,
    host_files,
)
from tests.methods.local.test_kv_reuse import tiny

__all__ = ["tiny"]

BASH = ToolInfo(
    name="bash",
    description="Run a shell command.",
    parameters=ToolParams(properties={"cmd": ToolParam(type="string")}, required=["cmd"]),
)


def test_agent_task_has_five_file_requests() -> None:
    task = agent_task()
    ids = [sample.id for sample in task.dataset]
    assert ids == ["hello.txt", "notes/plan.md", "answer.txt", "todo.txt", "notes/done.md"]
    assert task.message_limit == 12


@solver
def _as_left() -> Solver:
    """An agent whose work is the sample's files."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


def test_agent_task_is_scored_without_a_clean_room(tmp_path: Path) -> None:
    """Inspect's `local` sandbox has no clean room (smoke's scorer errors there): the case's
    own scorer reads the files the agent left on the host."""
    expect = {"hello.txt": "hi", "notes/plan.md": "ship it"}
    samples = [
        Sample(id="right", input="x", metadata={"expect": expect}, files=expect),
        Sample(id="wrong", input="x", metadata={"expect": expect}, files={"hello.txt": "no"}),
    ]
    task = Task(dataset=samples, solver=_as_left(), scorer=host_files(), sandbox="local")
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    scores = {s.id: (s.scores or {})["host_files"] for s in log.samples or []}
    assert scores["right"].value == "C"
    assert scores["wrong"].value == "I"
    assert scores["wrong"].explanation == (
        "hello.txt contains 'no'; expected 'hi'; notes/plan.md missing or unreadable"
    )
    spec = agent_task().sandbox
    assert spec is not None and spec.type == "local"
    scorers = [getattr(s, "__qualname__", "") for s in agent_task().scorer or []]
    assert scorers == ["host_files.<locals>.score"]


def test_first_difference_names_sample_and_turn() -> None:
    same: dict[str, list[list[Any]]] = {"a": [["hi", [["bash", {"cmd": "ls"}]]]]}
    assert first_difference(same, same) is None
    other: dict[str, list[list[Any]]] = {"a": [["hi", [["bash", {"cmd": "pwd"}]]]]}
    assert first_difference(same, other) == (
        "sample 'a' turn 0: \"['hi', [['bash', {'cmd': 'ls'}]]]\" vs "
        "\"['hi', [['bash', {'cmd': 'pwd'}]]]\""
    )
    longer: dict[str, list[list[Any]]] = {"a": [*same["a"], ["done", []]]}
    assert first_difference(same, longer) == "sample 'a': 1 vs 2 assistant turns"
    assert first_difference(same, {"b": []}) == "different samples: ['a'] vs ['b']"


def test_hf_prompt_renders_tools_through_the_template(tiny: tuple[object, object]) -> None:
    _, tokenizer = tiny
    messages: list[ChatMessage] = [
        ChatMessageSystem(content="be brief"),
        ChatMessageUser(content="list files"),
    ]
    text = hf_prompt(tokenizer, messages, [])
    assert text == (
        "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nlist files<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_engine_side_answers_through_the_engine(
    tiny: tuple[object, object], tmp_path: Path
) -> None:
    model, tokenizer = tiny
    model.save_pretrained(tmp_path)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(tmp_path)  # type: ignore[attr-defined]
    api = HFRenderedLocal("engine", path=str(tmp_path), device="cpu")
    config = GenerateConfig(max_tokens=6, temperature=0)
    output = asyncio.run(api.generate([ChatMessageUser(content="ls")], [BASH], "auto", config))
    assert output.usage is not None and 1 <= output.usage.output_tokens <= 6
    assert output.choices[0].message.role == "assistant"


def test_missing_weights_skip_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cases.QWEN_GGUF_ENV, str(tmp_path / "absent.gguf"))
    result = run_case("local_agent", cases.local_agent, quick=True)
    assert isinstance(result, Skipped)
    assert result.prerequisite == "Qwen GGUF"
    assert result.reason == f"{cases.QWEN_GGUF_ENV}={tmp_path / 'absent.gguf'} is not a file"


#: Qwen's reply form in the real run: two fenced calls, which Inspect's parser reads as one
#: call of `unknown` without arguments, whatever the command.
FENCED = (
    '```json\n{{"name": "bash", "arguments": {{"cmd": "{cmd}"}}, "required": ["cmd"]}}\n'
    '{{"name": "submit", "arguments": {{"answer": "done"}}}}\n```'
)


def test_raw_replies_are_recorded_and_compared() -> None:
    """Two replies that both fail to parse still differ in the transcript check."""
    from types import SimpleNamespace

    from inspect_ai.model._providers.util import HFHandler

    from docket.benchmarks.perf.local_agent import recording_replies, transcripts

    original = HFHandler.parse_assistant_response
    handler = HFHandler("m", "qwen2.5-coder-0.5b-instruct")
    with recording_replies():
        first = handler.parse_assistant_response(FENCED.format(cmd="ls"), [BASH])
        second = handler.parse_assistant_response(FENCED.format(cmd="pwd"), [BASH])
    assert HFHandler.parse_assistant_response is original
    assert first.metadata == {"raw_reply": FENCED.format(cmd="ls")}
    logs = [
        SimpleNamespace(samples=[SimpleNamespace(id="a", messages=[m])]) for m in (first, second)
    ]
    ours, theirs = transcripts(logs[0]), transcripts(logs[1])
    assert ours["a"][0][:2] == theirs["a"][0][:2] == ["", [["unknown", {}]]]  # alone: equal
    assert first_difference(ours, theirs) is not None
    assert first_difference(ours, transcripts(logs[0])) is None


def test_engine_counters_read_as_one_phrase() -> None:
    engine = {
        "forward_steps": 69,
        "widest_batch": 5,
        "drafted_tokens": 1005,
        "accepted_tokens": 313,
        "prompt_tokens": 5098,
        "reused_prompt_tokens": 4254,
        "shared_prompt_tokens": 1381,
    }
    assert cases._counters(engine) == (
        "69 batched steps, prompt tokens reused 4254/5098 (from other samples 1381), "
        "drafts accepted 313/1005"
    )
    assert cases._counters(None) == "counters missing"
