"""docket: agentic evaluation and safety benchmarks built on Inspect."""

import os

# transformers >= 5.25 fetches and runs Hub kernels on load by default; docket runs no code from
# the Hub (weights are untrusted data), so kernels stay off unless the user opts in.
os.environ.setdefault("USE_HUB_KERNELS", "NO")

__version__ = "0.1.0"
