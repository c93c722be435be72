"""Scale on an S3 store, measured: shard processes of one suite, and a report over many logs.

`python reports/scripts/scale.py` starts a local S3 store (SeaweedFS from the dev extra,
`docket.core.s3_server`; `--store s3://bucket/prefix` uses a running one the AWS variables point
at instead), then:

1. **Shards.** A preset of `--samples` scripted samples (`docket/toy_math`, ten scripted
   students with error rates 0.0 ... 0.9, `samples / 10` each: ten units of task x model x
   stage) runs as 1, 2 and 3 concurrent `docket suite --shard I/N` processes, each N into a
   fresh prefix of the store. Measured: wall time from the first start to the last exit, the
   processes' CPU time (user + system, their children included) and peak RSS, and the 1-minute
   load average before and after. `docket report` of every prefix must give the scores of
   N = 1 (checked; the script fails otherwise).
2. **Report.** A store that has collected `--logs` logs: 50 rows (`docket/toy_math` on 50
   scripted students, 4 samples each, written by one `docket suite` process), each run
   `--logs / 50` times (the copies are those logs as earlier runs: a new eval id, created a day
   earlier per run, the health record recomputed; the report keeps the newest run of each row
   and lists the others as superseded, as it would for nightly runs). `docket report` over a
   quarter, half and all of them: wall time and peak RSS of the report process, and a
   least-squares line through the three (the cost per log). The same quarter with the health
   records stripped makes the report read every sample's events: the saving of reading headers
   and summaries only.

The results go to `reports/results/scale.json` and the README's `scale` table is rendered from
them (`--render`: render only). The machine's load is recorded with each number: on a shared
machine the wall times are upper bounds, and the CPU times are the steadier measure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

from docket.core import logstore
from docket.core.results_tables import replace_table, write_results
from docket.reports.health import HEALTH_KEY, health_record

HERE = Path(__file__).resolve().parents[1]
RESULTS = HERE / "results" / "scale.json"
README = HERE / "README.md"
TABLE = "scale"
SHARD_COUNTS = (1, 2, 3)
STUDENTS = 10
#: Rows of the report measurement, and samples per log.
ROWS = 50
SAMPLES_PER_LOG = 4


def _preset(path: Path, models: list[str], limit: int) -> Path:
    listed = ", ".join(models)
    path.write_text(
        "format: docket-suite/1\nname: scale\nlog_dir: logs/scale\ntasks: [docket/toy_math]\n"
        "roles: scripted\neval_args: {retry_attempts: 1, max_tasks: 8}\n"
        f"stages: [{{name: scripted, eval_args: {{limit: {limit}}}, models: [{listed}]}}]\n"
    )
    return path


def _student(rate: float) -> str:
    return f"{{model: docket/scripted, args: {{policy: toy_math_student, error_rate: {rate}}}}}"


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _run_all(commands: list[list[str]], env: dict[str, str], logs: Path) -> dict[str, Any]:
    """Start every command at once; wall time to the last exit, each one's CPU and peak RSS."""
    started = time.perf_counter()
    load = _load()
    pids: dict[int, int] = {}
    for index, command in enumerate(commands):
        with open(logs / f"process-{index}.log", "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        pids[process.pid] = index
    done: dict[int, dict[str, Any]] = {}
    while len(done) < len(pids):
        pid, status, usage = os.wait4(-1, 0)
        if pid not in pids:
            continue
        index = pids[pid]
        done[index] = {
            "exit": os.waitstatus_to_exitcode(status),
            "wall_s": round(time.perf_counter() - started, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        }
        if done[index]["exit"] != 0:
            tail = (logs / f"process-{index}.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(commands[index])} exited {done[index]['exit']}: {tail}")
    processes = [done[i] for i in range(len(commands))]
    return {
        "wall_s": max(p["wall_s"] for p in processes),
        "cpu_s": round(sum(p["cpu_s"] for p in processes), 2),
        "load_before": load,
        "load_after": _load(),
        "processes": processes,
    }


def _docket(*args: str) -> list[str]:
    return [sys.executable, "-m", "docket.cli", *args]


def _scores(report: Path) -> dict[str, Any]:
    data = json.loads((report / "leaderboard.json").read_text())
    return {
        e["model"]: (e["value"], e["n"], e["ci_low"], e["ci_high"])
        for b in data["benchmarks"]
        for t in b["tables"]
        for e in t["entries"]
    }


def measure_shards(root: str, samples: int, env: dict[str, str], work: Path) -> dict[str, Any]:
    """1, 2 and 3 concurrent shard processes of `samples` scripted samples on the store."""
    limit = samples // STUDENTS
    preset = _preset(work / "shards.yaml", [_student(i / 10) for i in range(STUDENTS)], limit)
    rows = []
    reference: dict[str, Any] | None = None
    for count in SHARD_COUNTS:
        prefix = f"{root}/shards-{count}"
        commands = [
            [*_docket("suite", str(preset), "--shard", f"{i}/{count}", "--log-dir", prefix)]
            + ["--display", "none"]
            for i in range(1, count + 1)
        ]
        run = _run_all(commands, env, work)
        report = _run_all([_docket("report", prefix, "-o", str(work / f"r{count}"))], env, work)
        scores = _scores(work / f"r{count}")
        reference = reference or scores
        if scores != reference or len(scores) != STUDENTS:
            raise RuntimeError(f"{count} shards: the leaderboard differs from one process's")
        rows.append({"shards": count, **run, "report_wall_s": report["wall_s"]})
    single = rows[0]["wall_s"]
    for row in rows:
        row["speedup"] = round(single / row["wall_s"], 2)
    return {"samples": limit * STUDENTS, "units": STUDENTS, "rows": rows}


def _earlier_run(log: EvalLog, days: int) -> EvalLog:
    """`log` as a run of the same row `days` days earlier: a new eval id, its health record
    recomputed (the record's digest names the eval id)."""
    copy = log.model_copy(deep=True)
    copy.eval.eval_id = uuid.uuid4().hex[:22]
    copy.eval.run_id = uuid.uuid4().hex[:22]
    earlier = datetime.fromisoformat(log.eval.created) - timedelta(days=days)
    copy.eval.created = earlier.isoformat()
    record = health_record(copy.eval.eval_id, copy.samples or [])
    copy.eval.metadata = {**(copy.eval.metadata or {}), HEALTH_KEY: record}
    return copy


def _history(base: list[Path], runs: int, out: Path) -> list[list[Path]]:
    """The base logs and `runs - 1` earlier runs of each, as files under `out`: per run, its
    logs."""
    found: list[list[Path]] = [[] for _ in range(runs)]
    for path in base:
        log = read_eval_log(str(path))
        for run in range(runs):
            target = out / f"run-{run:03d}" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if run == 0:
                shutil.copy2(path, target)
            else:
                write_eval_log(_earlier_run(log, run), str(target))
            found[run].append(target)
    return found


def _strip_records(paths: list[Path], out: Path) -> list[Path]:
    copies = []
    for path in paths:
        log = read_eval_log(str(path))
        log.eval.metadata = {k: v for k, v in (log.eval.metadata or {}).items() if k != HEALTH_KEY}
        target = out / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        write_eval_log(log, str(target))
        copies.append(target)
    return copies


def _upload(paths: list[Path], local_root: Path, prefix: str) -> float:
    from fsspec.core import url_to_fs

    started = time.perf_counter()
    fs, _ = url_to_fs(prefix)
    base = prefix.removeprefix("s3://")
    remote = [f"{base}/{p.relative_to(local_root).as_posix()}" for p in paths]
    fs.put([str(p) for p in paths], remote)
    return round(time.perf_counter() - started, 2)


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares intercept and slope of y over x."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    return mean_y - slope * mean_x, slope


def measure_report(root: str, logs: int, env: dict[str, str], work: Path) -> dict[str, Any]:
    """`docket report` over a quarter, half and all of a store of `logs` logs."""
    local = work / "base"
    models = [_student(round(i / ROWS, 4)) for i in range(ROWS)]
    preset = _preset(work / "rows.yaml", models, SAMPLES_PER_LOG)
    command = _docket("suite", str(preset), "--shard", "1/1", "--log-dir", str(local))
    written = _run_all([[*command, "--display", "none"]], env, work)
    base = [Path(p) for p in logstore.find_logs(local)]
    if len(base) != ROWS:
        raise RuntimeError(f"the suite wrote {len(base)} logs, not {ROWS}")
    started = time.perf_counter()
    runs = _history(base, max(1, logs // ROWS), work / "history")
    copied_s = round(time.perf_counter() - started, 2)
    rows = []
    for share in (4, 2, 1):
        chosen = [p for run in runs[: len(runs) // share] for p in run]
        prefix = f"{root}/report-{len(chosen)}"
        upload = _upload(chosen, work / "history", prefix)
        out = work / f"report-{len(chosen)}"
        run = _run_all([_docket("report", prefix, "-o", str(out))], env, work)
        if len(_scores(out)) != ROWS:
            raise RuntimeError(f"report over {len(chosen)} logs: not {ROWS} rows")
        rows.append({"logs": len(chosen), "records": True, "upload_s": upload, **run})
    quarter = [p for run in runs[: len(runs) // 4] for p in run]
    bare = _strip_records(quarter, work / "bare")
    prefix = f"{root}/report-bare-{len(bare)}"
    upload = _upload(bare, work / "bare", prefix)
    run = _run_all([_docket("report", prefix, "-o", str(work / "bare-report"))], env, work)
    if _scores(work / "bare-report") != _scores(work / f"report-{len(bare)}"):
        raise RuntimeError("the report without health records gives other scores")
    rows.append({"logs": len(bare), "records": False, "upload_s": upload, **run})
    with_records = [r for r in rows if r["records"]]
    wall = _fit([(r["logs"], r["wall_s"]) for r in with_records])
    cpu = _fit([(r["logs"], r["cpu_s"]) for r in with_records])
    memory = _fit([(r["logs"], r["processes"][0]["peak_rss_mb"]) for r in with_records])
    return {
        "rows": ROWS,
        "samples_per_log": SAMPLES_PER_LOG,
        "suite": {"logs": ROWS, **written},
        "history_s": copied_s,
        "reports": rows,
        "wall_fit": {"intercept_s": round(wall[0], 2), "per_log_ms": round(wall[1] * 1000, 1)},
        "cpu_fit": {"intercept_s": round(cpu[0], 2), "per_log_ms": round(cpu[1] * 1000, 1)},
        "rss_fit": {"intercept_mb": round(memory[0], 1), "per_log_kb": round(memory[1] * 1024)},
    }


def render(results: dict[str, Any]) -> str:
    """The README's `scale` table from the results file."""
    shards, report = results["shards"], results["report"]
    lines = [
        f"Shards: {shards['samples']} scripted samples in {shards['units']} units, on a machine "
        f"with {results['cpus']} CPUs.",
        "",
        "| shard processes | wall | speed-up | CPU, all processes | peak RSS per process | "
        "load before / after |",
        "|---|---|---|---|---|---|",
    ]
    for row in shards["rows"]:
        rss = max(p["peak_rss_mb"] for p in row["processes"])
        lines.append(
            f"| {row['shards']} | {row['wall_s']:.1f} s | {row['speedup']:.2f}x | "
            f"{row['cpu_s']:.1f} s | {rss:.0f} MB | {row['load_before']:.1f} / "
            f"{row['load_after']:.1f} |"
        )
    runs = report["reports"][2]["logs"] // report["rows"]
    lines += [
        "",
        f"Report: {report['rows']} rows of {report['samples_per_log']} samples, each run up to "
        f"{runs} times (the newest counts, the others are superseded).",
        "",
        "| logs | health records | wall | CPU | peak RSS | load before / after |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["reports"]:
        rss = row["processes"][0]["peak_rss_mb"]
        lines.append(
            f"| {row['logs']} | {'yes' if row['records'] else 'no: every sample read'} | "
            f"{row['wall_s']:.1f} s | {row['cpu_s']:.1f} s | {rss:.0f} MB | "
            f"{row['load_before']:.1f} / {row['load_after']:.1f} |"
        )
    wall, cpu, rss = report["wall_fit"], report["cpu_fit"], report["rss_fit"]
    lines += [
        "",
        f"Least squares over the three runs with records: wall {wall['intercept_s']:.1f} s + "
        f"{wall['per_log_ms']:.0f} ms per log, CPU {cpu['intercept_s']:.1f} s + "
        f"{cpu['per_log_ms']:.0f} ms per log, peak RSS {rss['intercept_mb']:.0f} MB + "
        f"{rss['per_log_kb']:.0f} KB per log.",
    ]
    return "\n".join(lines)


def measure(samples: int, logs: int, store: str | None) -> dict[str, Any]:
    """Both measurements on `store` (a prefix of a running store), or on a SeaweedFS started
    here.

    Args:
        samples: Scripted samples of the shard runs.
        logs: Logs of the largest report run.
        store: `s3://bucket/prefix` of a store the AWS variables point at; None: start one.

    Returns:
        The results file's contents.
    """
    from docket.core.s3_server import seaweedfs

    with tempfile.TemporaryDirectory(prefix="docket-scale-") as folder:
        work = Path(folder)
        results: dict[str, Any] = {"cpus": os.cpu_count()}
        if store is not None:
            env = {**os.environ, "INSPECT_LOG_LEVEL": "warning"}
            results["shards"] = measure_shards(store, samples, env, work)
            results["report"] = measure_report(store, logs, env, work)
            return results
        (work / "s3").mkdir()
        with seaweedfs(work / "s3") as server:
            env = {**os.environ, **server.env(), "INSPECT_LOG_LEVEL": "warning"}
            os.environ.update(server.env())
            root = server.url("scale")
            results["shards"] = measure_shards(root, samples, env, work)
            results["report"] = measure_report(root, logs, env, work)
        return results


def main(argv: list[str] | None = None) -> int:
    """Measure (unless `--render`), write the results file, render the README table.

    Args:
        argv: The command line (default: `sys.argv[1:]`).

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(prog="python reports/scripts/scale.py")
    parser.add_argument("--render", action="store_true", help="only re-render the README table")
    parser.add_argument("--samples", type=int, default=2000, help="shard runs' samples (2000)")
    parser.add_argument("--logs", type=int, default=1000, help="largest report's logs (1000)")
    parser.add_argument(
        "--store", help="s3://bucket/prefix of a running store (AWS_*); default: start SeaweedFS"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    args = parser.parse_args(argv)
    if not args.render:
        write_results(args.out, measure(args.samples, args.logs, args.store))
    replace_table(README, TABLE, render(json.loads(args.out.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
