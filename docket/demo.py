"""`make demo`: `docket suite offline`, the main job on the embedded defaults, offline.

Every task registered in `docket._registry.REGISTERED["task"]` runs on the scripted reference
policies (comply, refuse, and each task's own from its listing.yaml `suite:` block), then on the
embedded SmolLM2-135M-Instruct while the preset's time budget lasts; the leaderboard follows
(`benchmarks/presets/offline.yaml`). `python -m docket.demo` is the historical wrapper.
"""

from __future__ import annotations

import argparse

from docket import cli
from docket.suite import registered_tasks


def demo_tasks() -> list[str]:
    """Every docket task registered for Inspect, in registry order.

    Returns:
        The task names (`docket/<task>`).
    """
    return registered_tasks()


def main(argv: list[str] | None = None) -> int:
    """`docket suite offline` with the demo's historical flags.

    Args:
        argv: Command-line arguments (default: `sys.argv[1:]`).

    Returns:
        0 when every log succeeded (the exit code of `docket suite`).
    """
    parser = argparse.ArgumentParser(prog="python -m docket.demo", description=__doc__)
    parser.add_argument("--log-dir", default="logs/demo", help="where Inspect writes its logs")
    parser.add_argument("--out", default=None, help="report directory (default LOGDIR-report)")
    parser.add_argument("--no-smollm2", action="store_true", help="skip the embedded real model")
    parser.add_argument("--limit", type=int, default=None, help="samples per task (all stages)")
    parser.add_argument("--task", action="append", help="only these tasks (default: all)")
    parser.add_argument("--display", default="plain", help="Inspect display (plain, rich, none)")
    args = parser.parse_args(argv)
    forwarded = ["suite", "offline", "--log-dir", args.log_dir, "--display", args.display]
    forwarded += ["--out", args.out] if args.out else []
    forwarded += ["--limit", str(args.limit)] if args.limit else []
    forwarded += ["--stage", "scripted"] if args.no_smollm2 else []
    for task in args.task or []:
        forwarded += ["--task", task]
    return cli.main(forwarded)


if __name__ == "__main__":
    raise SystemExit(main())
