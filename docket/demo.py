"""`make demo`: the main job on the embedded defaults, offline.

Runs an Inspect eval set over every task registered in `docket._registry.REGISTERED["task"]` with
the scripted reference models (comply, refuse) and the embedded SmolLM2-135M-Instruct, with small
per-task sample limits so the whole job ends within about 15 minutes on 2 CPU cores, then builds
the leaderboard with `docket report` and prints the path of its HTML page.

Scripted models run on every task first; SmolLM2 runs next, task by task, until the time budget
is spent. Each task gets its own eval-set directories (`LOGDIR/<task>/scripted` and `.../smollm2`),
so a re-run resumes only what is missing and a new benchmark joins the next run automatically.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path
from typing import Any

from inspect_ai import eval_set
from inspect_ai.model import Model, get_model
from rich.console import Console

#: Samples per task for the scripted models, and for SmolLM2 (one CPU generation is seconds).
SCRIPTED_LIMIT = 5
SMOLLM2_LIMIT = 1
#: Seconds per sample before Inspect stops it (bounds a rambling real model).
SAMPLE_TIME_LIMIT = 90
#: Tokens per generation and messages per sample for the real model.
SMOLLM2_MAX_TOKENS = 128
SMOLLM2_MESSAGE_LIMIT = 8
#: Wall-clock minutes after which remaining SmolLM2 runs are skipped (the report still follows).
BUDGET_MINUTES = 13.0


#: Scripted policies bound to a task's model roles; unlisted roles fall back as each benchmark's
#: README says (usually to the model under test). Policies that do not exist are skipped.
DEMO_ROLES: dict[str, dict[str, str]] = {
    "docket/anchor_direct": {"judge": "judge"},
    "docket/anchor_audit": {"auditor": "auditor", "judge": "judge"},
    "docket/correct_localization": {"distiller": "correct_distiller"},
}


def demo_roles(task: str) -> dict[str, Model]:
    """The scripted role models of `task` in the demo."""
    from docket.agents.scripted.policy import load_policies

    policies = load_policies()
    return {
        role: get_model("docket/scripted", policy=name)
        for role, name in DEMO_ROLES.get(task, {}).items()
        if name in policies
    }


def demo_tasks() -> list[str]:
    """Every docket task registered for Inspect, in registry order."""
    registry = importlib.import_module("docket._registry")
    return list(registry.REGISTERED["task"])


#: Each benchmark's own reference policies (known scores, see its README), run beside
#: comply/refuse so the leaderboard shows the ceiling and a baseline. Missing ones are skipped.
DEMO_POLICIES: dict[str, list[dict[str, Any]]] = {
    "docket/anchor_audit": [
        {"policy": "anchor_target", "strategy": "fabricated_authority", "overreach": 1}
    ],
    "docket/correct_localization": [
        {"policy": "correct_oracle"},
        {"policy": "correct_first_step"},
        {"policy": "correct_surface"},  # the surface baseline (as -T method=surface_baseline)
        {"policy": "correct_checker"},
    ],
    "docket/scsuff": [{"policy": "scsuff_rule"}],
    "docket/scsuff_hints": [{"policy": "scsuff_rule"}],
    "docket/docval_grounding": [{"policy": "docval_oracle"}, {"policy": "docval_label_right"}],
    "docket/docval_teacher": [{"policy": "docval_teacher"}],
}


def scripted_models(task: str | None = None) -> list[Model]:
    """The deterministic reference models: always comply, always refuse, and `task`'s own."""
    from docket.agents.scripted.policy import load_policies

    policies = load_policies()
    extra = [args for args in DEMO_POLICIES.get(task or "", []) if args["policy"] in policies]
    return [
        get_model("docket/scripted", policy="comply"),
        get_model("docket/scripted", policy="refuse"),
        *(get_model("docket/scripted", **args) for args in extra),
    ]


def _eval_set(task: str, models: list[Model], log_dir: Path, display: str, **limits: int) -> bool:
    """One eval set; an exception (a broken benchmark or model) is printed, not raised."""
    try:
        success, _ = eval_set(
            tasks=task,
            model=models,
            model_roles=demo_roles(task) or None,
            log_dir=str(log_dir),
            time_limit=SAMPLE_TIME_LIMIT,
            retry_attempts=1,
            fail_on_error=False,
            display=display,  # type: ignore[arg-type]
            **limits,  # type: ignore[arg-type]
        )
    except Exception as ex:  # noqa: BLE001 - the demo goes on with the other tasks
        Console().print(f"[red]{task}: {type(ex).__name__}: {ex}[/red]", soft_wrap=True)
        return False
    return bool(success)


def run_demo(
    log_dir: Path,
    tasks: list[str],
    include_smollm2: bool = True,
    scripted_limit: int = SCRIPTED_LIMIT,
    smollm2_limit: int = SMOLLM2_LIMIT,
    display: str = "plain",
    budget_minutes: float = BUDGET_MINUTES,
) -> bool:
    """Scripted models on every task first, then SmolLM2 while the time budget lasts.

    Returns True when every eval set that ran succeeded (a skip for time is only reported).
    """
    console = Console()
    started = time.monotonic()
    ok = True
    for task in tasks:
        folder = log_dir / task.replace("/", "_")
        ok &= _eval_set(
            task, scripted_models(task), folder / "scripted", display, limit=scripted_limit
        )
    if not include_smollm2:
        return ok
    for task in tasks:
        if (time.monotonic() - started) / 60 > budget_minutes:
            console.print(f"[yellow]time budget spent: SmolLM2 skipped on {task}[/yellow]")
            continue
        folder = log_dir / task.replace("/", "_")
        ok &= _eval_set(
            task,
            [get_model("docket/smollm2")],
            folder / "smollm2",
            display,
            limit=smollm2_limit,
            max_tokens=SMOLLM2_MAX_TOKENS,
            message_limit=SMOLLM2_MESSAGE_LIMIT,
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the demo and build its report; 0 when every log succeeded and was readable."""
    parser = argparse.ArgumentParser(prog="python -m docket.demo", description=__doc__)
    parser.add_argument("--log-dir", default="logs/demo", help="where Inspect writes its logs")
    parser.add_argument("--out", default=None, help="report directory (default LOGDIR/../report)")
    parser.add_argument("--no-smollm2", action="store_true", help="skip the embedded real model")
    parser.add_argument("--limit", type=int, default=SCRIPTED_LIMIT, help="samples per task")
    parser.add_argument(
        "--smollm2-limit", type=int, default=SMOLLM2_LIMIT, help="samples per task for SmolLM2"
    )
    parser.add_argument("--task", action="append", help="only these tasks (default: all)")
    parser.add_argument("--display", default="plain", help="Inspect display (plain, rich, none)")
    parser.add_argument(
        "--budget-minutes", type=float, default=BUDGET_MINUTES, help="stop starting SmolLM2 runs"
    )
    args = parser.parse_args(argv)
    console = Console()
    log_dir = Path(args.log_dir).resolve()
    out_dir = Path(args.out).resolve() if args.out else log_dir.parent / "report"
    tasks = args.task or demo_tasks()
    console.print(f"docket demo: {len(tasks)} task(s): {', '.join(tasks)}")
    started = time.monotonic()
    ok = run_demo(
        log_dir,
        tasks,
        include_smollm2=not args.no_smollm2,
        scripted_limit=args.limit,
        smollm2_limit=args.smollm2_limit,
        display=args.display,
        budget_minutes=args.budget_minutes,
    )
    from docket.reports.leaderboard import build_report

    files = build_report(log_dir, out_dir)
    for error in files.errors:
        console.print(f"[red]error:[/red] {error}")
    minutes = (time.monotonic() - started) / 60
    console.print(f"Logs: {log_dir}  (browse them with: inspect view --log-dir {log_dir})")
    console.print(f"Markdown: {files.markdown}")
    console.print(f"Finished in {minutes:.1f} min. Leaderboard HTML:")
    print(files.html)
    return 0 if ok and not files.errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
