"""Helpers shared by docket's benchmarks."""
