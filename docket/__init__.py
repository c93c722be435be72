"""docket: agentic evaluation and safety benchmarks built on Inspect."""

__version__ = "0.1.0"
