"""The no-reasoning attacker of `docket/rl_constraints`, its chance row (README.md).

`first_letter_fill` reads one letter and one number: it repeats the first letter that a
`start=`, `end=` or `has=` constraint names, as many times as `len=` asks (`FALLBACK_LENGTH`
without one), and with no such letter repeats the first of the alphabet that no `no=` forbids.
It never checks two constraints against each other, yet satisfies every instruction whose
positive constraints name one letter. A model is ranked by how far it lands above this row.
"""

from __future__ import annotations

import re

LETTERS = "abcdef"
FALLBACK_LENGTH = 4
_CONSTRAINT = re.compile(r"\b(len|start|end|has|no)=(\w+)")


def first_letter_fill(prompt: str) -> str:
    """The asked length filled with the first letter a positive constraint names.

    Args:
        prompt: The instruction (`len=4 start=b no=e >`).

    Returns:
        One word, e.g. `bbbb`.
    """
    found = _CONSTRAINT.findall(prompt)
    length = next((int(arg) for kind, arg in found if kind == "len"), FALLBACK_LENGTH)
    named = [arg for kind, arg in found if kind in ("start", "end", "has")]
    forbidden = {arg for kind, arg in found if kind == "no"}
    letter = named[0] if named else next((c for c in LETTERS if c not in forbidden), "a")
    return letter * length
