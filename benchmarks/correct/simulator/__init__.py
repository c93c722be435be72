"""docket.agents.mas: a deterministic multi-agent system, typed error injection and replay.

`generate.make_trajectory(seed, index)` builds one failed trajectory in the Who&When /
CORRECT-Error shape whose single injected error is confirmed by counterfactual replay.
"""
