"""The verifiable-reward families of `docket.methods.rl.tasks` as Inspect tasks.

A benchmark that scores RL checkpoints (`docket/rl_arith`, `docket/rl_constraints`) names its
family and shipped split with a `VerifiableBenchmark` and builds its task with
`verifiable_task`; the scorer is the family's own reward, what RL optimised.
"""
