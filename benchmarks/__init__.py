"""docket.benchmarks."""
