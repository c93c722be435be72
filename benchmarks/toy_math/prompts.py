"""The teacher's SAR prompts (minimal repair, free rewrite, synthesis)."""

from __future__ import annotations

from docket.methods.distill.style_refine import REPAIR_INSTRUCTION

REPAIR = (
    REPAIR_INSTRUCTION
    + """

Problem: {question}
Solution:
{trace}
End of solution
Reply with the repaired solution only, ending with the line ANSWER: <number>."""
)

REWRITE = """Rewrite this solution so that it is correct and clearly explained, in your own words.

Problem: {question}
Solution:
{trace}
End of solution
Reply with the solution only, ending with the line ANSWER: <number>."""

SOLVE = """Solve this problem step by step.

Problem: {question}
End with the line ANSWER: <number>."""
