"""Reference policies of `docket/rl_constraints`: an oracle that writes the canonical word for the
prompt's constraints (the ceiling), a no-reasoning baseline and the first-letter fill attacker
(exact scores in the README; the chance row is the strongest attacker, `attacks.attack_rows`)."""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.rl_constraints.attacks import first_letter_fill
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


@policy("rl_constraints_first_letter")
def rl_constraints_first_letter(state: PolicyInput) -> PolicyReply:
    """A blind attacker: the asked length filled with the first letter a constraint names."""
    return PolicyReply(text=first_letter_fill(state.last_user_text))
