"""docket/scsuff: self-consistent sufficiency of free-text explanations (and hint baselines)."""
