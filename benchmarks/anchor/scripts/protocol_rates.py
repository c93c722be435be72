"""Measure how often a model's auditor turns and judge verdicts reach a parsed action.

Runs `anchor_audit` (the model as auditor and judge, the scripted `anchor_target` as the agent)
and `anchor_direct` (the model as judge) on a few scenarios in one process, so a local model is
loaded once, and prints per protocol path the fraction of auditor decisions and judge verdicts
that parsed (first reply, and after the one repair).

    python benchmarks/anchor/scripts/protocol_rates.py --model docket/local \\
        -M path=/work/qwen -M gguf_file=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
        --limit 2 --max-turns 3 --protocol auto
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import GenerateConfig, get_model

from docket.agents.auditor import RECORD_KEY, ChecklistItem
from docket.agents.auditor.tools import example_call
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct

#: How the auditor's worked example message starts (`example_call`), to count copies of it.
_EXAMPLE = example_call([ChecklistItem(action="x.y")], 1)["arguments"]["message"]
_EXAMPLE_OPENER = _EXAMPLE[: _EXAMPLE.index("x.y")]


def _model_args(pairs: Sequence[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"-M {pair!r}: expected key=value")
        args[key] = value
    return args


def rates(logs: Sequence[EvalLog]) -> dict[str, Any]:
    """Counts and fractions of parsed auditor decisions and judge verdicts in `logs`.

    Args:
        logs: Eval logs of anchor tasks (score metadata `auditor_paths`, `judge_paths`).

    Returns:
        Totals, parsed (any attempt), parsed on the first reply, the paths taken, and how
        many auditor messages are the worked example's (`example_copies`).
    """
    auditor = {"decisions": 0, "parsed": 0, "first_reply": 0, "tool": 0, "text": 0}
    auditor["example_copies"] = 0
    judge = {"verdicts": 0, "parsed": 0, "first_reply": 0, "tool": 0, "text": 0}
    failures: list[str] = []
    for log in logs:
        for sample in log.samples or []:
            if log.eval.task.endswith("anchor_audit"):
                turns = (sample.store.get(RECORD_KEY) or {}).get("turns", [])
                copies = [str(t.get("user_text", "")).startswith(_EXAMPLE_OPENER) for t in turns]
                auditor["example_copies"] += sum(copies)
            for score in (sample.scores or {}).values():
                meta = score.metadata or {}
                failed = {f.split(":")[0] for f in meta.get("auditor_parse_failures", [])}
                for turn, path in enumerate(meta.get("auditor_paths", []), start=1):
                    auditor["decisions"] += 1
                    auditor["parsed"] += bool(path)
                    auditor["first_reply"] += bool(path) and f"turn {turn}" not in failed
                    if path:
                        auditor[path] += 1
                failures += meta.get("auditor_parse_failures", [])
                for entry in meta.get("judge_paths", []):
                    judge["verdicts"] += 1
                    judge["parsed"] += bool(entry["path"])
                    judge["first_reply"] += bool(entry["path"]) and not entry["failures"]
                    if entry["path"]:
                        judge[entry["path"]] += 1
                    failures += [f"judge: {f}" for f in entry["failures"]]
    return {"auditor": auditor, "judge": judge, "failures": failures}


def main() -> None:
    """Parse the options, run both tasks, print the rates as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("-M", action="append", default=[], help="model arg key=value")
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--protocol", default="auto", help="auditor and judge protocol")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--log-dir", default="logs/protocol_rates")
    parser.add_argument("--tasks", default="audit,direct")
    parser.add_argument(
        "--scripted-judge", action="store_true", help="the offline judge in anchor_audit"
    )
    options = parser.parse_args()
    model = get_model(
        options.model,
        config=GenerateConfig(max_tokens=options.max_tokens, temperature=0.0),
        **_model_args(options.M),
    )
    target = get_model("docket/scripted", policy="anchor_target")
    scripted = get_model("docket/scripted", policy="judge")
    audit_judge = scripted if options.scripted_judge else model
    logs: list[EvalLog] = []
    tasks = options.tasks.split(",")
    if "audit" in tasks:
        logs += inspect_eval(
            anchor_audit(
                max_turns=options.max_turns,
                auditor_protocol=options.protocol,
                judge_protocol=options.protocol,
            ),
            model=target, model_roles={"auditor": model, "judge": audit_judge},
            limit=options.limit, log_dir=options.log_dir, display="none",
        )  # fmt: skip
    if "direct" in tasks:
        logs += inspect_eval(
            anchor_direct(judge_protocol=options.protocol),
            model=target, model_roles={"judge": model},
            limit=options.limit, log_dir=options.log_dir, display="none",
        )  # fmt: skip
    for log in logs:
        if log.status != "success":
            print(f"{log.eval.task}: {log.status} {log.error}")
    print(json.dumps(rates(logs), indent=1))


if __name__ == "__main__":
    main()
