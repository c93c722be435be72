"""docket.benchmarks.correct: error localisation in failed multi-agent trajectories (CORRECT)."""
