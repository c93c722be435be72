"""Speed targets of docket, measured as ratios against peer libraries in the same run.

`make bench` (or `python -m docket.benchmarks.perf`) runs every case in `cases.CASES` and exits
1 when a ratio misses its target. Unit tests check the harness, never the timings.
"""
