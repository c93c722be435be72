"""The `local_agent` case's parts: its task, its transcript check, its prompt, its skip."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

from docket.benchmarks.perf import cases
from docket.benchmarks.perf.harness import Skipped, run_case
from docket.benchmarks.perf.local_agent import (
    HFRenderedLocal,
    agent_task,
    first_difference,
    hf_prompt,
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
