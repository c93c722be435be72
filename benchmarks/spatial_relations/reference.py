"""Reference policy of `docket/spatial_relations` (benchmarks/spatial_relations/README.md).

`spatial_always_yes` is the no-reasoning baseline: it answers yes without looking, so it scores
exactly the share of yes answers (0.5 on the shipped set, balanced by construction).
"""

from __future__ import annotations

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy


@policy("spatial_always_yes")
def spatial_always_yes(state: PolicyInput) -> PolicyReply:
    """Answers yes to every question."""
    return PolicyReply(text="yes")
