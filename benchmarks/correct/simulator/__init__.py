"""docket.benchmarks.correct.simulator: CORRECT's data simulator, a deterministic multi-agent
system with typed error injection and replay.

`generate.make_trajectory(seed, index)` builds one failed trajectory in the Who&When /
CORRECT-Error shape whose single injected error is confirmed by counterfactual replay.
"""
