"""Real-model rows of the benchmark READMEs: run a suite preset, keep its leaderboard's rows.

`python reports/scripts/real_models.py [--preset local] [--limit 10] [--task docket/X ...]` runs
`docket suite PRESET --limit N` (by default the `local` preset: the embedded
Qwen2.5-Coder-0.5B on CPU, every role bound to it), reads the suite's leaderboard, and merges
its rows (task, model, version, n, headline with its 95% interval, date, health) into
`reports/results/real_models.json`: a task re-run replaces its own rows and keeps the others.
`--from-logs DIR --run "COMMAND"` takes the rows of logs a run already wrote (`docket report
DIR`), e.g. of a suite stopped part-way. Then every benchmark README's `real-models` block is
rendered from that file (`--render`: render only; `tests/reports/test_real_models.py` is the
check CI runs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from inspect_ai.log import read_eval_log

from docket.core.results_tables import load_results, replace_table, write_results
from docket.reports.real_models import (
    BENCHMARKS,
    BLOCK,
    RESULTS,
    merge,
    model_free_tasks,
    readmes,
    render,
    rows_from_leaderboard,
)


def _run(preset: str, limit: int, tasks: list[str], log_dir: Path) -> Path:
    """`docket suite PRESET --limit N [--task ...]`; its leaderboard's path."""
    command = ["suite", preset, "--limit", str(limit)]
    for task in tasks:
        command += ["--task", task]
    done = subprocess.run(
        [sys.executable, "-m", "docket.cli", *command, "--log-dir", str(log_dir)], check=False
    )
    report = log_dir.with_name(log_dir.name + "-report") / "leaderboard.json"
    if not report.is_file():
        raise SystemExit(f"docket suite exited {done.returncode} and wrote no leaderboard")
    return report


def _report(log_dir: Path, out: Path) -> Path:
    """`docket report LOGDIR`; its leaderboard's path."""
    command = [sys.executable, "-m", "docket.cli", "report", str(log_dir), "--out", str(out)]
    done = subprocess.run(command, check=False)
    if not (out / "leaderboard.json").is_file():
        raise SystemExit(f"docket report exited {done.returncode} and wrote no leaderboard")
    return out / "leaderboard.json"


def _measured(report: Path, run: str) -> tuple[list[dict], list[dict[str, str]]]:
    data = json.loads(report.read_text(encoding="utf-8"))
    logs = {
        e["log"]
        for b in data.get("benchmarks", [])
        for t in b.get("tables", [])
        for e in t.get("entries", [])
    } | {u["log"] for u in data.get("unscored", []) if u.get("log")}
    headers = {log: read_eval_log(log, header_only=True).eval for log in logs}
    dates = {log: spec.created[:10] for log, spec in headers.items()}
    versions = {log: str(spec.task_version) for log, spec in headers.items()}
    folders = _folders()
    rows = rows_from_leaderboard(data, dates, run, folders, versions)
    return rows, model_free_tasks(data, folders)


def _folders() -> dict[str, str]:
    """Each listed task's benchmark folder (where its README is), from the listings' files."""
    found: dict[str, str] = {}
    for listing in sorted(BENCHMARKS.glob("*/listing.yaml")):
        for entry in yaml.safe_load(listing.read_text(encoding="utf-8")).get("tasks") or []:
            found[str(entry["name"])] = listing.parent.name
    return found


def main() -> None:
    """Run (unless `--render`), merge into the results file, render every README block."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="local", help="suite preset (default: local)")
    parser.add_argument("--limit", type=int, default=10, help="samples per task (default 10)")
    parser.add_argument("--task", action="append", default=[], help="only this task (repeat)")
    parser.add_argument("--log-dir", type=Path, help="keep the logs here (default: a temp dir)")
    parser.add_argument("--from-logs", type=Path, help="take the rows of these logs instead")
    parser.add_argument("--run", help="with --from-logs: the command that wrote them")
    parser.add_argument("--render", action="store_true", help="only re-render the READMEs")
    args = parser.parse_args()
    if args.from_logs and not args.run:
        parser.error("--from-logs needs --run, the command that wrote the logs")
    results = load_results(RESULTS) if RESULTS.is_file() else {"rows": []}
    folders = _folders()
    rows = [r | {"benchmark": folders.get(r["task"], r["benchmark"])} for r in results["rows"]]
    free = results.get("model_free", [])
    if not args.render:
        run = args.run or f"docket suite {args.preset} --limit {args.limit}"
        with tempfile.TemporaryDirectory() as scratch:
            if args.from_logs:
                report = _report(args.from_logs, Path(scratch) / "report")
            else:
                log_dir = args.log_dir or Path(scratch) / "logs"
                report = _run(args.preset, args.limit, args.task, log_dir)
            new_rows, new_free = _measured(report, run)
        rows = merge(rows, new_rows)
        free = sorted({(f["benchmark"], f["task"]) for f in [*free, *new_free]})
        free = [{"benchmark": b, "task": t} for b, t in free]
        write_results(RESULTS, {"rows": rows, "model_free": free})
    for benchmark, readme in readmes().items():
        replace_table(readme, BLOCK, render(rows, benchmark, free))


if __name__ == "__main__":
    main()
