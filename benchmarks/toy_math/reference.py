"""Toy arithmetic chains (`docket/toy_math`, `docket/toy_math_sar`): the three solution styles
and the reference policies.

A problem reads `Start at 7, add 5, then multiply by 3. What do you get?`. Its solution styles:

- A, the student's native style: one line per step, `7+5=12` / `12*3=36`, then `ANSWER: 36`;
- B, the teacher's rewrite: `We begin with 7. Adding 5 gives 12. Multiplying 12 by 3 gives 36.`;
- C, the teacher's own synthesis: `The expression is (7 + 5) * 3. ...`.

Policies:

* `toy_math_student` (`error_rate`, `seed`): writes style A and, for a share `error_rate` of
  (problem, generate seed) pairs, gets one step wrong by one to three (a slip the later steps
  carry on); different `GenerateConfig.seed`s sample different slips, as K samples should.
* `toy_math_teacher` (the `teacher` role): answers the SAR prompts of `benchmarks/toy_math/
  prompts.py`: `REPAIR` fixes the wrong numbers of the student's trace in place (style kept),
  `REWRITE` writes style B, `SOLVE` style C.
* `toy_math_answer_only_teacher` (an attacker in the `teacher` role): "repairs" a trace by
  rewriting only its `ANSWER:` line to the right result, leaving every wrong step line as it is
  (SAR's verifier must reject it: `scorer.trace_problem`).
* `toy_math_constant`: always `ANSWER: 0` (the no-reasoning baseline).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy

OPS = {"add": "+", "subtract": "-", "multiply by": "*"}
WORDS = {"+": "Adding", "-": "Subtracting", "*": "Multiplying"}
_START = re.compile(r"Start at (\d+)")
_STEP = re.compile(r"(add|subtract|multiply by) (\d+)")
_LINE = re.compile(r"^(-?\d+)([+*-])(\d+)=(-?\d+)$")
_TRACE = re.compile(r"Solution:\n(.*?)\n(?:End of solution|$)", re.DOTALL)


@dataclass(frozen=True)
class Chain:
    """A start value and (operator, operand) steps."""

    start: int
    steps: tuple[tuple[str, int], ...]

    def values(self) -> list[int]:
        """The running value after each step."""
        out, value = [], self.start
        for op, operand in self.steps:
            value = apply(value, op, operand)
            out.append(value)
        return out

    @property
    def answer(self) -> int:
        """The final value."""
        return self.values()[-1] if self.steps else self.start


def apply(value: int, op: str, operand: int) -> int:
    """One step."""
    return value + operand if op == "+" else value - operand if op == "-" else value * operand


def question(chain: Chain) -> str:
    """The problem text."""
    names = {v: k for k, v in OPS.items()}
    steps = ", then ".join(f"{names[op]} {n}" for op, n in chain.steps)
    return f"Start at {chain.start}, {steps}. What do you get?"


def parse_question(text: str) -> Chain | None:
    """The chain a problem text states (None when there is none)."""
    start = _START.search(text)
    if not start:
        return None
    steps = tuple((OPS[name], int(n)) for name, n in _STEP.findall(text[start.end() :]))
    return Chain(int(start.group(1)), steps) if steps else None


def style_a(chain: Chain, slip: tuple[int, int] | None = None) -> str:
    """The student's style; `slip` = (step, offset) makes that step's result wrong."""
    lines, value = [], chain.start
    for i, (op, operand) in enumerate(chain.steps):
        result = apply(value, op, operand) + (slip[1] if slip and slip[0] == i else 0)
        lines.append(f"{value}{op}{operand}={result}")
        value = result
    return "\n".join([*lines, f"ANSWER: {value}"])


def style_b(chain: Chain) -> str:
    """The teacher's rewrite style."""
    sentences, value = [f"We begin with {chain.start}."], chain.start
    for op, operand in chain.steps:
        result = apply(value, op, operand)
        verb = f"{WORDS[op]} {operand}" if op != "*" else f"Multiplying {value} by {operand}"
        sentences.append(f"{verb} gives {result}.")
        value = result
    return " ".join(sentences) + f"\nANSWER: {value}"


def style_c(chain: Chain) -> str:
    """The teacher's own synthesis style."""
    expression = str(chain.start)
    for op, operand in chain.steps:
        expression = f"({expression} {op} {operand})"
    inner = expression[1:-1] if expression.startswith("(") else expression
    parts, value = [], chain.start
    for op, operand in chain.steps:
        result = apply(value, op, operand)
        parts.append(f"{value} {op} {operand} = {result}")
        value = result
    return f"The expression is {inner}. Working inside out: {'; '.join(parts)}.\nANSWER: {value}"


def repair_a(chain: Chain, trace: str) -> str:
    """Minimal repair of a style-A trace: recompute each step line in place, keep the rest.

    Lines that are not step lines are kept as written; missing steps are appended; the ANSWER
    line is corrected. A trace with no step line at all comes back as a fresh style-A solution.
    """
    lines = trace.strip().splitlines()
    out: list[str] = []
    step, value = 0, chain.start
    for line in lines:
        if line.startswith("ANSWER:"):
            continue
        if _LINE.match(line.strip()) and step < len(chain.steps):
            op, operand = chain.steps[step]
            result = apply(value, op, operand)
            out.append(f"{value}{op}{operand}={result}")
            value, step = result, step + 1
        elif not _LINE.match(line.strip()):
            out.append(line)
    if step == 0:
        return style_a(chain)
    for op, operand in chain.steps[step:]:
        result = apply(value, op, operand)
        out.append(f"{value}{op}{operand}={result}")
        value = result
    return "\n".join([*out, f"ANSWER: {value}"])


def _unit(*parts: object) -> float:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@policy("toy_math_student", args={"error_rate": float, "seed": int})
def toy_math_student(state: PolicyInput) -> PolicyReply:
    """Style-A solutions with seeded slips (one step off by 1-3) at rate `error_rate`."""
    chain = parse_question(state.last_user_text)
    if chain is None:
        return PolicyReply(text="ANSWER: 0")
    rate = float(state.args.get("error_rate", 0.5))
    keys = (state.args.get("seed", 0), state.config.seed, state.last_user_text)
    slip = None
    if _unit("slip", *keys) < rate:
        step = int(_unit("step", *keys) * len(chain.steps))
        slip = (step, 1 + int(_unit("offset", *keys) * 3))
    return PolicyReply(text=style_a(chain, slip))


@policy("toy_math_teacher")
def toy_math_teacher(state: PolicyInput) -> PolicyReply:
    """The `teacher` role of toy_math_sar: REPAIR in place, REWRITE in style B, SOLVE in C."""
    text = state.last_user_text
    chain = parse_question(text)
    if chain is None:
        return PolicyReply(text="I cannot find the problem.")
    trace = _TRACE.search(text)
    if text.startswith("Repair") and trace:
        return PolicyReply(text=repair_a(chain, trace.group(1)))
    if text.startswith("Rewrite"):
        return PolicyReply(text=style_b(chain))
    return PolicyReply(text=style_c(chain))


def answer_only(chain: Chain, trace: str) -> str:
    """The trace with its `ANSWER:` line set to the right result and nothing else changed.

    Args:
        chain: The problem.
        trace: The student's trace.

    Returns:
        The trace's lines with every `ANSWER:` line dropped, then `ANSWER: <result>`.
    """
    kept = [line for line in trace.strip().splitlines() if not line.startswith("ANSWER:")]
    return "\n".join([*kept, f"ANSWER: {chain.answer}"])


@policy("toy_math_answer_only_teacher")
def toy_math_answer_only_teacher(state: PolicyInput) -> PolicyReply:
    """An attacking `teacher`: a `Repair` changes only the ANSWER line; otherwise as the teacher."""
    text = state.last_user_text
    chain, trace = parse_question(text), _TRACE.search(text)
    if text.startswith("Repair") and chain is not None and trace:
        return PolicyReply(text=answer_only(chain, trace.group(1)))
    return toy_math_teacher(state)


@policy("toy_math_constant")
def toy_math_constant(state: PolicyInput) -> PolicyReply:
    """Always `ANSWER: 0`, whatever the problem (the no-reasoning baseline)."""
    return PolicyReply(text="ANSWER: 0")
