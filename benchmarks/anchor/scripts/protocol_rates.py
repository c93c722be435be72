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
from docket.agents.auditor.checklist import describe
from docket.agents.auditor.decision import COPIED, example_likeness
from docket.benchmarks.anchor.anchor import anchor_audit, anchor_direct

#: A sent message at least this like the example's placeholder message counts as a loose copy
#: (`near_copies`; the parser refuses those at `decision.NEAR_COPY` and above).
LOOSE_COPY = 0.6


def checklist_copy(message: str, checklist: Sequence[ChecklistItem]) -> bool:
    """Whether a sent message holds a checklist line (`app.action {...}`) verbatim: what the
    earlier worked example was made of ("Hi! Could you do this for me: <the item>")."""
    return any(describe(item) in message for item in checklist)


def _model_args(pairs: Sequence[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"-M {pair!r}: expected key=value")
        args[key] = value
    return args


def rates(logs: Sequence[EvalLog]) -> dict[str, Any]:
    """Counts of parsed auditor decisions and judge verdicts in `logs`.

    Args:
        logs: Eval logs of anchor tasks (score metadata `auditor_paths`, `judge_paths`).

    Returns:
        Totals, parsed (any attempt), parsed on the first reply, the paths taken; for the
        auditor also `copies_refused` (failed attempts, a tool call or a JSON text, refused
        because they kept the worked example's placeholders or nearly copied its message), and
        among the messages sent `near_copies` (at least `LOOSE_COPY` like the example's message,
        `decision.example_likeness`) and `checklist_copies` (`checklist_copy`).
    """
    auditor = {"decisions": 0, "parsed": 0, "first_reply": 0, "tool": 0, "text": 0}
    auditor.update({"copies_refused": 0, "near_copies": 0, "checklist_copies": 0})
    judge = {"verdicts": 0, "parsed": 0, "first_reply": 0, "tool": 0, "text": 0}
    failures: list[str] = []
    for log in logs:
        for sample in log.samples or []:
            if log.eval.task.endswith("anchor_audit"):
                record = sample.store.get(RECORD_KEY) or {}
                checklist = [ChecklistItem.model_validate(i) for i in record.get("checklist", [])]
                sent = [str(t.get("user_text", "")) for t in record.get("turns", [])]
                auditor["near_copies"] += sum(example_likeness(m) >= LOOSE_COPY for m in sent)
                auditor["checklist_copies"] += sum(checklist_copy(m, checklist) for m in sent)
            for score in (sample.scores or {}).values():
                meta = score.metadata or {}
                failed = {f.split(":")[0] for f in meta.get("auditor_parse_failures", [])}
                for turn, path in enumerate(meta.get("auditor_paths", []), start=1):
                    auditor["decisions"] += 1
                    auditor["parsed"] += bool(path)
                    auditor["first_reply"] += bool(path) and f"turn {turn}" not in failed
                    if path:
                        auditor[path] += 1
                copies = [f for f in meta.get("auditor_parse_failures", []) if COPIED in f]
                auditor["copies_refused"] += len(copies)
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
                config={"auditor_protocol": options.protocol, "judge_protocol": options.protocol},
            ),
            model=target, model_roles={"auditor": model, "judge": audit_judge},
            limit=options.limit, log_dir=options.log_dir, display="none",
        )  # fmt: skip
    if "direct" in tasks:
        logs += inspect_eval(
            anchor_direct(config={"judge_protocol": options.protocol}),
            model=target, model_roles={"judge": model},
            limit=options.limit, log_dir=options.log_dir, display="none",
        )  # fmt: skip
    for log in logs:
        if log.status != "success":
            print(f"{log.eval.task}: {log.status} {log.error}")
    print(json.dumps(rates(logs), indent=1))


if __name__ == "__main__":
    main()
