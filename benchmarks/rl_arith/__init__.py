"""docket/rl_arith: multi-digit arithmetic with an exact verifier, the RL runner's benchmark."""
