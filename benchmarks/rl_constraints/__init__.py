"""docket/rl_constraints: instruction following with mechanically checkable constraints (HiR)."""
