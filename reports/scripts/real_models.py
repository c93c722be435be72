"""Real-model rows of the benchmark READMEs: run a suite preset, keep its leaderboard's rows.

`python reports/scripts/real_models.py [--preset local] [--limit 10] [--task docket/X ...]` runs
`docket suite PRESET --limit N` (by default the `local` preset: the embedded
Qwen2.5-Coder-0.5B on CPU, every role bound to it), reads the suite's leaderboard, and merges
its rows (task, model, version, n, headline with its 95% interval, date, health) into
`reports/results/real_models.json`: a task re-run replaces its own rows and keeps the others.
Then every benchmark README's `real-models` block is rendered from that file (`--render`:
render only, the check CI runs is `tests/reports/test_real_models.py`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from inspect_ai.log import read_eval_log

from docket.core.results_tables import load_results, replace_table, write_results
from docket.reports.real_models import BLOCK, RESULTS, merge, readmes, render, rows_from_leaderboard


def _run(preset: str, limit: int, tasks: list[str], log_dir: Path) -> list[dict]:
    command = ["docket", "suite", preset, "--limit", str(limit)]
    for task in tasks:
        command += ["--task", task]
    done = subprocess.run(
        [sys.executable, "-m", "docket.cli", *command[1:], "--log-dir", str(log_dir)],
        check=False,
    )
    report = log_dir.with_name(log_dir.name + "-report") / "leaderboard.json"
    if not report.is_file():
        raise SystemExit(f"docket suite exited {done.returncode} and wrote no leaderboard")
    data = json.loads(report.read_text(encoding="utf-8"))
    logs = {
        e["log"]
        for b in data.get("benchmarks", [])
        for t in b.get("tables", [])
        for e in t.get("entries", [])
    }
    dates = {log: read_eval_log(log, header_only=True).eval.created[:10] for log in logs}
    return rows_from_leaderboard(data, dates, " ".join(command[:5]))


def main() -> None:
    """Run (unless `--render`), merge into the results file, render every README block."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="local", help="suite preset (default: local)")
    parser.add_argument("--limit", type=int, default=10, help="samples per task (default 10)")
    parser.add_argument("--task", action="append", default=[], help="only this task (repeat)")
    parser.add_argument("--log-dir", type=Path, help="keep the logs here (default: a temp dir)")
    parser.add_argument("--render", action="store_true", help="only re-render the READMEs")
    args = parser.parse_args()
    rows = load_results(RESULTS).get("rows", []) if RESULTS.is_file() else []
    if not args.render:
        with tempfile.TemporaryDirectory() as scratch:
            log_dir = args.log_dir or Path(scratch) / "logs"
            rows = merge(rows, _run(args.preset, args.limit, args.task, log_dir))
        write_results(RESULTS, {"rows": rows})
    for benchmark, readme in readmes().items():
        replace_table(readme, BLOCK, render(rows, benchmark))


if __name__ == "__main__":
    main()
