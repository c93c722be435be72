"""`make demo`: `docket suite offline`, the main job on the embedded defaults, offline.

Every task registered in `docket._registry.REGISTERED["task"]` runs on the scripted reference
policies (comply, refuse, and each task's own below), then on the embedded SmolLM2-135M-Instruct
while the preset's time budget lasts; the leaderboard follows (`benchmarks/presets/offline.yaml`).

`DEMO_ROLES` and `DEMO_POLICIES` are the offline preset's per-task bindings (`roles: scripted`,
`reference_policies: true`): each benchmark adds its own entries here.
"""

from __future__ import annotations

import argparse
from typing import Any

#: Scripted policies bound to a task's model roles; every role a task requires must be
#: bound here (an unbound role is an error). Policies that do not exist are skipped.
DEMO_ROLES: dict[str, dict[str, str]] = {
    "docket/anchor_direct": {"judge": "judge"},
    "docket/anchor_audit": {"auditor": "auditor", "judge": "judge"},
    "docket/correct_localization": {"distiller": "correct_distiller"},
    "docket/scsuff": {"generator": "scsuff_generator"},
    "docket/scsuff_hints": {"generator": "scsuff_generator", "judge": "scsuff_judge"},
    "docket/toy_math_sar": {"teacher": "toy_math_teacher"},
}


#: Each benchmark's own reference policies (known scores, see its README), run beside
#: comply/refuse so the leaderboard shows the ceiling and a baseline. Missing ones are skipped.
DEMO_POLICIES: dict[str, list[dict[str, Any]]] = {
    "docket/anchor_direct": [{"policy": "anchor_target"}],
    "docket/anchor_audit": [
        {"policy": "anchor_target", "strategy": "fabricated_authority", "overreach": 1}
    ],
    "docket/correct_localization": [
        {"policy": "correct_oracle"},
        {"policy": "correct_first_step"},
        {"policy": "correct_surface"},  # the surface baseline (as -T method=surface_baseline)
        {"policy": "correct_checker"},
    ],
    "docket/scsuff": [{"policy": "scsuff_rule"}, {"policy": "scsuff_constant"}],
    "docket/scsuff_hints": [{"policy": "scsuff_rule"}],
    "docket/docval_grounding": [{"policy": "docval_oracle"}, {"policy": "docval_label_right"}],
    "docket/docval_teacher": [{"policy": "docval_teacher"}],
    "docket/rl_arith": [{"policy": "rl_arith_oracle"}, {"policy": "rl_arith_first_operand"}],
    "docket/rl_constraints": [
        {"policy": "rl_constraints_oracle"},
        {"policy": "rl_constraints_constant"},
    ],
    "docket/context_qa": [{"policy": "context_qa_reader"}, {"policy": "context_qa_first_fact"}],
    "docket/fed_topics": [{"policy": "fed_topics_first_label"}],
    "docket/spatial_relations": [{"policy": "spatial_always_yes"}],
    "docket/erm_rag": [{"policy": "erm_reader"}, {"policy": "erm_reader", "mode": "constant"}],
    "docket/toy_math": [
        {"policy": "toy_math_student", "error_rate": 0.0},
        {"policy": "toy_math_constant"},
    ],
    "docket/toy_math_sar": [{"policy": "toy_math_student", "error_rate": 0.5}],
}


def demo_tasks() -> list[str]:
    """Every docket task registered for Inspect, in registry order."""
    from docket.suite import registered_tasks

    return registered_tasks()


def main(argv: list[str] | None = None) -> int:
    """`docket suite offline` with the demo's historical flags; 0 when every log succeeded."""
    parser = argparse.ArgumentParser(prog="python -m docket.demo", description=__doc__)
    parser.add_argument("--log-dir", default="logs/demo", help="where Inspect writes its logs")
    parser.add_argument("--out", default=None, help="report directory (default LOGDIR-report)")
    parser.add_argument("--no-smollm2", action="store_true", help="skip the embedded real model")
    parser.add_argument("--limit", type=int, default=None, help="samples per task (all stages)")
    parser.add_argument("--task", action="append", help="only these tasks (default: all)")
    parser.add_argument("--display", default="plain", help="Inspect display (plain, rich, none)")
    args = parser.parse_args(argv)
    from docket.cli import main as docket_main

    forwarded = ["suite", "offline", "--log-dir", args.log_dir, "--display", args.display]
    forwarded += ["--out", args.out] if args.out else []
    forwarded += ["--limit", str(args.limit)] if args.limit else []
    forwarded += ["--stage", "scripted"] if args.no_smollm2 else []
    for task in args.task or []:
        forwarded += ["--task", task]
    return docket_main(forwarded)


if __name__ == "__main__":
    raise SystemExit(main())
