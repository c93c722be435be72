"""`make demo`: the main job on the embedded defaults, offline.

Runs every docket benchmark that exists on the scripted reference models and the embedded
SmolLM2-135M-Instruct, then prints a results table and where the logs are.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import Model, get_model
from rich.console import Console
from rich.table import Table

DEMO_TASKS = ["docket/smoke"]


def demo_models(include_smollm2: bool = True) -> list[Model]:
    """The reference models of the demo: scripted comply/refuse and the embedded SmolLM2."""
    models = [
        get_model("docket/scripted", policy="comply"),
        get_model("docket/scripted", policy="refuse"),
    ]
    if include_smollm2:
        models.append(get_model("docket/smollm2"))
    return models


def _headline(log: EvalLog) -> str:
    if log.status != "success" or log.results is None or not log.results.scores:
        return f"[red]{log.status}[/red]"
    metrics = log.results.scores[0].metrics
    return ", ".join(f"{name}={metric.value:.3f}" for name, metric in metrics.items())


def _model_label(log: EvalLog) -> str:
    args = log.eval.model_args or {}
    suffix = ",".join(f"{k}={v}" for k, v in args.items())
    return f"{log.eval.model} {suffix}".strip()


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return 0 when every log succeeded."""
    parser = argparse.ArgumentParser(prog="python -m docket.demo", description=__doc__)
    parser.add_argument("--log-dir", default="logs/demo", help="where Inspect writes its logs")
    parser.add_argument("--no-smollm2", action="store_true", help="skip the embedded real model")
    parser.add_argument("--limit", type=int, default=None, help="samples per task")
    args = parser.parse_args(argv)
    console = Console()
    log_dir = Path(args.log_dir).resolve()
    logs = inspect_eval(
        DEMO_TASKS,
        model=demo_models(include_smollm2=not args.no_smollm2),
        log_dir=str(log_dir),
        limit=args.limit,
        display="plain",
    )
    table = Table(title="docket demo")
    for column in ("task", "model", "samples", "headline"):
        table.add_column(column)
    for log in logs:
        samples = str(log.results.completed_samples) if log.results else "0"
        table.add_row(log.eval.task, _model_label(log), samples, _headline(log))
    console.print(table)
    console.print(f"Logs: {log_dir}  (browse them with: inspect view --log-dir {log_dir})")
    return 0 if all(log.status == "success" for log in logs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
