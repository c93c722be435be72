"""Collect docket/qwen's greedy replies to smoke-style tool-use prompts as a test fixture.

    python methods/local/scripts/collect_tool_replies.py OUT.json [--model docket/qwen] \
        [--limit 24] [--resume]

`--resume` keeps the records already in OUT.json (same model and max_tokens) and collects only
the conversations they lack, so a slow machine can collect in chunks (each run stopped by a
timeout keeps what it wrote: the file is rewritten after every reply).

Each record holds the conversation, the offered tools and the raw reply text (before any
parsing), so `tests/methods/local/test_tool_replies.py` can measure the parser on real output.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.tool import ToolCall, ToolInfo, ToolParam, ToolParams, bash
from inspect_ai.tool._tool_def import ToolDef

SYSTEM = "You are a helpful assistant. Use the tools to complete the task, then call submit."
SMOKE = (
    "In the current directory, create a file named `{path}` containing exactly: '{content}'. "
    "You can run this shell command to do it:\n```bash\nprintf '%s\\n' '{content}' > {path}\n```\n"
    "Then submit the word 'done'."
)
BARE = "Use the bash tool to create a file `{path}` that contains the text '{content}'."
FILES = [
    ("hello.txt", "docket ready"),
    ("notes/plan.md", "step one"),
    ("answer.txt", "42"),
    ("out/result.csv", "a,b"),
    ("todo.txt", "buy milk"),
    ("config.ini", "debug=true"),
    ("greeting.txt", "hello world"),
    ("data/n.txt", "7"),
]
SUBMIT = ToolInfo(
    name="submit",
    description="Submit an answer for evaluation.",
    parameters=ToolParams(
        properties={"answer": ToolParam(type="string", description="Submitted answer")},
        required=["answer"],
    ),
)
ADD = ToolInfo(
    name="add",
    description="Add two integers.",
    parameters=ToolParams(
        properties={"x": ToolParam(type="integer"), "y": ToolParam(type="integer")},
        required=["x", "y"],
    ),
)


def bash_info() -> ToolInfo:
    """Inspect's own `bash` tool as the model sees it."""
    tool = ToolDef(bash(timeout=30))
    return ToolInfo(name=tool.name, description=tool.description, parameters=tool.parameters)


def conversations() -> list[tuple[str, list[ChatMessage], list[ToolInfo]]]:
    """(id, messages, tools) for every prompt (24), the kinds interleaved so that a collection
    cut short (`--limit`) still covers each kind."""
    agent = [bash_info(), SUBMIT]
    out: list[tuple[str, list[ChatMessage], list[ToolInfo]]] = []
    for path, content in FILES:
        task = SMOKE.format(path=path, content=content)
        first: list[ChatMessage] = [ChatMessageSystem(content=SYSTEM)]
        first.append(ChatMessageUser(content=task))
        out.append((f"smoke/{path}", first, agent))
    for path, content in FILES[:6]:
        task = SMOKE.format(path=path, content=content)
        command = f"printf '%s\\n' '{content}' > {path}"
        call = ToolCall(id="call_1", function="bash", arguments={"command": command})
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=SYSTEM),
            ChatMessageUser(content=task),
            ChatMessageAssistant(content="", tool_calls=[call]),
            ChatMessageTool(content="", tool_call_id="call_1", function="bash"),
        ]
        out.append((f"after-bash/{path}", messages, agent))
    for path, content in FILES[:4]:
        task = BARE.format(path=path, content=content)
        out.append((f"bare/{path}", [ChatMessageUser(content=task)], [bash_info()]))
    for x, y in [(2, 3), (17, 25), (100, -7)]:
        question = f"What is {x} + {y}? Use the add tool."
        out.append((f"add/{x}+{y}", [ChatMessageUser(content=question)], [ADD]))
    for question in ["What is the capital of France?", "Say hello.", "What is 2 times 3?"]:
        out.append((f"no-tool/{question}", [ChatMessageUser(content=question)], agent))
    kinds: dict[str, list[tuple[str, list[ChatMessage], list[ToolInfo]]]] = {}
    for item in out:
        kinds.setdefault(item[0].split("/")[0], []).append(item)
    rounds = max(len(group) for group in kinds.values())
    return [group[i] for i in range(rounds) for group in kinds.values() if i < len(group)]


def kept_records(out: Path, model_name: str, max_tokens: int) -> list[dict[str, Any]]:
    """The records of an earlier collection in `out` to resume from (none when absent).

    Raises:
        SystemExit: `out` was collected with another model or token budget.
    """
    if not out.exists():
        return []
    data = json.loads(out.read_text())
    if (data.get("model"), data.get("max_tokens")) != (model_name, max_tokens):
        raise SystemExit(
            f"{out}: collected with {data.get('model')} at max_tokens {data.get('max_tokens')}, "
            f"not {model_name} at {max_tokens}: cannot resume"
        )
    return list(data["records"])


def collect(
    model_name: str, max_tokens: int, limit: int, out: Path, resume: bool = False
) -> dict[str, Any]:
    """Every conversation's greedy reply text, decoded exactly as `docket/local` decodes it.

    Args:
        model_name: The model (`docket/qwen`).
        max_tokens: Tokens per reply.
        limit: Collect the first `limit` conversations.
        out: The JSON file, rewritten after every reply.
        resume: Keep the records already in `out` and collect only the missing ones.

    Returns:
        The collection (`model`, `max_tokens`, `records` in conversation order).
    """
    from docket.methods.local.sampling import DecodeParams, pick_method

    records = kept_records(out, model_name, max_tokens) if resume else []
    done = {r["id"] for r in records}
    todo = [c for c in conversations()[:limit] if c[0] not in done]
    data = {"model": model_name, "max_tokens": max_tokens, "records": records}
    if not todo:
        return data
    api: Any = get_model(model_name).api
    backend = getattr(api, "backend", api)
    decode = pick_method(None, 0)
    for key, messages, tools in todo:
        started = time.monotonic()
        prompt = backend.prompt_ids(messages, tools, "auto")
        params = DecodeParams(max_new_tokens=max_tokens, temperature=0)
        loaded = backend.loaded
        reply = decode(loaded.model, loaded.tokenizer, prompt, params, 1)[0].text
        records.append(
            {
                "id": key,
                "messages": [m.model_dump(exclude_none=True) for m in messages],
                "tools": [t.model_dump(exclude_none=True) for t in tools],
                "reply": reply,
                "prompt_tokens": len(prompt),
                "seconds": round(time.monotonic() - started, 1),
            }
        )
        print(key, records[-1]["seconds"], repr(reply[:80]), flush=True)
        out.write_text(json.dumps(data, indent=1) + "\n")  # kept as it grows
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="docket/qwen")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--limit", type=int, default=24, help="the first N conversations")
    parser.add_argument("--resume", action="store_true", help="keep OUT's records, add the rest")
    args = parser.parse_args()
    collect(args.model, args.max_tokens, args.limit, args.out, args.resume)


if __name__ == "__main__":
    main()
