"""Reference policy of `docket/fed_topics` (benchmarks/fed_topics/README.md).

`fed_topics_first_label` is the no-reasoning baseline: it answers the first topic the question
lists (`sports`) whatever the text, so it scores exactly the share of sports texts in the split.
`fed_topics_label -M label=L` answers L to every text: with the client's training-majority label
it is the chance row (README.md: "Chance rows and attackers").
"""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy

_OPTIONS = re.compile(r"about:\s*(?P<first>[a-z]+)\s*,", re.IGNORECASE)


@policy("fed_topics_first_label")
def fed_topics_first_label(state: PolicyInput) -> PolicyReply:
    """The first label listed in the question."""
    found = _OPTIONS.search(state.last_user_text)
    return PolicyReply(text=found["first"] if found else "unknown")


@policy("fed_topics_label", args={"label": str})
def fed_topics_label(state: PolicyInput) -> PolicyReply:
    """One label, `label` (default `sports`), whatever the text: with a client's training-majority
    label (the task's metadata `chance.label`) it plays that client's chance row."""
    return PolicyReply(text=str(state.args.get("label", "sports")))
