"""`stateful`: drives Inspect's stateful tools (`bash_session`, `text_editor`) step by step.

The last user message lists the steps in a fenced ```steps block, one per line:

    bash_session: <input typed and submitted>
    text_editor create <path>: <file text>
    text_editor str_replace <path>: <old> => <new>
    text_editor view <path>

The policy makes one tool call per turn, the N-th step after N tool results, then submits
(`submit` tool when offered) the text it was told to say ("reply with 'X'"). It calls only
offered tools, so with other tools it just submits, and the tasks' checks score it 0.
"""

from __future__ import annotations

import re

from docket.agents.scripted.basic import DONE_TEXT
from docket.agents.scripted.policy import PolicyInput, PolicyReply, ToolRequest, policy

_STEPS = re.compile(r"```steps[ \t]*\n(?P<body>.*?)```", re.DOTALL)
_SAY = re.compile(r"\breply with [`'\"](?P<text>[^`'\"]+)[`'\"]", re.IGNORECASE)
_EDITOR = re.compile(r"^text_editor (?P<command>\w+) (?P<path>[^\s:]+)(?::[ \t]?(?P<rest>.*))?$")


def parse_steps(text: str) -> list[ToolRequest]:
    """The tool calls a ```steps block asks for, in order (ValueError on a malformed line)."""
    block = _STEPS.search(text)
    if block is None:
        return []
    calls: list[ToolRequest] = []
    for line in (raw for raw in block["body"].splitlines() if raw.strip()):
        if line.startswith("bash_session:"):
            typed = line.split(":", 1)[1].strip()
            calls.append(ToolRequest("bash_session", {"action": "type_submit", "input": typed}))
            continue
        editor = _EDITOR.match(line)
        if editor is None:
            raise ValueError(f"policy=stateful: cannot read step {line[:60]!r}")
        command, path, rest = editor["command"], editor["path"], editor["rest"] or ""
        arguments: dict[str, str] = {"command": command, "path": path}
        if command == "create":
            arguments["file_text"] = rest.replace("\\n", "\n")
        elif command == "str_replace":
            old, sep, new = rest.partition(" => ")
            if not sep:
                raise ValueError(f"policy=stateful: str_replace needs 'old => new': {line[:60]!r}")
            arguments |= {"old_str": old, "new_str": new}
        elif command != "view":
            raise ValueError(f"policy=stateful: unknown text_editor command {command!r}")
        calls.append(ToolRequest("text_editor", arguments))
    return calls


@policy("stateful")
def stateful(state: PolicyInput) -> PolicyReply:
    """Runs the ```steps block with bash_session/text_editor, one call per turn, then submits."""
    steps = [call for call in parse_steps(state.last_user_text) if state.offered(call.function)]
    done = len(state.tool_results_since_user)
    if done < len(steps):
        return PolicyReply(text=f"Step {done + 1}.", tool_calls=[steps[done]])
    said = _SAY.search(state.last_user_text)
    answer = said["text"] if said else DONE_TEXT
    if state.offered("submit"):
        return PolicyReply(tool_calls=[ToolRequest("submit", {"answer": answer})])
    return PolicyReply(text=answer)
