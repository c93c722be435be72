"""`python methods/distill/scripts/sft.py --traces T.jsonl --heldout H.jsonl --out DIR`

DocVAL's two-stage SFT (`docket.methods.distill.sft`) on rows written by
`methods/distill/scripts/export.py`: the tiny random LLaVA by default (a CPU check), a real
compact VLM with `--model-id HuggingFaceTB/SmolVLM-256M-Instruct` (see
`methods/distill/README.md`). Writes `OUT/model` (a checkpoint `docket/local/OUT/model` loads)
and `OUT/report.json`; every `SFTConfig` field is an option (`--max-iterations 3`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from docket.methods.distill.export import read_jsonl
from docket.methods.distill.sft import HFStudent, SFTConfig, Student, run_two_stage, tiny_student


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point.

    Args:
        argv: The command line without the program name (default: `sys.argv[1:]`).
    """
    parser = argparse.ArgumentParser(description="DocVAL two-stage SFT.")
    parser.add_argument("--traces", required=True, help="accepted traces JSONL (export.py)")
    parser.add_argument("--heldout", required=True, help="held-out rows JSONL (export.py --all)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--model-id", default="", help="a VLM checkpoint or Hub id; default: tiny random LLaVA"
    )
    for name, value in asdict(SFTConfig()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    cfg = SFTConfig(**{k: getattr(args, k) for k in asdict(SFTConfig())})
    traces, heldout = read_jsonl(args.traces), read_jsonl(args.heldout)
    args.out.mkdir(parents=True, exist_ok=True)
    student: Student = (
        HFStudent(args.model_id, cfg)
        if args.model_id
        else tiny_student(args.out / "init", traces + heldout, cfg)
    )
    report = run_two_stage(student, traces, heldout, cfg)
    student.save(args.out / "model")
    (args.out / "report.json").write_text(json.dumps(asdict(report), indent=2))
    print(json.dumps(asdict(report)))


if __name__ == "__main__":
    main()
