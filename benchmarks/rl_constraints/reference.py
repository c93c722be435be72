"""Reference policies of `docket/rl_constraints`: an oracle that writes the canonical word for the
prompt's constraints (the ceiling) and a no-reasoning baseline (exact scores in the README)."""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.methods.rl.tasks.constraints import ConstraintsFamily

_CONSTRAINT = re.compile(r"\b(len|start|end|has|no)=(\w+)")


@policy("rl_constraints_oracle")
def rl_constraints_oracle(state: PolicyInput) -> PolicyReply:
    """Writes the canonical word satisfying the prompt's constraints."""
    constraints = [{"kind": k, "arg": a} for k, a in _CONSTRAINT.findall(state.last_user_text)]
    return PolicyReply(text=ConstraintsFamily().canonical(constraints))


@policy("rl_constraints_constant")
def rl_constraints_constant(state: PolicyInput) -> PolicyReply:
    """No reasoning: the same word, `aaaa`, whatever the constraints."""
    return PolicyReply(text="aaaa")
