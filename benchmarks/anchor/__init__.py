"""ANCHOR: a persistent auditor against a CLI agent in a sandbox (tasks in `anchor.py`)."""
