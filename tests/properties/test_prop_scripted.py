"""Scripted policies on arbitrary conversations, `-M` arguments and oracle fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from inspect_ai.model import ChatMessage, ChatMessageUser, GenerateConfig, ModelOutput
from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

from docket.agents.scripted.basic import _oracle_table
from docket.agents.scripted.provider import ScriptedModelAPI
from tests.properties.prop_strategies import JSON_VALUES, JSONL_LINES, one_line


def _tool(name: str, param: str) -> ToolInfo:
    params = ToolParams(properties={param: ToolParam(type="string")}, required=[param])
    return ToolInfo(name=name, description=name, parameters=params)


TOOLS = [
    _tool("bash", "command"),
    _tool("python", "code"),
    _tool("submit", "answer"),
    _tool("text_editor", "command"),
]
ARG_VALUES = st.one_of(
    JSON_VALUES, st.sampled_from(["3", "-1", "abc", "", ",", " , ", "(", "[a-", "please", "1.5"])
)
REQUESTS = st.one_of(
    st.text(max_size=80),
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "```bash\n",
                    "```python\n",
                    "```",
                    "create a file named ",
                    "out.txt",
                    " containing ",
                    "'",
                    '"',
                    "`",
                    "reply with ",
                    "please",
                    "\n",
                    "say 'x'",
                ]
            ),
            st.text(max_size=6),
        ),
        max_size=12,
    ).map("".join),
)


def _model(policy: str, **args: Any) -> ScriptedModelAPI:
    return ScriptedModelAPI("docket/scripted", config=GenerateConfig(), policy=policy, **args)


@settings(max_examples=150)
@given(
    st.sampled_from(["persuadable", "random"]),
    st.dictionaries(st.sampled_from(["trigger", "after_turn", "seed", "choices"]), ARG_VALUES),
)
@example("persuadable", {"after_turn": 10**400})
@example("persuadable", {"after_turn": float("inf")})
@example("random", {"seed": "abc"})
def test_policy_arguments_are_typed_or_one_error_naming_the_argument(
    policy: str, args: dict[str, object]
) -> None:
    try:
        model = _model(policy, **args)
    except ValueError as ex:
        bad = [k for k in args if f"-M {k}" in str(ex)]
        assert bad, f"no argument named in {ex}"
        one_line(str(ex), f"policy={policy}")
        return
    for key, value in model.policy_args.items():
        assert isinstance(value, model.policy.args[key])


@settings(max_examples=150)
@given(
    st.sampled_from(["comply", "persuadable", "random", "refuse"]),
    st.dictionaries(st.sampled_from(["trigger", "after_turn", "choices"]), ARG_VALUES),
    st.lists(REQUESTS, min_size=1, max_size=3),
    st.lists(st.sampled_from(TOOLS), unique_by=lambda t: t.name),
)
@example("persuadable", {"trigger": "[a-"}, ["hi"], [])
@example("random", {"choices": " , "}, ["hi"], [])
async def test_policies_reply_to_any_conversation_or_name_the_bad_argument(
    policy: str, args: dict[str, object], requests: list[str], tools: list[ToolInfo]
) -> None:
    accepted = {"persuadable": ("trigger", "after_turn"), "random": ("choices",)}
    args = {k: v for k, v in args.items() if k in accepted.get(policy, ())}
    try:
        model = _model(policy, **args)
    except ValueError:
        return  # covered by the test above
    messages: list[ChatMessage] = [ChatMessageUser(content=text) for text in requests]
    try:
        out = await model.generate(messages, tools, "auto", GenerateConfig())
    except ValueError as ex:
        one_line(str(ex), f"policy={policy}: -M ")
        return
    assert isinstance(out, ModelOutput)
    for call in out.message.tool_calls or []:
        assert call.function in {t.name for t in tools}
        assert all(isinstance(v, str) for v in call.arguments.values())


@settings(max_examples=100)
@given(
    st.lists(
        st.one_of(
            JSONL_LINES,
            st.builds(lambda m, r: json.dumps({"match": m, "reply": r}), JSON_VALUES, JSON_VALUES),
        ),
        min_size=1,
        max_size=4,
    )
)
@example(["[" * 5000])
@example(['{"match": ' + "1" * 5000 + ', "reply": "x"}'])
def test_oracle_fixture_rows_load_or_one_error_naming_the_line(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = tmp_path_factory.mktemp("oracle") / "answers.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        table = _oracle_table(str(path))
    except ValueError as ex:
        one_line(str(ex), f"{path}:")
        return
    assert all(isinstance(m, str) and isinstance(r, str) for m, r in table)


@pytest.mark.parametrize("content", [None, b"\xff\xfe\n"])
def test_oracle_fixture_missing_or_not_utf8_is_one_error(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "answers.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        _oracle_table(str(path))
    one_line(str(info.value), "policy=oracle: -M answers=", str(path))
