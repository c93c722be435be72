"""The local provider's tool-call parser (`methods/decoding/chat.py`) on arbitrary replies."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st
from inspect_ai.tool import ToolCall

from docket.methods.local.chat import format_tool_call, parse_tool_calls
from tests.properties.prop_strategies import JSON_VALUES

NAMES = st.sampled_from(["bash", "python", "submit", "x"])
ARGS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)
PIECES = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        '"name": "bash"',
        '"arguments": {}',
        ",",
        "```json",
        "```",
        "[",
        "]",
        '"parameters": "{}"',
        "\n",
        "null",
        "1" * 5000,
        "[" * 3000,
    ]
)
REPLIES = st.one_of(
    st.text(max_size=120),
    st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=12).map("".join),
    st.builds(
        lambda name, args, wrap: wrap.format(json.dumps({"name": name, "arguments": args})),
        NAMES,
        JSON_VALUES,
        st.sampled_from(["{}", "<tool_call>{}</tool_call>", "```json\n{}\n```", "say {} ok"]),
    ),
)


def _check(rest: str, calls: list[ToolCall], names: list[str] | None) -> None:
    assert isinstance(rest, str)
    for call in calls:
        assert isinstance(call.function, str) and isinstance(call.arguments, dict)
        assert call.id.startswith("call_")


@settings(max_examples=200)
@given(REPLIES, st.one_of(st.none(), st.lists(NAMES, max_size=3)))
@example("<tool_call>" + "[" * 5000 + "</tool_call>", None)
@example('<tool_call>{"name": "bash", "arguments": ' + "1" * 5000 + "}</tool_call>", None)
@example('{"name": "bash", "arguments": ' + "[" * 5000 + "}", ["bash"])
@example('{"name": "bash", "arguments": "' + "[" * 5000 + '"}', ["bash"])
def test_parse_tool_calls_returns_text_and_calls_never_raises(
    text: str, names: list[str] | None
) -> None:
    rest, calls = parse_tool_calls(text, names)
    _check(rest, calls, names)
    if "<tool_call>" not in text:
        for call in calls:  # a bare object counts only when it names an offered tool
            assert names is not None and call.function in names


@settings(max_examples=80)
@given(st.lists(st.tuples(NAMES, ARGS), min_size=1, max_size=3), st.text(max_size=20))
@example([("bash", {"cmd": "echo </tool_call>"})], "")
def test_formatted_calls_parse_back_to_the_same_calls(
    spec: list[tuple[str, dict[str, object]]], prefix: str
) -> None:
    calls = [ToolCall(id=f"c{i}", function=n, arguments=a) for i, (n, a) in enumerate(spec)]
    text = prefix.replace("<tool_call>", "") + "\n" + "\n".join(format_tool_call(c) for c in calls)
    _, parsed = parse_tool_calls(text, None)
    decoded = [(c.function, json.loads(json.dumps(c.arguments))) for c in parsed]
    assert decoded == [(c.function, json.loads(json.dumps(c.arguments))) for c in calls]
