"""General-purpose reference policies: refuse, comply, persuadable, random, oracle.

Their behaviour is specified exactly (see `agents/scripted/README.md`) so end-to-end tests can
assert exact metric values.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from docket.agents.scripted.policy import PolicyInput, PolicyReply, ToolRequest, policy
from docket.core.jsonl import JsonlLineError, parse_lines

REFUSAL_TEXT = "I can't help with that request."
DONE_TEXT = "Done."

_FENCE = re.compile(r"```(?P<lang>[A-Za-z0-9_+-]*)[ \t]*\n(?P<code>.*?)```", re.DOTALL)
_CREATE_FILE = re.compile(
    r"create (?:a |the )?file (?:named |called )?[`'\"]?(?P<path>[\w./-]+)[`'\"]?"
    r"\s+(?:containing|with (?:the )?(?:content|text))(?: exactly)?:?\s*"
    r"[`'\"](?P<content>[^`'\"]*)[`'\"]",
    re.IGNORECASE,
)
_SAY = re.compile(
    r"\b(?:reply|respond|answer|say)\s+(?:only\s+)?(?:with\s+)?[`'\"](?P<text>[^`'\"]+)[`'\"]",
    re.IGNORECASE,
)
_SHELL_LANGS = {"", "bash", "sh", "shell", "console"}


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _single_arg_call(state: PolicyInput, tool: str, value: str) -> ToolRequest:
    """A call of `tool` passing `value` as its first parameter, whatever the tool names it."""
    info = state.offered(tool)
    params = list(info.parameters.properties) if info else []
    return ToolRequest(tool, {params[0] if params else "command": value})


def _requested_tool_calls(state: PolicyInput) -> list[ToolRequest]:
    """Tool calls that carry out the last user request, using only the offered tools."""
    request = state.last_user_text
    calls: list[ToolRequest] = []
    for block in _FENCE.finditer(request):
        lang, code = block["lang"].lower(), block["code"]
        if lang in _SHELL_LANGS and state.offered("bash"):
            calls.append(_single_arg_call(state, "bash", code))
        elif lang in {"python", "py"} and state.offered("python"):
            calls.append(_single_arg_call(state, "python", code))
    if calls:
        return calls
    for match in _CREATE_FILE.finditer(request):
        path, content = match["path"], match["content"]
        if state.offered("bash"):
            cmd = f"printf '%s\\n' {_shell_quote(content)} > {_shell_quote(path)}"
            calls.append(_single_arg_call(state, "bash", cmd))
        elif state.offered("text_editor"):
            args = {"command": "create", "path": path, "file_text": content + "\n"}
            calls.append(ToolRequest("text_editor", args))
    return calls


def _final_answer(state: PolicyInput) -> PolicyReply:
    """Finish the turn: submit (when offered) what was asked for or what the tools returned."""
    said = _SAY.search(state.last_user_text)
    if said:
        answer = said["text"]
    else:
        outputs = [m.text.strip() for m in state.tool_results_since_user if m.text.strip()]
        answer = outputs[-1] if outputs else DONE_TEXT
    if state.offered("submit"):
        return PolicyReply(tool_calls=[ToolRequest("submit", {"answer": answer})])
    return PolicyReply(text=answer)


def comply_turn(state: PolicyInput) -> PolicyReply:
    """One turn of the compliant policy (shared by policies that comply conditionally)."""
    if not state.tool_results_since_user:
        calls = _requested_tool_calls(state)
        if calls:
            return PolicyReply(text="Sure, doing that now.", tool_calls=calls)
    return _final_answer(state)


@policy("refuse")
def refuse(state: PolicyInput) -> PolicyReply:
    """Declines every request and calls no tool."""
    return PolicyReply(text=REFUSAL_TEXT)


@policy("comply")
def comply(state: PolicyInput) -> PolicyReply:
    """Does what the last user message asks, calling an offered tool when the request needs one."""
    return comply_turn(state)


@policy("persuadable", args={"trigger": str, "after_turn": int})
def persuadable(state: PolicyInput) -> PolicyReply:
    """Refuses until the user message matches `trigger` (regex) or user turn >= `after_turn`."""
    trigger = str(state.args.get("trigger", ""))
    after_turn = int(state.args.get("after_turn", 0))
    try:
        triggered = bool(trigger) and re.search(trigger, state.last_user_text, re.IGNORECASE)
    except re.error as ex:
        raise ValueError(
            f"policy=persuadable: -M trigger={trigger!r:.60} is not a regex ({ex})"
        ) from None
    late_enough = after_turn > 0 and state.user_turn >= after_turn
    if triggered or late_enough:
        return comply_turn(state)
    return PolicyReply(text=REFUSAL_TEXT)


@policy("random", args={"seed": int, "choices": str})
def random_choice(state: PolicyInput) -> PolicyReply:
    """Answers `ANSWER: X` with X drawn from `choices` by a hash of (seed, prompt)."""
    listed = str(state.args.get("choices", "A,B,C,D"))
    choices = [c for c in (part.strip() for part in listed.split(",")) if c]
    if not choices:
        raise ValueError(f"policy=random: -M choices={listed!r:.60} names no choice")
    seed = int(state.args.get("seed", 0))
    digest = hashlib.sha256(f"{seed}\x00{state.last_user_text}".encode()).digest()
    answer = choices[int.from_bytes(digest[:8], "big") % len(choices)]
    if state.offered("submit"):
        return PolicyReply(tool_calls=[ToolRequest("submit", {"answer": answer})])
    return PolicyReply(text=f"ANSWER: {answer}")


@lru_cache(maxsize=16)
def _oracle_table(path: str) -> tuple[tuple[str, str], ...]:
    rows: list[tuple[str, str]] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as ex:
        raise ValueError(f"policy=oracle: -M answers={path!r} cannot be read ({ex})") from None

    def bad(number: int, ex: Exception) -> ValueError:
        cause = ex.cause if isinstance(ex, JsonlLineError) else ex
        return ValueError(
            f"{path}:{number}: oracle rows need JSON with 'match' and 'reply' "
            f"({type(cause).__name__}: {str(cause)[:80]!r})"
        )

    for number, row in parse_lines(text.splitlines(), bad):
        try:
            rows.append((str(row["match"]), str(row["reply"])))
        except (ValueError, KeyError, TypeError, RecursionError) as ex:
            raise bad(number, ex) from None
    return tuple(rows)


@policy("oracle", args={"answers": str})
def oracle(state: PolicyInput) -> PolicyReply:
    """Replies with the first `answers` JSONL row whose `match` occurs in the last user message."""
    path = state.args.get("answers")
    if not path:
        raise ValueError("policy=oracle needs -M answers=PATH (JSONL rows with match and reply)")
    for match, reply in _oracle_table(str(path)):
        if match in state.last_user_text:
            if state.offered("submit"):
                return PolicyReply(tool_calls=[ToolRequest("submit", {"answer": reply})])
            return PolicyReply(text=reply)
    return PolicyReply(text="I don't know.")
