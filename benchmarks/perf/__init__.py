"""Speed targets of docket, measured as ratios against peer libraries in the same run.

`make bench` (or `python -m docket.benchmarks.perf`) runs every case in `cases.CASES`; each
ends `ok`, `missed` (ratio above its target), `failed` (it raised, or a correctness check
guarding its ratio did not hold) or `skipped` (a named prerequisite is missing), and the run
exits 1 when one is `failed` or `missed`. Unit tests check the harness and the checks, never
the timings.
"""
