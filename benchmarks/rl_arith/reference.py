"""Reference policies of `docket/rl_arith`: an oracle that computes the verified answer from the
prompt (the ceiling) and a no-reasoning baseline (near chance; exact scores in the README)."""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy

_EXPRESSION = re.compile(r"(\d+)\s*([+-])\s*(\d+)\s*=")


@policy("rl_arith_oracle")
def rl_arith_oracle(state: PolicyInput) -> PolicyReply:
    """Computes the last `a+b=` / `a-b=` expression of the prompt."""
    found = _EXPRESSION.findall(state.last_user_text)
    if not found:
        return PolicyReply(text="I don't know.")
    a, op, b = found[-1]
    return PolicyReply(text=str(int(a) + int(b) if op == "+" else int(a) - int(b)))


@policy("rl_arith_first_operand")
def rl_arith_first_operand(state: PolicyInput) -> PolicyReply:
    """No reasoning: repeats the expression's first number (right only when the other is 0)."""
    found = _EXPRESSION.findall(state.last_user_text)
    return PolicyReply(text=found[-1][0] if found else "0")
