"""Prompt text of the verifiable-reward tasks.

`bare` (default) sends the problem exactly as the RL runner trains on it (`47+85=`,
`len=4 start=b >`): a checkpoint from `python methods/rl/scripts/run.py` is scored on its own
input format. `instructed` prefixes one line saying what is asked, for general chat models.
"""

from __future__ import annotations

STYLES: tuple[str, ...] = ("bare", "instructed")

INSTRUCTIONS = {
    "arith": "Compute the result. Reply with the number only.",
    "constraints": (
        "Write one lowercase word that satisfies every constraint: len=N (exactly N letters), "
        "start=c, end=c, has=c (contains c), no=c (does not contain c). Reply with the word only."
    ),
}


def render(family: str, prompt: str, style: str) -> str:
    """The user message for a problem's `prompt`."""
    if style == "bare":
        return prompt
    return f"{INSTRUCTIONS[family]}\n{prompt}"
