"""ERM, the evolving retrieval memory, with its baselines and IR metrics (see README.md)."""
