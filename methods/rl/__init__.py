"""RL post-training for LLMs: GRPO, experience replay, ECHO, NSR, Stratified GRPO and HiR.

Pure tensor functions (`advantages`, `losses`, `nsr`, `replay`, `hir`, `echo/`) carry each
method's objective and are tested on their defining properties; `engines/` adapts them to TRL's
`GRPOTrainer` and to verl's registries; `tiny.py`, `tasks/`, `configs.py` (one configuration
class per variant), `trainer.py` (one trainer class per variant) and `run.py` train a
tiny model on the verifiable-reward tasks of `docket/rl_arith` and `docket/rl_constraints`.
"""
