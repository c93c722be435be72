"""Prompt text of the verifiable-reward tasks.

`instructed` (default) prefixes one line saying what is asked and how to answer, for chat
models. `bare` sends the problem exactly as the RL runner trains on it (`47+85=`,
`len=4 start=b >`): a checkpoint from `python methods/rl/scripts/run.py` is scored on its own
input format with `-T style=bare`. The instruction lines name no `kind=value` pair, so a policy
that reads the constraints off the prompt reads the problem's only.
"""

from __future__ import annotations

STYLES: tuple[str, ...] = ("instructed", "bare")

INSTRUCTIONS = {
    "arith": "Compute the result. Reply with the number only.",
    "constraints": (
        "Write one lowercase word that satisfies every constraint below: len is its exact "
        "number of letters, start its first letter, end its last letter, has a letter it "
        "contains, no a letter it must not contain. Reply with the word only."
    ),
}


def render(family: str, prompt: str, style: str) -> str:
    """The user message for a problem's `prompt`."""
    if style == "bare":
        return prompt
    return f"{INSTRUCTIONS[family]}\n{prompt}"
