"""`make demo`: `docket suite offline`, then a bounded `docket suite local`, one leaderboard.

Every task registered in `docket._registry.REGISTERED["task"]` runs on the scripted reference
policies (comply, refuse, and each task's own from its listing.yaml `suite:` block), then on the
embedded SmolLM2-135M-Instruct while the preset's time budget lasts
(`benchmarks/presets/offline.yaml`). Then the `local` preset (`benchmarks/presets/local.yaml`:
the embedded Qwen2.5-Coder-0.5B-Instruct with every role bound to it) runs on `QWEN_TASKS` only,
one sample each with `QWEN_MAX_TOKENS`-token replies, so the demo stays within its budget; its
logs land in the same log directory, so the leaderboard written last covers all three models.
`docket suite local` without these bounds runs every task (see the preset).
"""

from __future__ import annotations

import argparse

from docket import cli
from docket.suite import registered_tasks

#: The tasks the demo runs on docket/qwen: one short model call per sample (no agent loop, no
#: role, no chain of thought), so one sample each fits the demo's budget on 2 shared CPU cores
#: (measured: README.md). The other tasks take minutes per sample there (`docket suite local`).
QWEN_TASKS = (
    "docket/rl_arith",
    "docket/rl_constraints",
    "docket/context_qa",
)
#: Samples per task and reply budget of the demo's docket/qwen runs.
QWEN_LIMIT = 1
QWEN_MAX_TOKENS = 96


def demo_tasks() -> list[str]:
    """Every docket task registered for Inspect, in registry order.

    Returns:
        The task names (`docket/<task>`).
    """
    return registered_tasks()


def qwen_tasks(chosen: list[str] | None) -> list[str]:
    """The demo's docket/qwen tasks among `chosen` (all of `QWEN_TASKS` when None).

    Args:
        chosen: The `--task` values, or None for every task.

    Returns:
        The tasks to run on docket/qwen, in `QWEN_TASKS` order (empty: no Qwen run).
    """
    return [t for t in QWEN_TASKS if chosen is None or t in chosen]


def _common(args: argparse.Namespace) -> list[str]:
    forwarded = ["--log-dir", args.log_dir, "--display", args.display]
    return forwarded + (["--out", args.out] if args.out else [])


def offline_argv(args: argparse.Namespace) -> list[str]:
    """The `docket suite offline` command line of the demo's first part.

    Args:
        args: The demo's parsed flags.

    Returns:
        The arguments of `docket.cli.main`.
    """
    forwarded = ["suite", "offline", *_common(args)]
    forwarded += ["--limit", str(args.limit)] if args.limit else []
    forwarded += ["--stage", "scripted"] if args.no_smollm2 else []
    for task in args.task or []:
        forwarded += ["--task", task]
    return forwarded


def qwen_argv(args: argparse.Namespace) -> list[str] | None:
    """The bounded `docket suite local` command line of the demo's second part.

    Args:
        args: The demo's parsed flags.

    Returns:
        The arguments of `docket.cli.main`, or None when no Qwen task is chosen or `--no-qwen`.
    """
    tasks = [] if args.no_qwen else qwen_tasks(args.task)
    if not tasks:
        return None
    forwarded = ["suite", "local", *_common(args)]
    forwarded += ["--limit", str(args.limit or QWEN_LIMIT), "--max-tokens", str(QWEN_MAX_TOKENS)]
    for task in tasks:
        forwarded += ["--task", task]
    return forwarded


def main(argv: list[str] | None = None) -> int:
    """`docket suite offline`, then the bounded `docket suite local`.

    Args:
        argv: Command-line arguments (default: `sys.argv[1:]`).

    Returns:
        0 when every log of both runs succeeded, else 1 (or the first run's exit code 2 for bad
        input, after which nothing else runs).
    """
    parser = argparse.ArgumentParser(prog="python -m docket.demo", description=__doc__)
    parser.add_argument("--log-dir", default="logs/demo", help="where Inspect writes its logs")
    parser.add_argument("--out", default=None, help="report directory (default LOGDIR-report)")
    parser.add_argument("--no-smollm2", action="store_true", help="skip the SmolLM2 stage")
    parser.add_argument("--no-qwen", action="store_true", help="skip the docket/qwen runs")
    parser.add_argument("--limit", type=int, default=None, help="samples per task (all stages)")
    parser.add_argument("--task", action="append", help="only these tasks (default: all)")
    parser.add_argument("--display", default="plain", help="Inspect display (plain, rich, none)")
    args = parser.parse_args(argv)
    status = cli.main(offline_argv(args))
    if status == 2:
        return status
    local = qwen_argv(args)
    if local is not None:
        status = max(status, cli.main(local))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
